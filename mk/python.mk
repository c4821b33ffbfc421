# mk/python.mk - memobs_python.h's bench (included by the top-level
# Makefile; `make bench` runs it after the core benches).
#
#   make bench-python   build $(BUILD)/bench/memobs_py_bench (bench/bench_python.c,
#                       an embedded CPython) and run it: a Python stack
#                       capture at depth 20 beside traceback.extract_stack
#                       called from C and formatted (the seed's way), and
#                       tracked pairs with and without the Python tag
#
# Needs python3-config (python3-dev). Variables of our own start PYBENCH_.

PYBENCH_MK := $(lastword $(MAKEFILE_LIST))
BUILD ?= build
PYBENCH_OUT := $(BUILD)/bench
PYBENCH_CFLAGS ?= -O2 -g
PYBENCH_INC = $(shell python3-config --includes)
PYBENCH_LIBS = $(shell python3-config --ldflags --embed) -pthread

.PHONY: bench-python

bench-python: $(PYBENCH_OUT)/memobs_py_bench
	$(PYBENCH_OUT)/memobs_py_bench

$(PYBENCH_OUT)/memobs_py_bench: bench/bench_python.c memobs.h memobs_python.h $(PYBENCH_MK)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(PYBENCH_CFLAGS) -Wall -Wextra -Werror -I. $(PYBENCH_INC) $< -o $@ $(PYBENCH_LIBS)

# `make bench-build` (checked by make test) builds it too.
bench-build: $(PYBENCH_OUT)/memobs_py_bench
