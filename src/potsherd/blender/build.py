"""Build the Blender extension zip: the add-on, its ``blender_manifest.toml``, and the
wheels of potsherd and of its binary dependencies for each platform Blender runs on.

Blender 4.2+ installs the wheels the manifest lists; Blender 3.x (a legacy add-on) gets
the same zip and unpacks the wheels that fit on first use.  numpy is never bundled: the
add-on uses Blender's own.  potsherd's wheel is made from the installed package itself,
so an installed potsherd builds the zip without a checkout; the dependency wheels come
from a folder (``wheels_dir``) and what is missing there is downloaded with pip.

The zip is reproducible: entries sorted, one fixed timestamp, fixed permissions, so the
same wheels give the same bytes.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from .._version import __version__
from ..core.fileio import atomic_write

ADDON_ID = "potsherd_blender"
#: Blender's platform names and the wheel platform tags pip may pick for each
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    "windows-x64": ("win_amd64",),
    "macos-arm64": ("macosx_11_0_arm64",),
    "macos-x64": ("macosx_10_15_x86_64",),
}
#: the Python of Blender 4.2 to 4.5 (and of Debian's Blender 3.4)
PYTHON = "3.11"
#: what Blender brings itself
NOT_BUNDLED = {"numpy"}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


class BuildError(Exception):
    """A wheel could not be had (offline, or no wheel for a platform)."""


def _requirement_names() -> list[str]:
    """potsherd's runtime dependencies (no extras), numpy left out."""
    names = []
    for req in metadata.requires("potsherd") or ():
        if "extra ==" in req:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", req).group(0)
        if name.lower() not in NOT_BUNDLED:
            names.append(name)
    return sorted(names, key=str.lower)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _entry(name: str, data: bytes, mode: int = 0o644) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100000 | mode) << 16
    return info, data


def _zip(entries: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for info, data in sorted(entries, key=lambda e: e[0].filename):
            z.writestr(info, data)
    return buf.getvalue()


def potsherd_wheel() -> tuple[str, bytes]:
    """A pure-Python wheel of the installed potsherd package (its files as installed,
    without caches), named as pip names it."""
    package = Path(__file__).resolve().parents[1]
    files = {}
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files["potsherd/" + path.relative_to(package).as_posix()] = path.read_bytes()
    dist = f"potsherd-{__version__}.dist-info"
    requires = "".join(f"Requires-Dist: {r}\n" for r in metadata.requires("potsherd") or ()
                       if "extra ==" not in r)
    files[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: potsherd\nVersion: {__version__}\n"
                                 f"Summary: Read, write and convert the 3D asset formats of "
                                 f"classic games\nRequires-Python: >=3.10\n{requires}").encode()
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: potsherd\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    record = []
    for name, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    return f"potsherd-{__version__}-py3-none-any.whl", _zip([_entry(n, d) for n, d in files.items()])


def _have(folder: Path, name: str, platform: str) -> list[Path]:
    """Wheels of ``name`` in ``folder`` usable on ``platform`` with Blender's Python."""
    py = "cp" + PYTHON.replace(".", "")
    arch = {"linux-x64": ("linux", "x86_64"), "windows-x64": ("win", "amd64"),
            "macos-arm64": ("macosx", "arm64"), "macos-x64": ("macosx", "x86_64")}[platform]
    out = []
    for w in sorted(folder.glob("*.whl")):
        parts = w.stem.split("-")
        if len(parts) < 5 or _norm(parts[0]) != _norm(name):
            continue
        pytags, abi, plat = parts[-3].split("."), parts[-2], parts[-1]
        if not any(t in (py, "py3") or (abi == "abi3" and t.startswith("cp3")) for t in pytags):
            continue
        if plat == "any" or any(arch[0] in p and (p.endswith(arch[1]) or
                                                          p.endswith("universal2"))
                                for p in plat.split(".")):
            out.append(w)
    return sorted(out, key=_version_key)


def _version_key(wheel: Path) -> tuple:
    """Order wheels by their version (3.13 after 3.8), so the last is the newest."""
    version = wheel.stem.split("-")[1]
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.+]", version))


def fetch_wheels(folder: Path, platforms: list[str], names: list[str] | None = None) -> None:
    """Download into ``folder`` (a cache) the wheels it lacks, with pip."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names if names is not None else _requirement_names():
        for platform in platforms:
            if _have(folder, name, platform):
                continue
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                   "--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp",
                   "-d", str(folder), name]
            for tag in PLATFORMS[platform]:
                cmd[4:4] = ["--platform", tag]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0 or not _have(folder, name, platform):
                tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no wheel"]
                raise BuildError(f"no {platform} wheel of {name} for Python {PYTHON}: {tail[0]}")


def manifest(wheels: list[str], platforms: list[str]) -> str:
    """``blender_manifest.toml`` for Blender 4.2+."""
    listed = ",\n  ".join(f'"./wheels/{w}"' for w in wheels)
    plats = ", ".join(f'"{p}"' for p in platforms)
    return f'''schema_version = "1.0.0"
id = "{ADDON_ID}"
version = "{__version__}"
name = "potsherd"
tagline = "Knight Online, Darkstar, Tomb Raider and FBX files, byte for byte"
maintainer = "potsherd developers"
type = "add-on"
blender_version_min = "4.2.0"
license = ["SPDX:MIT"]
tags = ["Import-Export"]
platforms = [{plats}]
wheels = [
  {listed}
]

[permissions]
files = "Read game files and write the converted files"
'''


def build_addon(output: str | os.PathLike, *, platforms: list[str] | None = None,
                wheels_dir: str | os.PathLike | None = None) -> dict:
    """Write the extension zip to ``output``; returns what it holds.  ``wheels_dir`` is
    where dependency wheels are taken from (and downloaded to when missing)."""
    platforms = list(platforms or PLATFORMS)
    for p in platforms:
        if p not in PLATFORMS:
            raise BuildError(f"unknown platform {p!r}; use {', '.join(PLATFORMS)}")
    folder = Path(wheels_dir) if wheels_dir else Path.home() / ".cache" / "potsherd" / "wheels"
    fetch_wheels(folder, platforms)
    chosen: dict[str, bytes] = {}
    for name in _requirement_names():
        for platform in platforms:
            for w in _have(folder, name, platform)[-1:]:    # the newest fitting one
                chosen[w.name] = w.read_bytes()
    own_name, own = potsherd_wheel()
    chosen[own_name] = own
    addon = Path(__file__).resolve().parent / "addon"
    entries = [_entry(f"{ADDON_ID}/__init__.py", (addon / "__init__.py").read_bytes()),
               _entry(f"{ADDON_ID}/blender_manifest.toml",
                      manifest(sorted(chosen), platforms).encode())]
    entries += [_entry(f"{ADDON_ID}/wheels/{n}", d) for n, d in chosen.items()]
    data = _zip(entries)
    atomic_write(output, data)
    return {"path": os.fspath(output), "bytes": len(data), "wheels": sorted(chosen),
            "platforms": platforms}
