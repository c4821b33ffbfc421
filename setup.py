"""Builds the package memobs: python/memobs/ and its C extension
memobs._memobs from python/memobs/_memobs.c with the headers at the root
(memobs.h, memobs_python.h), C99, -O2, and memobs._memobs_attached from the
same source with MEMOBS_PY_ATTACH (no memobs of its own: the LD_PRELOAD
library's, when the package finds it in the process). The version is memobs.h's
MEMOBS_VERSION. With the CUDA Toolkit's headers (see cuda_toolkit()) the
extension also holds memobs.torch's allocator (memobs_cuda.h and
python/memobs/_torch_alloc.c). MEMOBS_WERROR=1 in the environment adds
-Werror (the tests build so); an install leaves it out, so a newer
compiler's new warning does not stop one. See pyproject.toml; install with
    pip install --no-build-isolation ."""
import os
import re
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def memobs_version():
    with open(os.path.join(HERE, "memobs.h"), encoding="utf-8") as f:
        m = re.search(r'^#define MEMOBS_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("memobs.h: no #define MEMOBS_VERSION \"N.N.N\"")
    return m.group(1)


def cuda_toolkit():
    """The CUDA Toolkit whose headers memobs.torch's allocator is built with
    (python/memobs/_torch_alloc.c, inside the extension; only the headers:
    the runtime is found when memobs.torch.use_allocator() runs):
    MEMOBS_CUDA_HOME (a directory, or "none" to build without), else
    CUDA_HOME, CUDA_PATH, /usr/local/cuda. Returns (include dir, lib dir)
    or None."""
    given = os.environ.get("MEMOBS_CUDA_HOME")
    if given and given.lower() in ("none", "0", "off", "no"):
        print("memobs: MEMOBS_CUDA_HOME=%s: building without memobs.torch's allocator" % given, file=sys.stderr)
        return None
    home = given or os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    inc = os.path.join(home, "include")
    if not os.path.isfile(os.path.join(inc, "cuda_runtime_api.h")):
        if given:
            raise SystemExit("memobs: MEMOBS_CUDA_HOME=%s has no include/cuda_runtime_api.h (\"none\" builds "
                             "without the allocator)" % given)
        print("memobs: no CUDA Toolkit at %s (no include/cuda_runtime_api.h): building without memobs.torch's "
              "allocator (set CUDA_HOME or MEMOBS_CUDA_HOME)" % home, file=sys.stderr)
        return None
    lib = os.path.join(home, "lib64")
    if not os.path.isdir(lib):
        lib = os.path.join(home, "lib")
    print("memobs: memobs.torch's allocator is built with the CUDA headers of %s" % home, file=sys.stderr)
    return inc, lib


flags = ["-std=c99", "-O2", "-Wall", "-Wextra"]
if os.environ.get("MEMOBS_WERROR") == "1":
    flags.append("-Werror")

include_dirs, macros = ["."], []
cuda = cuda_toolkit()
if cuda:
    include_dirs.append(cuda[0])
    macros += [("MEMOBS_PY_CUDA", "1"), ("MEMOBS_PY_CUDA_LIB", '"%s"' % cuda[1].replace("\\", "/"))]

setup(
    version=memobs_version(),
    packages=["memobs"],
    package_dir={"": "python"},
    package_data={"memobs": ["py.typed", "__init__.pyi"]},
    ext_modules=[
        Extension(
            "memobs._memobs",
            sources=["python/memobs/_memobs.c"],
            include_dirs=include_dirs,
            define_macros=macros,
            depends=["memobs.h", "memobs_python.h", "memobs_cuda.h", "python/memobs/_torch_alloc.c"],
            extra_compile_args=flags,
        ),
        # the same source with no memobs of its own: memobs' symbols bound to
        # the LD_PRELOAD library's when that library is in the process (see
        # python/memobs/__init__.py); only PyInit exported
        Extension(
            "memobs._memobs_attached",
            sources=["python/memobs/_memobs.c"],
            include_dirs=["."],
            define_macros=[("MEMOBS_PY_ATTACH", "1")],
            depends=["memobs.h", "memobs_python.h"],
            extra_compile_args=flags + ["-fvisibility=hidden"],
        ),
    ],
    include_package_data=False,  # only package_data: not _memobs.c (MANIFEST.in puts it in the sdist)
    zip_safe=False,
)
