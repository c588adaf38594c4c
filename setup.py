"""Build hook: the wheel carries the JavaScript its commands need (issue 41).

Metadata lives in ``pyproject.toml``; this file only extends ``build_py`` so that a
built package holds, under ``potsherd/_vendor/``:

- ``viewer/three/``: the three.js files the viewer page imports (the module build and
  the transitive closure of the two addons it loads), with three.js's LICENSE, copied
  from ``tools/viewer/node_modules`` at the version ``tools/viewer/package-lock.json``
  pins;
- ``gltf-validator/``: ``tools/gltf-validator/validate.js`` and the npm package
  ``gltf-validator`` (Khronos, Apache-2.0, with its LICENSE and NOTICES), run with the
  user's ``node`` by ``convert --validate``.

When a ``node_modules`` folder is missing the hook runs ``npm ci`` for it (npm
needed); without npm it warns and builds without that part, unless
``POTSHERD_REQUIRE_VENDOR=1`` (CI) makes that an error.  A checkout (editable
install) keeps using ``tools/*/node_modules`` directly.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: what the viewer page imports (static/app.js and the import map in index.html)
THREE_ENTRIES = ("build/three.module.js", "examples/jsm/controls/OrbitControls.js",
                 "examples/jsm/loaders/GLTFLoader.js")
_RELATIVE_IMPORT = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}/[^'"]+)['"]""")


def _say(msg: str) -> None:
    print(f"potsherd build: {msg}", file=sys.stderr)


def _npm_ci(folder: Path, package: str) -> Path | None:
    """``folder/node_modules/package``, installed with ``npm ci`` when absent."""
    target = folder / "node_modules" / package
    if target.is_dir():
        return target
    npm = shutil.which("npm")
    if npm is None or not (folder / "package-lock.json").is_file():
        return None
    _say(f"npm ci --prefix {folder.relative_to(HERE)}")
    subprocess.run([npm, "ci", "--prefix", str(folder), "--no-audit", "--no-fund"],
                   check=True)
    return target if target.is_dir() else None


def _pinned(folder: Path, package: str) -> str | None:
    lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
    return lock.get("packages", {}).get(f"node_modules/{package}", {}).get("version")


def _closure(base: Path, entries: tuple[str, ...]) -> list[str]:
    """The entries and every file they import by relative path (ES modules)."""
    seen: list[str] = []
    todo = list(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.append(rel)
        text = (base / rel).read_text(encoding="utf-8")
        for ref in _RELATIVE_IMPORT.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), ref)).replace(os.sep, "/")
            if target.startswith(".."):
                raise RuntimeError(f"{rel} imports {ref} outside the three package")
            todo.append(target)
    return sorted(seen)


def copy_three(out: Path) -> bool:
    folder = HERE / "tools" / "viewer"
    src = _npm_ci(folder, "three")
    if src is None:
        return False
    version = json.loads((src / "package.json").read_text(encoding="utf-8"))["version"]
    pinned = _pinned(folder, "three")
    if pinned and version != pinned:
        raise RuntimeError(f"tools/viewer/node_modules has three {version} but the lockfile "
                           f"pins {pinned}: run npm ci --prefix tools/viewer")
    dest = out / "three"
    for rel in _closure(src, THREE_ENTRIES) + ["LICENSE", "package.json"]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dest / rel)
    return True


def copy_validator(out: Path) -> bool:
    folder = HERE / "tools" / "gltf-validator"
    src = _npm_ci(folder, "gltf-validator")
    if src is None:
        return False
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "validate.js", out / "validate.js")
    dest = out / "node_modules" / "gltf-validator"
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if f.is_file() and f.suffix != ".md":
            shutil.copyfile(f, dest / f.name)
    return True


class build_py_with_vendor(build_py):  # noqa: N801 - setuptools command naming
    def run(self) -> None:
        super().run()
        out = Path(self.build_lib) / "potsherd" / "_vendor"
        missing = [name for name, copy in (("three.js (the viewer's 3D view)", copy_three),
                                           ("the Khronos glTF validator", copy_validator))
                   if not copy(out / ("viewer" if copy is copy_three else "gltf-validator"))]
        for name in missing:
            msg = f"{name} not bundled: npm is not installed and its node_modules is absent"
            if os.environ.get("POTSHERD_REQUIRE_VENDOR") == "1":
                raise RuntimeError(msg)
            _say("WARNING: " + msg)


setup(cmdclass={"build_py": build_py_with_vendor})
