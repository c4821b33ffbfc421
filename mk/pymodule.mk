# mk/pymodule.mk - the Python extension module (included by the top-level Makefile).
#
#   make python-module    build the package memobs in $(BUILD)/python/memobs/:
#                         python/memobs/*.py, *.pyi, py.typed, and the extension
#                         _memobs<suffix>.so from python/memobs/_memobs.c (with
#                         memobs.torch's allocator when $(CUDA_HOME)/include has
#                         cuda_runtime_api.h; CUDA_HOME=none: without) and
#                         _memobs_attached<suffix>.so (the same source for the
#                         LD_PRELOAD library's memobs: MEMOBS_PY_ATTACH); then
#                         PYTHONPATH=$(BUILD)/python python3 -c "import memobs"
#                         (to install it instead: pip install --no-build-isolation .)
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
PYMOD_PKG := $(PYMOD_OUT)/memobs
PYMOD_SO := $(PYMOD_PKG)/_memobs$(PYMOD_EXT_SUFFIX)
PYMOD_ATTACHED_SO := $(PYMOD_PKG)/_memobs_attached$(PYMOD_EXT_SUFFIX)
PYMOD_SRC := python/memobs/_memobs.c
PYMOD_FILES := $(addprefix $(PYMOD_PKG)/,__init__.py __init__.pyi py.typed nanovllm.py torch.py prometheus.py)
CUDA_HOME ?= /usr/local/cuda
# the allocator needs only the CUDA headers (the runtime is bound at use_allocator())
PYMOD_CUDA := $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),-DMEMOBS_PY_CUDA \
    -DMEMOBS_PY_CUDA_LIB='"$(CUDA_HOME)/lib64"' -I$(CUDA_HOME)/include)

.PHONY: python-module bench-pymodule

python-module: $(PYMOD_SO) $(PYMOD_ATTACHED_SO) $(PYMOD_FILES)

# the module of the layout before the package (build/python/memobs<suffix>.so)
# is removed: a package directory wins over it, but it would mislead a reader
$(PYMOD_SO): $(PYMOD_SRC) python/memobs/_torch_alloc.c memobs.h memobs_python.h memobs_cuda.h $(PYMOD_MK)
	$(if $(PYMOD_EXT_SUFFIX),,$(error $(PYMOD_CONFIG) not found: install the Python headers or set PYMOD_PYTHON))
	@mkdir -p $(@D)
	@rm -f $(PYMOD_OUT)/memobs$(PYMOD_EXT_SUFFIX)
	$(CC) -std=c99 -O2 -g -fPIC -shared $(WARN) -I. $(PYMOD_INCLUDES) $(PYMOD_CUDA) $< -o $@

# the same source with no memobs of its own (MEMOBS_PY_ATTACH): its memobs
# symbols stay undefined, bound at import to the LD_PRELOAD library's
# (python/memobs/__init__.py chooses it when that library is in the
# process); no allocator; only PyInit exported
$(PYMOD_ATTACHED_SO): $(PYMOD_SRC) memobs.h memobs_python.h $(PYMOD_MK)
	$(if $(PYMOD_EXT_SUFFIX),,$(error $(PYMOD_CONFIG) not found: install the Python headers or set PYMOD_PYTHON))
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g -fPIC -shared -fvisibility=hidden $(WARN) -I. $(PYMOD_INCLUDES) -DMEMOBS_PY_ATTACH $< -o $@

$(PYMOD_PKG)/%: python/memobs/%
	@mkdir -p $(@D)
	cp $< $@

bench-pymodule: python-module
	PYTHONPATH=$(PYMOD_OUT) $(PYMOD_PYTHON) bench/py_record_bench.py
