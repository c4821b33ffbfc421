# make examples: the small programs of examples/, each showing one thing
# (included by the top-level Makefile):
#   $(BUILD)/examples/hello        examples/hello.c: phases, a region, TTFT/TPOT
#   $(BUILD)/examples/hello_cuda   examples/hello_cuda.cu with nvcc (memobs_cuda.h's
#                                  wrappers; left out, with a note, without nvcc)
#   the Python package (make python-module) for examples/hello.py, and the
#   LD_PRELOAD library (make preload) for examples/hello_preload.sh (left
#   out, with a note, without the CUDA Toolkit's headers: CUDA_INC)
# Run them: build/examples/hello; PYTHONPATH=build/python python3
# examples/hello.py; build/examples/hello_cuda (a GPU); examples/hello_preload.sh
# (the toolkit and a GPU). Without what it needs, each one says
# "skipped: needs ..." and exits 0.
# tests/docs/test_examples.sh builds and runs each one (hello_cuda against the
# CUDA runtime double) and checks its figures.
.PHONY: examples
CUDA_INC ?= /usr/local/cuda/include
examples: $(BUILD)/examples/hello python-module
	@if [ -f '$(CUDA_INC)/cuda_runtime_api.h' ]; then \
	    $(MAKE) --no-print-directory BUILD='$(BUILD)' CUDA_INC='$(CUDA_INC)' preload; \
	else echo 'make examples: no $(CUDA_INC)/cuda_runtime_api.h (set CUDA_INC): the preload library (hello_preload.sh) left out' >&2; fi
	@if [ -x '$(NVCC)' ] || command -v '$(NVCC)' >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory BUILD='$(BUILD)' '$(BUILD)/examples/hello_cuda'; \
	else echo 'make examples: no nvcc at $(NVCC) (set NVCC): hello_cuda left out' >&2; fi

$(BUILD)/examples:
	@mkdir -p $@

$(BUILD)/examples/hello: examples/hello.c memobs.h | $(BUILD)/examples
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. $< -o $@ -pthread

# The object apart: tests/docs/test_examples.sh links it with the runtime double.
$(BUILD)/examples/hello_cuda.o: examples/hello_cuda.cu memobs.h memobs_cuda.h | $(BUILD)/examples
	$(NVCC) -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I. -c $< -o $@

$(BUILD)/examples/hello_cuda: $(BUILD)/examples/hello_cuda.o
	$(NVCC) $< -o $@
