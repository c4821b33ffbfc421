# mk/bench.mk - `make bench` (included by the top-level Makefile).
#
#   make bench        build everything below, then run it (about 15 s)
#   make bench-build  build only
#   make bench-asm    disassemble the timed loops (check nothing was hoisted)
#   BENCH_ITERS=2000000 BENCH_REPS=3 make bench   a quicker, noisier run
#
# Builds, under $(BUILD)/bench/:
#   memobs_bench                 bench/bench.c (the implementation, -O2),
#                                bench/bench_disabled.c (-DMEMOBS_DISABLE) and
#                                bench/bench_track.c (the allocation tracker's
#                                figures: alloc+free pairs beside malloc+free,
#                                with a tag, with a depth-16 C stack from
#                                backtrace() and from frame pointers, disabled;
#                                1 and 2 threads; built -fno-omit-frame-pointer,
#                                so its chain of callers can be walked by frame
#                                pointers, as in a program built for
#                                MEMOBS_UNWIND=fp); not -rdynamic, so the .so's
#                                keep their own memobs; RUNPATH $ORIGIN, so
#                                its dlopen() finds:
#   memobs_cuda_bench            bench/bench_cuda.c: memobs_cuda.h's wrappers
#                                on the host against a stub runtime and
#                                driver (CUDA headers, no GPU), beside the
#                                raw calls, and driver calls per call
#   libmemobs_bench_default.so   bench/bench_so.c, -fPIC -shared
#   libmemobs_bench_gnu2.so      the same with TLS descriptors
#   libmemobs_bench_ie.so        the same with -DMEMOBS_TLS_INITIAL_EXEC
# The bench prints its targets as PASS/MISS and exits 0 either way.
#
# Flags are BENCH_CFLAGS, not CFLAGS: a debug or sanitizer CFLAGS for the
# tests must not change the figures. Variables of our own start BENCH_.

BENCH_MK := $(lastword $(MAKEFILE_LIST))
BUILD ?= build
BENCH_OUT := $(BUILD)/bench
BENCH_CFLAGS ?= -O2 -g
BENCH_WARN ?= -Wall -Wextra -Werror
BENCH_COMPILE = $(CC) $(BENCH_CFLAGS) $(BENCH_WARN) -I. -pthread

# TLS descriptors: -mtls-dialect=gnu2 (x86). A compiler that rejects the
# flag (clang before 19, non-x86 gcc) builds that variant without it, and
# the table says so.
BENCH_TLS_DESC := $(shell $(CC) -mtls-dialect=gnu2 -fPIC -x c -c /dev/null -o /dev/null 2>/dev/null && echo -mtls-dialect=gnu2)
BENCH_SO_FLAGS_default :=
BENCH_SO_FLAGS_gnu2 := $(BENCH_TLS_DESC)
BENCH_SO_FLAGS_ie := -DMEMOBS_TLS_INITIAL_EXEC
# What the table calls each variant (no quotes in these).
BENCH_SO_LABEL_default := default TLS model
BENCH_SO_LABEL_gnu2 := $(if $(BENCH_TLS_DESC),-mtls-dialect=gnu2,default (no gnu2 in $(notdir $(CC))))
BENCH_SO_LABEL_ie := MEMOBS_TLS_INITIAL_EXEC

BENCH_SOS := $(BENCH_OUT)/libmemobs_bench_default.so $(BENCH_OUT)/libmemobs_bench_gnu2.so \
             $(BENCH_OUT)/libmemobs_bench_ie.so

.PHONY: bench bench-build bench-asm

bench: bench-build
	$(BENCH_OUT)/memobs_bench
	$(BENCH_OUT)/memobs_cuda_bench
	$(MAKE) --no-print-directory bench-python bench-pymodule

bench-build: $(BENCH_OUT)/memobs_bench $(BENCH_SOS) $(BENCH_OUT)/memobs_cuda_bench

bench-asm: $(BENCH_OUT)/memobs_bench $(BENCH_SOS)
	@for f in $^; do \
	    echo "== $$f"; \
	    objdump -d --no-show-raw-insn $$f | awk '/^[0-9a-f]+ <(bench_loop_|bench_so_|bench_stack_pairs)/,/^$$/'; \
	done

$(BENCH_OUT)/bench.o: bench/bench.c bench/bench.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -DBENCH_CFLAGS_STR='"$(BENCH_CFLAGS)"' -c $< -o $@

$(BENCH_OUT)/bench_disabled.o: bench/bench_disabled.c bench/bench.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -DMEMOBS_DISABLE -c $< -o $@

$(BENCH_OUT)/bench_track.o: bench/bench_track.c bench/bench.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -fno-omit-frame-pointer -c $< -o $@

$(BENCH_OUT)/memobs_bench: $(BENCH_OUT)/bench.o $(BENCH_OUT)/bench_disabled.o $(BENCH_OUT)/bench_track.o
	$(BENCH_COMPILE) $^ -o $@ -Wl,-rpath,'$$ORIGIN' -ldl

# memobs_cuda.h's host cost against a stub runtime and driver (bench/bench_cuda.c):
# the CUDA Toolkit's headers, no libcudart, no GPU.
BENCH_CUDA_INC ?= /usr/local/cuda/include
$(BENCH_OUT)/memobs_cuda_bench: bench/bench_cuda.c memobs.h memobs_cuda.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -isystem $(BENCH_CUDA_INC) $< -o $@ -ldl -lm

# One compile per variant, so the -D reaches every translation unit of it.
$(BENCH_OUT)/libmemobs_bench_%.so: bench/bench_so.c memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -fPIC -shared $(BENCH_SO_FLAGS_$*) -DBENCH_SO_LABEL='"$(BENCH_SO_LABEL_$*)"' $< -o $@
