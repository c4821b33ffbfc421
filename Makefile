# memobs: header-only; this Makefile builds the demo, the tests and the benches.
#   make demo     run examples/offload_engine.c (no GPU needed): its summary first, then
#                 its requests; the peak report and the allocations by trace go to
#                 $(DEMO_REPORTS) (DEMO_REPORTS=stderr: on the terminal, after the rest)
#   make test     every test; ends with "N passed, N failed"
#   make bench    speed figures, side by side with baselines (C, then Python)
#   make size     object size and compile time with and without the exporters (MEMOBS_NO_*)
#   make install PREFIX=/usr/local   headers, memobs.pc, CMake package, the preload
#                 library (lib/libmemobs_preload.so), its launcher (bin/memobs-run) and the
#                 NCCL profiler plugin (lib/libnccl-profiler-memobs.so)
#   make uninstall PREFIX=/usr/local   what install put there
#   make cuda-demo / gpu-test / gpu-preload-test / gpu-bench / gpu-bench-preload   on a machine with an NVIDIA GPU
#   make python-module   the Python package memobs (build/python/memobs/; or pip install --no-build-isolation .)
#   make torch-alloc / torch-demo   the PyTorch CUDA allocator (a GPU to run)
#   make preload  build/libmemobs_preload.so: LD_PRELOAD it into any CUDA program (no code
#                 change); preload/memobs-run PROGRAM runs PROGRAM with it
#   make nccl-plugin  build/libnccl-profiler-memobs.so: NCCL's collectives and bytes
#                 per peer in memobs (NCCL_PROFILER_PLUGIN=memobs)
#   make examples the small examples: build/examples/hello (examples/hello.c), hello_cuda
#                 (nvcc), and the Python package and preload library that hello.py and
#                 hello_preload.sh use (the CUDA parts left out, with a line, without the
#                 CUDA Toolkit)
#   make clean    removes build/

CC ?= cc
CXX ?= c++
NVCC ?= /usr/local/cuda/bin/nvcc
PREFIX ?= /usr/local
BUILD := build
WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
export CC CXX NVCC

.PHONY: all demo test bench clean
all: $(BUILD)/offload_engine

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/offload_engine: examples/offload_engine.c memobs.h | $(BUILD)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. $< -o $@ -pthread -lm -rdynamic

DEMO_REPORTS ?= $(BUILD)/demo_reports.txt
demo: $(BUILD)/offload_engine
	@$(BUILD)/offload_engine --reports '$(DEMO_REPORTS)'

test:
	@bash tests/run.sh

clean:
	rm -rf $(BUILD)

include mk/install.mk
include mk/bench.mk
include mk/size.mk
include mk/gpu.mk
include mk/python.mk
include mk/pymodule.mk
include mk/torch.mk
include mk/preload.mk
include mk/nccl.mk
include mk/examples.mk
include mk/tests.mk
