"""The rule every importer is held to on any scene (test_import_unusual.py,
test_import_regressions.py): ``from_scene`` either returns documents that encode,
decode back to the same bytes, export again and hold no NaN/inf, or refuses with
one of potsherd's own user-facing errors (not one the command line calls an
internal error, nor a Python error some family wrapper caught and reworded)."""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

import potsherd
from potsherd import registry
from potsherd.core.errors import FormatError, InternalDecodeError, InternalEncodeError
from potsherd.document import Document
from potsherd.errors import SceneExportError, SceneImportError
from potsherd.export.gltf import glb_bytes, scene_to_gltf
from potsherd.scene import Scene

TARGETS = ("n3pmesh", "n3cskins", "n3cpart", "n3cplug", "n3chr", "n3joint", "n3anim",
           "dts", "dml", "tr4wad", "trwad", "fbx", "fbx-ascii")
#: errors the command line reports as "internal error" (a bug), not as a refusal
INTERNAL = (SceneImportError, InternalDecodeError, InternalEncodeError, SceneExportError)
WRAPPED = re.compile(r"\b(LinAlgError|ValueError|IndexError|KeyError|TypeError|AttributeError|"
                     r"ZeroDivisionError|OverflowError|RuntimeWarning)\b")


def codec(name: str):
    return next(c for c in registry.codecs() if c.name == name)


def non_finite(x, where: str = "", depth: int = 0) -> str | None:
    """Where the first NaN/inf float is in a decoded document (or scene) tree, or None."""
    if depth > 60:
        return None
    if isinstance(x, (float, np.floating)):
        return None if np.isfinite(x) else where
    if isinstance(x, np.ndarray):
        if x.dtype.names:
            return next((w for f in x.dtype.names
                         if (w := non_finite(x[f], f"{where}.{f}", depth + 1))), None)
        if x.dtype.kind in "fc":
            return None if np.isfinite(x).all() else where
        if x.dtype.kind == "O":
            return next((w for v in x.ravel() if (w := non_finite(v, where, depth + 1))), None)
        return None
    if isinstance(x, dict):
        items = x.items()
    elif isinstance(x, (list, tuple)):
        items = enumerate(x)
    elif type(x).__module__.startswith("potsherd.") and not isinstance(x, type):
        names = list(getattr(x, "__dict__", ())) + list(getattr(type(x), "__slots__", ()))
        items = ((k, getattr(x, k, None)) for k in names if not k.startswith("_"))
    else:
        return None
    return next((w for k, v in items if (w := non_finite(v, f"{where}.{k}", depth + 1))), None)


def check_import(target: str, scene: Scene, folder: Path) -> str:
    """The rule: documents that encode, re-read byte-exact, export and hold no
    NaN/inf, or one of potsherd's user-facing errors.  Returns "ok" or "refused"."""
    c = codec(target)
    out = "out" + c.extensions[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # a NaN in the making is a finding
        try:
            result = c.from_scene(scene, out_name=out, out_dir=str(folder))
        except INTERNAL:
            raise
        except FormatError as e:
            # a refusal names what is wrong, not a Python error some family wrapper caught
            assert str(e) and not WRAPPED.search(str(e)), f"a wrapped bug: {e}"
            return "refused"
        pairs = [(out, result)] if isinstance(result, Document) else list(result)
        assert pairs, "from_scene returned nothing"
        written = []
        for name, doc in pairs:
            assert isinstance(doc, Document)
            assert len(os.path.basename(name).encode()) <= 255, f"{name[:40]}...: name too long"
            data = doc.encode()
            back = potsherd.read(data, format=doc.format)
            assert back.encode() == data, f"{name}: not byte-exact after a re-read"
            bad = non_finite(back.root, doc.format)
            assert bad is None, f"{name}: NaN/inf in the output at {bad}"
            if doc.format == "fbx-ascii":
                assert not re.search(rb"(?i)[\s,:](-?nan|-?inf)\b", data), f"{name}: NaN/inf text"
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
        for path in written:
            doc = potsherd.read(path)
            if doc.codec.to_scene is None:
                continue
            back = doc.codec.to_scene(doc, source_path=str(path))
            bad = non_finite(back.meshes, "meshes")
            assert bad is None, f"{path.name}: NaN/inf exported at {bad}"
            glb_bytes(*scene_to_gltf(back, True))
    return "ok"
