"""tests/preload/test_preload.sh: a Python program under LD_PRELOAD=libmemobs_preload.so.

preload_check.py DIR: DIR holds libuser.so (tests/preload/user.c, linked
with -lcudart) and the runtime double as libcudart.so.13. Sets the phase
through memobs' API in the preloaded library (found in the process's
global scope), calls user_h2d(4096) in decode and 1000 in prefill, then a
cudaMemcpy looked up on the runtime's own handle (ctypes.CDLL(path).name,
which is dlsym on that handle: the runtime's function, not the
interposer's; 7 bytes, never recorded). The caller checks the summary."""
import ctypes
import os
import sys

d = sys.argv[1]
user = ctypes.CDLL(os.path.join(d, "libuser.so"))
user.user_h2d.argtypes = [ctypes.c_size_t]
memobs = ctypes.CDLL(None)  # the global scope: the preloaded library first
try:
    set_phase = memobs.memobs_set_phase
except AttributeError:
    sys.exit("memobs_set_phase is not in the process: not preloaded?")
set_phase.argtypes = [ctypes.c_int]
if set_phase(2) != 0 or user.user_h2d(4096) != 0:  # MEMOBS_PHASE_DECODE
    sys.exit("decode: user_h2d(4096) failed")
if set_phase(1) != 0 or user.user_h2d(1000) != 0:  # MEMOBS_PHASE_PREFILL
    sys.exit("prefill: user_h2d(1000) failed")
rt = ctypes.CDLL(os.path.join(d, "libcudart.so.13"))
dev = ctypes.c_void_p()
host = ctypes.create_string_buffer(16)
if rt.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(16)) != 0:
    sys.exit("cudaMalloc on the runtime's handle failed")
if rt.cudaMemcpy(dev, host, ctypes.c_size_t(7), 1) != 0:  # cudaMemcpyHostToDevice
    sys.exit("cudaMemcpy on the runtime's handle failed")
print("ok")
