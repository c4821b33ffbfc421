"""Builds the package memobs: python/memobs/ and its C extension
memobs._memobs from python/memobs/_memobs.c with the headers at the root
(memobs.h, memobs_python.h), C99, -O2. The version is memobs.h's
MEMOBS_VERSION. MEMOBS_WERROR=1 in the environment adds -Werror (the tests
build so); an install leaves it out, so a newer compiler's new warning does
not stop one. See pyproject.toml; install with
    pip install --no-build-isolation ."""
import os
import re

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def memobs_version():
    with open(os.path.join(HERE, "memobs.h"), encoding="utf-8") as f:
        m = re.search(r'^#define MEMOBS_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("memobs.h: no #define MEMOBS_VERSION \"N.N.N\"")
    return m.group(1)


flags = ["-std=c99", "-O2", "-Wall", "-Wextra"]
if os.environ.get("MEMOBS_WERROR") == "1":
    flags.append("-Werror")

setup(
    version=memobs_version(),
    packages=["memobs"],
    package_dir={"": "python"},
    package_data={"memobs": ["py.typed", "__init__.pyi"]},
    ext_modules=[
        Extension(
            "memobs._memobs",
            sources=["python/memobs/_memobs.c"],
            include_dirs=["."],
            depends=["memobs.h", "memobs_python.h"],
            extra_compile_args=flags,
        )
    ],
    include_package_data=False,  # only package_data: not _memobs.c (MANIFEST.in puts it in the sdist)
    zip_safe=False,
)
