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
#   preload/bench_preload        bench/bench_preload.c (make bench-preload):
#                                a copy's cost without and with the
#                                LD_PRELOAD library, against the double as
#                                a shared libcudart.so.13
#   preload/bench_preload_driver the same source for the driver API
#                                (-DBENCH_PL_DRIVER), against the driver
#                                double as libcuda.so.1
#   memobs_cuda_bench            bench/bench_cuda.c: memobs_cuda.h's wrappers
#                                on the host against a stub runtime and
#                                driver (CUDA headers, no GPU), beside the
#                                raw calls, and driver calls per call
#   libmemobs_bench_default.so   bench/bench_so.c, -fPIC -shared
#   libmemobs_bench_gnu2.so      the same with TLS descriptors
#   libmemobs_bench_ie.so        the same with -DMEMOBS_TLS_INITIAL_EXEC
#   stops_bench                  bench/bench_stops.c (make bench-stops): the
#                                stop handling's cost (issue 25): a record
#                                with the signal handling on and off, the
#                                write at exit per output, a stop by SIGTERM
#   bench_tl_pool                bench/bench_tl_pool.c (make bench-tl-pool):
#                                the timeline's pool modelled without
#                                memobs, four ways of taking the next chunk
#   bench_nccl                   bench/bench_nccl.c (make bench-nccl): the
#                                NCCL profiler plugin (make nccl-plugin) per
#                                collective at MEMOBS_NCCL=api, coll, proxy,
#                                beside an empty plugin and NCCL Inspector
#                                (BENCH_NCCL_INSPECTOR=path of its .so, built
#                                from NCCL's plugins/profiler/inspector, else
#                                "not built"); nccl_stubs/ holds what
#                                Inspector's init asks of CUDA
#                                (bench/bench_nccl_stubs.c), so it runs
#                                without a GPU
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
BENCH_NCCL_STUBS := $(BENCH_OUT)/nccl_stubs/libcudart.so.13 $(BENCH_OUT)/nccl_stubs/libcuda.so.1

.PHONY: bench bench-build bench-asm

bench: bench-build
	$(BENCH_OUT)/memobs_bench
	$(BENCH_OUT)/memobs_cuda_bench
	$(MAKE) --no-print-directory bench-sizes bench-python bench-pymodule bench-preload bench-stops bench-nccl

bench-build: $(BENCH_OUT)/memobs_bench $(BENCH_SOS) $(BENCH_OUT)/memobs_cuda_bench $(BENCH_OUT)/stops_bench \
             $(BENCH_OUT)/bench_nccl $(BENCH_NCCL_STUBS) $(BENCH_OUT)/bench_sizes

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

# The LD_PRELOAD library's cost per copy (bench/bench_preload.c) against the
# runtime double as a shared libcudart.so.13 and the driver double as
# libcuda.so.1: the same programs without and with LD_PRELOAD,
# BENCH_PL_TURNS turns (default 3) (the preloaded runs first in every other turn), the figures side by
# side, with the capture-status query timed alone (bench/bench_preload.sh).
BENCH_PL := $(BENCH_OUT)/preload
BENCH_PL_TURNS ?= 3
.PHONY: bench-preload
bench-preload: $(BENCH_PL)/bench_preload $(BENCH_PL)/bench_preload_driver $(BUILD)/libmemobs_preload.so
	@echo "== the LD_PRELOAD library (make preload) per 64-byte copy, against the doubles (no GPU) =="
	@sh bench/bench_preload.sh $(BENCH_PL) $(BUILD)/libmemobs_preload.so $(BENCH_PL_TURNS)

$(BENCH_PL)/libcudart.so.13: tests/cuda/cudart_double.c tests/cuda/cudart_double.h mk/cudart_double.map $(BENCH_MK)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -fPIC -shared $(BENCH_WARN) -I. -isystem $(BENCH_CUDA_INC) $< -o $@ \
	    -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread

$(BENCH_PL)/bench_preload: bench/bench_preload.c $(BENCH_PL)/libcudart.so.13 $(BENCH_MK)
	$(CC) -std=c11 -O2 -g $(BENCH_WARN) -isystem $(BENCH_CUDA_INC) $< -o $@ -L$(BENCH_PL) -l:libcudart.so.13 -ldl

