# make nccl-plugin: build/libnccl-profiler-memobs.so (nccl/memobs_nccl_plugin.c),
# memobs as an NCCL profiler plugin:
#   NCCL_PROFILER_PLUGIN=memobs program      (NCCL 2.26+, the file on the
#                                              library path; older NCCL: a path)
# It exports only ncclProfiler_v1 ... v6 (nccl/memobs_nccl.map) and carries
# its own hidden memobs, used when the process has none to attach to
# (docs/collectives.md). No CUDA or NCCL header is needed: nccl/profiler_api.h
# declares the interface. -z defs proves it needs only libc, libpthread, libdl
# and libm. make install puts it in $(PREFIX)/lib (mk/install.mk).
.PHONY: nccl-plugin
nccl-plugin: $(BUILD)/libnccl-profiler-memobs.so

$(BUILD)/libnccl-profiler-memobs.so: nccl/memobs_nccl_plugin.c nccl/profiler_api.h nccl/memobs_nccl.map memobs.h \
    | $(BUILD)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden -I. $< -o $@ \
	    -Wl,--version-script=nccl/memobs_nccl.map -Wl,-z,defs -pthread -ldl -lm
