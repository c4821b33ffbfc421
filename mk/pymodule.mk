# mk/pymodule.mk - the Python extension module (included by the top-level Makefile).
#
#   make python-module    build $(BUILD)/python/memobs<suffix>.so from
#                         examples/python/memobs_module.c; then
#                         PYTHONPATH=$(BUILD)/python python3 -c "import memobs"
#   make bench-pymodule   build it, then run bench/py_record_bench.py: a record
#                         from Python beside nano-vllm's class-variable observer
#   PYMOD_PYTHON=python3.12 make python-module   for another interpreter
#
# An extension is not linked with libpython (the interpreter that loads it
# provides the symbols): only the headers of python3-config --includes.
# Variables of our own start PYMOD_.

PYMOD_MK := $(lastword $(MAKEFILE_LIST))
BUILD ?= build
PYMOD_PYTHON ?= python3
PYMOD_CONFIG ?= $(PYMOD_PYTHON)-config
PYMOD_INCLUDES := $(shell $(PYMOD_CONFIG) --includes 2>/dev/null)
PYMOD_EXT_SUFFIX := $(shell $(PYMOD_CONFIG) --extension-suffix 2>/dev/null)
PYMOD_OUT := $(BUILD)/python
PYMOD_SO := $(PYMOD_OUT)/memobs$(PYMOD_EXT_SUFFIX)
PYMOD_SRC := examples/python/memobs_module.c

.PHONY: python-module bench-pymodule

python-module: $(PYMOD_SO)

$(PYMOD_SO): $(PYMOD_SRC) memobs.h memobs_python.h $(PYMOD_MK)
	$(if $(PYMOD_EXT_SUFFIX),,$(error $(PYMOD_CONFIG) not found: install the Python headers or set PYMOD_PYTHON))
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g -fPIC -shared $(WARN) -I. $(PYMOD_INCLUDES) $< -o $@

bench-pymodule: $(PYMOD_SO)
	PYTHONPATH=$(PYMOD_OUT) $(PYMOD_PYTHON) bench/py_record_bench.py