$(BENCH_PL)/libcuda.so.1: tests/preload/driver_double.c $(BENCH_MK)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -fPIC -shared $(BENCH_WARN) -isystem $(BENCH_CUDA_INC) $< -o $@ \
	    -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -pthread

$(BENCH_PL)/bench_preload_driver: bench/bench_preload.c $(BENCH_PL)/libcuda.so.1 $(BENCH_MK)
	$(CC) -std=c11 -O2 -g -DBENCH_PL_DRIVER $(BENCH_WARN) -isystem $(BENCH_CUDA_INC) $< -o $@ -L$(BENCH_PL) -l:libcuda.so.1 -ldl

# The size distribution's cost (bench/bench_sizes.c): a record with it on
# vs the record before it (bench_sizes_off.c, MEMOBS__NO_XSIZE), side by
# side, 1 and 2 threads (about 10 s).
.PHONY: bench-sizes
bench-sizes: $(BENCH_OUT)/bench_sizes
	$(BENCH_OUT)/bench_sizes

$(BENCH_OUT)/bench_sizes: bench/bench_sizes.c bench/bench_sizes_off.c bench/bench.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) bench/bench_sizes.c bench/bench_sizes_off.c -o $@

# The timeline's pool modelled without memobs (bench/bench_tl_pool.c): the
# 2-thread cost of its shape (x86-64). Not part of `make bench` (about 10 s).
.PHONY: bench-tl-pool
bench-tl-pool: $(BENCH_OUT)/bench_tl_pool
	$(BENCH_OUT)/bench_tl_pool

$(BENCH_OUT)/bench_tl_pool: bench/bench_tl_pool.c $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) $< -o $@

# The stop handling's cost (bench/bench_stops.c): a record with the signal
# handling on and with MEMOBS_SIGNALS=0 (child processes of one run), each
# output's write at exit for 64K timeline events and 10,000 live
# allocations, and a stop by SIGTERM against a return from main.
.PHONY: bench-stops
bench-stops: $(BENCH_OUT)/stops_bench
	$(BENCH_OUT)/stops_bench

$(BENCH_OUT)/stops_bench: bench/bench_stops.c bench/bench.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) $< -o $@ -lm

# The NCCL profiler plugin's cost per collective (bench/bench_nccl.c): the
# events NCCL 2.28.9 plays for an all-reduce at each level, into the plugin
# and into an empty plugin, in child processes; NCCL Inspector beside them
# when BENCH_NCCL_INSPECTOR names its .so (e.g. `git -C NCCL archive HEAD
# plugins/profiler/inspector | tar -x -C /tmp`, make there). Its CUDA
# calls at init go to the stubs in $(BENCH_OUT)/nccl_stubs. About 5 s.
.PHONY: bench-nccl
bench-nccl: $(BENCH_OUT)/bench_nccl $(BENCH_NCCL_STUBS) nccl-plugin
	BENCH_NCCL_CUDA_STUBS=$(BENCH_OUT)/nccl_stubs $(BENCH_OUT)/bench_nccl $(BUILD)/libnccl-profiler-memobs.so

# memobs built in, memobs_host_api exported: the plugin records into it.
$(BENCH_OUT)/bench_nccl: bench/bench_nccl.c nccl/profiler_api.h memobs.h $(BENCH_MK)
	@mkdir -p $(@D)
	$(BENCH_COMPILE) -std=gnu11 $< -o $@ -ldl -lm -Wl,--export-dynamic-symbol=memobs_host_api

# Inspector links libcudart.so.13 by its version node; it dlopens libcuda.so.1.
$(BENCH_OUT)/nccl_stubs/libcudart.so.13: bench/bench_nccl_stubs.c $(BENCH_MK)
	@mkdir -p $(@D)
	printf 'libcudart.so.13 {\n global: cudaGetDevice; cudaGetErrorString;\n local: *;\n};\n' >$@.map
	$(CC) -O2 -fPIC -shared $(BENCH_WARN) -DBENCH_STUB_RUNTIME $< -o $@ -Wl,-soname,libcudart.so.13 \
	    -Wl,--version-script=$@.map

$(BENCH_OUT)/nccl_stubs/libcuda.so.1: bench/bench_nccl_stubs.c $(BENCH_MK)
	@mkdir -p $(@D)
	$(CC) -O2 -fPIC -shared $(BENCH_WARN) -DBENCH_STUB_DRIVER $< -o $@ -Wl,-soname,libcuda.so.1
