# make preload: build/libmemobs_preload.so (preload/memobs_preload.c),
# memobs with no code change:
#   preload/memobs-run program            (or, by hand:)
#   LD_PRELOAD=build/libmemobs_preload.so MEMOBS_SUMMARY=stderr program
# make install puts it in $(PREFIX)/lib and the launcher, preload/memobs-run,
# in $(PREFIX)/bin (mk/install.mk).
# Built against the CUDA Toolkit's headers (CUDA_INC); links no libcudart
# (-z defs proves every symbol it needs is in libc). Initial-exec TLS: the
# library is loaded at start-up (LD_PRELOAD), never dlopen'ed. -Bsymbolic:
# its own calls bind inside it, never to a program's copy of memobs.
CUDA_INC ?= /usr/local/cuda/include
.PHONY: preload
preload: $(BUILD)/libmemobs_preload.so

$(BUILD)/libmemobs_preload.so: preload/memobs_preload.c preload/memobs_preload_runtime.inc memobs.h memobs_cuda.h preload/memobs_preload.map | $(BUILD)
	$(CC) -std=gnu11 $(CFLAGS) $(WARN) -fPIC -shared -ftls-model=initial-exec -DMEMOBS_TLS_INITIAL_EXEC -I. -I$(CUDA_INC) $< -o $@ \
	    -Wl,--version-script=preload/memobs_preload.map -Wl,-z,defs -Wl,-Bsymbolic -pthread -ldl -lm
