# mk/gpu.mk - tests and benches on a real GPU (included by the top-level
# Makefile; they need a CUDA device to run, only nvcc to build).
#
#   make gpu-test    build $(BUILD)/gpu/test_gpu (tests/gpu/test_gpu.cu, with
#                    tests/gpu/test_gpu_ptds.cu built --default-stream
#                    per-thread, linked with the driver, -lcuda) and run
#                    it: ok/not ok lines, "N passed, N failed"; exits 1 on
#                    a failure or when there is no CUDA device (where the
#                    driver itself, libcuda.so.1, is missing, it does not
#                    start: the loader refuses it); then gpu-nccl-test
#   make gpu-nccl-test
#                    the NCCL profiler plugin in the real NCCL:
#                    tests/gpu/test_gpu_nccl.sh builds `make nccl-plugin`
#                    and $(BUILD)/gpu/nccl_gpu (tests/gpu/nccl_gpu.cu:
#                    memobs built in, memobs_host_api exported, NCCL
#                    opened with dlopen: NCCL_LIB, else the toolkit's, a
#                    Python environment's nvidia-nccl wheel, the loader's
#                    cache), runs a 1-rank communicator and 2 ranks on the
#                    one GPU (two processes, two NCCL_HOSTID "nodes") at the
#                    proxy, coll and api levels and checks memobs' figures:
#                    ok/not ok lines, "N passed, N failed"; exits 1 on a
#                    failure or without a CUDA device or NCCL; each 2-rank
#                    run also replays a CUDA graph holding one broadcast.
#                    About 20 s
#   make gpu-torch-nccl-test
#                    PyTorch's NCCL with the plugin and the memobs Python
#                    package (instance "python"): tests/gpu/
#                    test_gpu_torch_nccl.sh builds `make nccl-plugin
#                    python-module` for TORCH_PYTHON (default python3) and
#                    runs tests/gpu/torch_nccl.py: 2 ranks of a
#                    torch.distributed group on the one GPU, all-reduces in
#                    the prefill phase, checked in memobs.coll_get_stats()
#   make gpu-bench   build $(BUILD)/gpu/gpu_bench (bench/gpu_bench.cu) and
#                    run it: wrapper overhead and bandwidth tables
#   make gpu-bench-preload
#                    make bench-preload on the GPU: builds `make preload`
#                    and bench/bench_preload.c against the real shared
#                    libcudart ($(BUILD)/gpu/preload/bench_preload) and the
#                    real libcuda.so.1 (bench_preload_driver, linked through
#                    the toolkit's stub), runs each without and with
#                    LD_PRELOAD in GPU_BENCH_PL_TURNS turns (default 8) of
#                    5 runs x GPU_BENCH_PL_CALLS 64-byte H2D copies from
#                    pinned memory (default 10000), and prints plain,
#                    preloaded and added ns per call (best, median) with the
#                    added % of the plain call, and the real driver's
#                    capture-status query (cuStreamGetCaptureInfo_v2, what
#                    memobs asks before an async copy into a created
#                    stream) timed alone. About a minute
#   make cuda-demo   build $(BUILD)/gpu/cuda_offload (examples/cuda_offload.cu)
#                    and run it: the offload engine on the GPU
#   make gpu-preload-test
#                    the LD_PRELOAD library on the GPU: tests/gpu/
#                    test_gpu_preload.sh builds `make preload` and
#                    $(BUILD)/gpu/preload_gpu (tests/gpu/preload_gpu.cu, a
#                    program that knows nothing of memobs, linked with
#                    libcudart.so and libcuda.so.1), runs it without and
#                    with LD_PRELOAD and checks the JSON summary: ok/not ok
#                    lines, "N passed, N failed"; exits 1 on a failure or
#                    when there is no CUDA device
#   make gpu-build   build all five programs and gpu-bench-preload's two,
#                    run nothing (no GPU needed: tests/cuda/test_gpu_build.sh)
#
# GPU_ARCH: the code generated; default SASS for sm_90 (H100) plus PTX for
# sm_75 that the driver compiles for any other GPU. Variables of our own
# start GPU_.

GPU_MK := $(lastword $(MAKEFILE_LIST))
NVCC ?= /usr/local/cuda/bin/nvcc
BUILD ?= build
GPU_OUT := $(BUILD)/gpu
GPU_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
GPU_NVCCFLAGS ?= -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
GPU_COMPILE = $(NVCC) $(GPU_NVCCFLAGS) $(GPU_ARCH) -I.
# libcudart.so (-lcudart), not nvcc's default static one
GPU_LIBS := -cudart shared -lpthread
# The driver API (libcuda.so.1), for test_gpu's checks of primary contexts:
# linked against the toolkit's stub where no driver is installed (a build
# machine); the real libcuda.so.1 is loaded at run time.
GPU_NVCC_PATH := $(shell command -v $(NVCC) 2>/dev/null)
GPU_CUDA_HOME ?= $(if $(GPU_NVCC_PATH),$(abspath $(dir $(GPU_NVCC_PATH))..),/usr/local/cuda)
GPU_DRV_LIBS ?= -L$(GPU_CUDA_HOME)/lib64/stubs -lcuda

