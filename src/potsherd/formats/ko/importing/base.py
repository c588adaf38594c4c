"""What every Knight Online importer shares: the refusal class, the engine's bounds and
LOD fractions, the default material, and stored names as the client's raw strings."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....core.values import RawString
from ....scene.xform import inverse_affine
from ..text import CP_DEFAULT, text


FRAME_RATE = 30.0


MAX_VERTICES = 65535          #: indices are u16


#: vertices kept by each skin LOD: the medians of the game's own skins (the 10
#: corpus .n3cskins with LODs: 0.73-1.0, 0.29-0.59 and 0.15-0.33 of their
#: vertices); the engine draws LOD 1 from 8 bounding radii away (FOV-scaled),
#: close enough that the old halving showed holes the game's parts do not
SKIN_LOD_FRACTIONS = (1.0, 0.8, 0.45, 0.25)


PMESH_LOD_FRACTIONS = (1.0, 0.45, 0.1, 0.0)


PMESH_LOD_DISTANCES = (12.0, 24.0, 60.0, 100.0)   #: times the bounding radius


F32_MAX = 3.4028234663852886e38   #: the largest float32 (a distance the file can hold)


DEFAULT_MATERIAL = {"diffuse": [1.0, 1.0, 1.0, 1.0], "ambient": [0.5, 0.5, 0.5, 1.0],
                    "specular": [0.0, 0.0, 0.0, 0.0], "emissive": [0.0, 0.0, 0.0, 0.0],
                    "power": 0.0, "colorOp": 4, "colorArg1": 0, "colorArg2": 2,
                    "renderFlags": 0, "sourceBlend": 5, "destinationBlend": 6}


class ImportError_(FormatError):
    """The scene cannot become the requested Knight Online file."""


def _raw(name: str) -> RawString:
    """A name in the client's code page; a character it lacks becomes ``?``."""
    return RawString(name.encode(CP_DEFAULT, "replace"))


def _original_name(obj: Any) -> str:
    return str(obj.extras.get("originalName", obj.name) if obj.extras else obj.name)


def _no_lod(options: dict) -> bool:
    return bool(options.get("no_lod")) or options.get("lod", 1) in (0, "0", False)


def _stem(name: str) -> str:
    return os.path.splitext(os.path.basename(name))[0] if name else ""


def _safe(name: str) -> str:
    """A node or material name as part of a file name: letters, digits, ``-``
    and ``_`` that the client's code page holds (see :func:`_file_stem`), at
    most 64 of them (a file name holds 255 bytes)."""
    keep = "".join(c if (c.isalnum() or c in "-_") and _in_code_page(c) else "_" for c in name)
    return keep.strip("_")[:64].rstrip("_") or "part"


def _unique(stem: str, taken: set) -> str:
    """``stem``, or ``stem_2``, ``stem_3``... when a file of that name (in any
    case: Windows) is already written: two meshes of one name are two files."""
    out, k = stem, 2
    while out.lower() in taken:
        out, k = f"{stem}_{k}", k + 1
    taken.add(out.lower())
    return out


def _in_code_page(c: str) -> bool:
    try:
        c.encode(CP_DEFAULT)
        return True
    except UnicodeEncodeError:
        return False


def _file_stem(out_name: str, fallback: str) -> str:
    """The stem the written files are named after.  The references inside the
    files are stored in the client's code page (cp949), so a character it lacks
    (or one Windows forbids in names) becomes ``_`` in the names on disk too;
    else the file would be named ``Körper`` and referenced as ``K?rper``."""
    stem = _stem(out_name) or fallback
    return "".join(c if _in_code_page(c) and c not in '<>:"/\\|?*' and ord(c) >= 32 else "_"
                   for c in stem) or "_"


def into_frame(scene: Any, sets: list, frame: np.ndarray, local: np.ndarray, what: str) -> np.ndarray:
    """Take a plug's triangle ``sets`` (world space) into its ``frame``; returns
    the plug matrix, ``local``.  A frame that scales an axis to 0 (a part hidden
    by scale 0) has no inverse: its flat axes get scale 1, the geometry stays
    flat along them as glTF draws it, and a plug matrix equal to the frame is
    that invertible one."""
    to_frame, flat = inverse_affine(frame)
    for s in sets:
        s.transform(to_frame)
    if flat:
        scene.warnings.append(f"{what}: its node scales it to nothing along an axis (scale 0); "
                              "written flat, as glTF draws it, in a frame of scale 1 there")
        if np.array_equal(local, frame):
            local = np.linalg.inv(to_frame)
    return local


def _by_name(names: list, originals: list) -> list:
    """``originals`` ((record, geometry) pairs) in the order of the imported ``names``:
    the original of the same stored name first (Blender reorders nodes), the
    others in their order; (None, None) where none is left."""
    free = list(range(len(originals)))
    out: list = [None] * len(names)
    for i, name in enumerate(names):
        k = next((k for k in free if text(originals[k][0].root["name"]) == name), None)
        if k is not None:
            out[i] = originals[k]
            free.remove(k)
    for i in range(len(names)):
        if out[i] is None:
            out[i] = originals[free.pop(0)] if free else (None, None)
    return out
