"""memobs' PEP 517 build backend (pyproject.toml: backend-path python/build_backend).

Why our own: setuptools older than 70.1 (65.5 in pyenv's CPython, 66.1 in
Debian's) builds a wheel only through the separate `wheel` package, which a
fresh venv lacks and which, with no package index, pip cannot fetch. So
build_wheel compiles with setuptools (setup.py's build_py and build_ext:
python/memobs/ and the extensions memobs._memobs and memobs._memobs_attached) and writes the wheel itself
(PEP 427: a zip with a .dist-info holding METADATA, WHEEL, top_level.txt and
RECORD). Everything else (the sdist and its requirements) is setuptools'.
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

from setuptools import build_meta as _st

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "memobs"

get_requires_for_build_sdist = _st.get_requires_for_build_sdist
build_sdist = _st.build_sdist


def get_requires_for_build_wheel(config_settings=None):
    return []


def _version():
    with open(os.path.join(ROOT, "memobs.h"), encoding="utf-8") as f:
        m = re.search(r'^#define MEMOBS_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("memobs.h: no #define MEMOBS_VERSION \"N.N.N\"")
    return m.group(1)


def _project(key):
    """A string value of pyproject.toml's [project] table (no TOML parser before 3.11: one line, "key = \"...\"")."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        m = re.search(r'^%s = "([^"]*)"' % re.escape(key), f.read(), re.M)
    return m.group(1) if m else ""


def _tag():
    """This interpreter's wheel tag: cpXY-cpXY-<platform> (the extension is built for it alone)."""
    if sys.implementation.name != "cpython":
        raise RuntimeError("memobs' extension is for CPython, not %s" % sys.implementation.name)
    py = "cp%d%d" % sys.version_info[:2]
    abi = py + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "") + ("d" if hasattr(sys, "gettotalrefcount") else "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (py, abi, plat)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    tag = _tag()
    with tempfile.TemporaryDirectory(prefix="memobs_wheel_") as tmp:
        lib = os.path.join(tmp, "lib")
        # setup.py's commands, in a child: its output goes to pip's log, and
        # a failed compile is its exit status
        subprocess.check_call([sys.executable, "setup.py", "build_py", "--build-lib", lib,
                               "build_ext", "--build-lib", lib, "--build-temp", os.path.join(tmp, "temp")],
                              cwd=ROOT)
        files = []
        for d, _, names in os.walk(lib):
            for n in names:
                full = os.path.join(d, n)
                files.append((os.path.relpath(full, lib).replace(os.sep, "/"), full))
        files.sort()
        for ext in ("memobs/_memobs.", "memobs/_memobs_attached."):
            if not any(a.startswith(ext) for a, _ in files):
                raise RuntimeError("the build made no %s extension" % ext.rstrip("."))
        info = "%s-%s.dist-info" % (NAME, version)
        meta = {
            info + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            % (NAME, version, _project("description"), _project("requires-python")),
            info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: memobs_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag,
            info + "/top_level.txt": "memobs\n",
        }
        wheel_name = "%s-%s-%s.whl" % (NAME, version, tag)
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
            for arc, full in files:
                with open(full, "rb") as f:
                    data = f.read()
                z.writestr(arc, data)
                record.append(_record_line(arc, data))
            for arc, text in meta.items():
                data = text.encode("utf-8")
                z.writestr(arc, data)
                record.append(_record_line(arc, data))
            record.append(info + "/RECORD,,")
            z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return wheel_name
