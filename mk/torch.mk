# mk/torch.mk - memobs.torch's demo (included by the top-level Makefile).
# The allocator itself is part of the Python package (python/memobs/
# _torch_alloc.c, inside the extension memobs._memobs, built by
# `make python-module` or pip when the CUDA headers are found); running it
# needs PyTorch 2.0+ with CUDA and an NVIDIA GPU.
#
#   make torch-alloc   the package with the allocator ($(BUILD)/python/memobs)
#   make torch-demo    build it and run examples/torch_allocator/run_model.py:
#                      a small model with every PyTorch CUDA allocation
#                      tracked and tagged with its Python stack
#   TORCH_PYTHON=python3.12 make torch-demo   another interpreter
#
# Without a GPU, tests/python/test_torch_alloc.sh drives the allocator against the
# CUDA runtime double. Variables of our own start TORCH_.

TORCH_PYTHON ?= $(PYMOD_PYTHON)

.PHONY: torch-alloc torch-demo

torch-alloc: python-module
	$(if $(PYMOD_CUDA),,$(error no $(CUDA_HOME)/include/cuda_runtime_api.h: the package is built without the allocator; set CUDA_HOME))

torch-demo: torch-alloc
	PYTHONPATH=$(PYMOD_OUT) $(TORCH_PYTHON) examples/torch_allocator/run_model.py