.PHONY: gpu-test gpu-bench gpu-bench-preload gpu-build cuda-demo gpu-preload-test gpu-nccl-test gpu-torch-nccl-test

gpu-build: $(GPU_OUT)/test_gpu $(GPU_OUT)/gpu_bench $(GPU_OUT)/cuda_offload $(GPU_OUT)/preload_gpu \
           $(GPU_OUT)/nccl_gpu $(GPU_OUT)/preload/bench_preload $(GPU_OUT)/preload/bench_preload_driver

cuda-demo: $(GPU_OUT)/cuda_offload
	./$(GPU_OUT)/cuda_offload

gpu-test: $(GPU_OUT)/test_gpu
	./$(GPU_OUT)/test_gpu
	$(MAKE) --no-print-directory BUILD=$(BUILD) NVCC=$(NVCC) gpu-nccl-test

gpu-bench: $(GPU_OUT)/gpu_bench
	./$(GPU_OUT)/gpu_bench

GPU_BENCH_PL_TURNS ?= 8
GPU_BENCH_PL_CALLS ?= 10000
gpu-bench-preload: $(GPU_OUT)/preload/bench_preload $(GPU_OUT)/preload/bench_preload_driver $(BUILD)/libmemobs_preload.so
	@echo "== the LD_PRELOAD library (make preload) per 64-byte H2D copy from pinned memory, on the GPU =="
	@BENCH_PL_CALLS=$(GPU_BENCH_PL_CALLS) BENCH_PL_PINNED=1 \
	    sh bench/bench_preload.sh $(GPU_OUT)/preload $(BUILD)/libmemobs_preload.so $(GPU_BENCH_PL_TURNS) gpu

gpu-preload-test:
	BUILD=$(BUILD) NVCC=$(NVCC) bash tests/gpu/test_gpu_preload.sh

gpu-nccl-test:
	BUILD=$(BUILD) NVCC=$(NVCC) bash tests/gpu/test_gpu_nccl.sh

gpu-torch-nccl-test:
	BUILD=$(BUILD) bash tests/gpu/test_gpu_torch_nccl.sh

# A second unit where stream 0 is the per-thread default stream.
$(GPU_OUT)/test_gpu_ptds.o: tests/gpu/test_gpu_ptds.cu memobs.h memobs_cuda.h $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) --default-stream per-thread -c $< -o $@

$(GPU_OUT)/test_gpu: tests/gpu/test_gpu.cu $(GPU_OUT)/test_gpu_ptds.o tests/check.h memobs.h memobs_cuda.h $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) $< $(GPU_OUT)/test_gpu_ptds.o -o $@ $(GPU_LIBS) $(GPU_DRV_LIBS)

$(GPU_OUT)/gpu_bench: bench/gpu_bench.cu memobs.h memobs_cuda.h $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) $< -o $@ $(GPU_LIBS)

$(GPU_OUT)/cuda_offload: examples/cuda_offload.cu memobs.h memobs_cuda.h $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) $< -o $@ $(GPU_LIBS)

# Knows nothing of memobs (it is run under LD_PRELOAD): no memobs header.
# The driver's cuGetProcAddress and version are taken with dlsym (-ldl).
$(GPU_OUT)/preload_gpu: tests/gpu/preload_gpu.cu $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) $< -o $@ $(GPU_LIBS) -ldl $(GPU_DRV_LIBS)

# make gpu-bench-preload's programs: C, built with the host compiler (as make
# bench-preload builds them against the doubles), here against the real
# shared libcudart (-lcudart, found at run time through the RUNPATH) and the
# driver (the toolkit's stub at link time, the installed libcuda.so.1 at run
# time). Never memobs: the preload brings it.
GPU_PL_CC = $(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -isystem $(GPU_CUDA_HOME)/include
$(GPU_OUT)/preload/bench_preload: bench/bench_preload.c $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_PL_CC) $< -o $@ -L$(GPU_CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(GPU_CUDA_HOME)/lib64 -ldl

$(GPU_OUT)/preload/bench_preload_driver: bench/bench_preload.c $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_PL_CC) -DBENCH_PL_DRIVER $< -o $@ $(GPU_DRV_LIBS) -ldl

# NCCL is opened with dlopen at run time (never linked: it often lives only
# in a Python environment's nvidia-nccl wheel); nccl.h, the toolkit's, only
# declares it. memobs_host_api exported so the profiler plugin records into
# this program's memobs. The runtime linked statically (as NCCL links its
# own): built here, it runs where only the driver is installed.
$(GPU_OUT)/nccl_gpu: tests/gpu/nccl_gpu.cu memobs.h $(GPU_MK)
	@mkdir -p $(@D)
	$(GPU_COMPILE) -isystem $(GPU_CUDA_HOME)/include $< -o $@ -cudart static -lpthread -ldl -lrt \
	    -Xlinker --export-dynamic-symbol=memobs_host_api
