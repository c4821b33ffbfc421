# mk/torch.mk - the PyTorch pluggable allocator (included by the top-level
# Makefile). Building needs the CUDA headers and libcudart and the Python
# headers; running needs PyTorch 2.0+ with CUDA and an NVIDIA GPU.
#
#   make torch-alloc   build $(BUILD)/torch_allocator/libmemobs_torch_alloc.so
#                      from examples/torch_allocator/memobs_torch_alloc.c
#   make torch-demo    build it and run examples/torch_allocator/run_model.py:
#                      a small model with every PyTorch CUDA allocation
#                      tracked and tagged with its Python stack
#   TORCH_PYTHON=python3.12 make torch-demo   another interpreter
#
# The library is not linked with libpython: the Python process that loads
# it provides those symbols. Without a GPU, tests/test_torch_alloc.sh builds
# it against the CUDA runtime double and drives it from Python. Variables
# of our own start TORCH_.

TORCH_MK := $(lastword $(MAKEFILE_LIST))
BUILD ?= build
CUDA_HOME ?= /usr/local/cuda
TORCH_PYTHON ?= python3
TORCH_INCLUDES := $(shell $(TORCH_PYTHON)-config --includes 2>/dev/null)
TORCH_OUT := $(BUILD)/torch_allocator
TORCH_SO := $(TORCH_OUT)/libmemobs_torch_alloc.so
TORCH_SRC := examples/torch_allocator/memobs_torch_alloc.c

.PHONY: torch-alloc torch-demo

torch-alloc: $(TORCH_SO)

$(TORCH_SO): $(TORCH_SRC) memobs.h memobs_cuda.h memobs_python.h $(TORCH_MK)
	$(if $(TORCH_INCLUDES),,$(error $(TORCH_PYTHON)-config not found: install the Python headers or set TORCH_PYTHON))
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g -fPIC -shared $(WARN) -I. -I$(CUDA_HOME)/include $(TORCH_INCLUDES) $< -o $@ \
	    -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -pthread

torch-demo: $(TORCH_SO)
	$(TORCH_PYTHON) examples/torch_allocator/run_model.py $(TORCH_SO)
