"""build_backend.py: the PEP 517 build backend of the gpuctl Python module (pyproject.toml names
it, with backend-path "."). Standard library only, so `pip install ./python` needs nothing from
the network: a plain venv (Debian: python3-venv) has all it takes, offline. setuptools would
need itself and `wheel` fetched into pip's isolated build environment, or installed beforehand.

A pure-Python package of four files needs little: the wheel (PEP 427) is a zip of gpuctl/ and a
dist-info directory (METADATA from pyproject.toml's [project], WHEEL, RECORD with each file's
sha256); the editable wheel (PEP 660) holds one .pth file naming this directory; the sdist is a
tar of the sources with PKG-INFO.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "gpuctl"
TAG = "py3-none-any"


def _project():
    """The `key = "value"` lines of pyproject.toml's [project] table (all this project uses;
    tomllib is not in Python 3.9 and 3.10)."""
    meta, section = {}, None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]").strip()
            elif section == "project" and "=" in line:
                key, _, value = line.partition("=")
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] == '"':
                    meta[key.strip()] = value[1:-1]
    return meta


def _metadata():
    p = _project()
    with open(os.path.join(HERE, p["readme"]), encoding="utf-8") as f:
        readme = f.read()
    text = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "Description-Content-Type: text/markdown\n\n%s"
            % (p["name"], p["version"], p["description"], p["requires-python"], readme))
    return p["name"], p["version"], text


def _sources():
    pkg = os.path.join(HERE, PACKAGE)
    return sorted("%s/%s" % (PACKAGE, n) for n in os.listdir(pkg) if n.endswith(".py"))


def _wheel(directory, files):
    """Writes a wheel of files {archive name: bytes}; returns its file name."""
    name, version, metadata = _metadata()
    dist = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[dist + "/METADATA"] = metadata.encode("utf-8")
    files[dist + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: gpuctl build_backend\n"
                              "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode()
    record = []
    for arc, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (arc, digest.decode(), len(data)))
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = "%s-%s-%s.whl" % (name, version, TAG)
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files.items():
            z.writestr(zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0)), data)
    return filename


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for arc in _sources():
        with open(os.path.join(HERE, arc), "rb") as f:
            files[arc] = f.read()
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {PACKAGE + ".pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for arc in ["pyproject.toml", "build_backend.py", _project()["readme"]] + _sources():
            tar.add(os.path.join(HERE, arc), "%s/%s" % (base, arc))
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = metadata.encode("utf-8")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return filename
