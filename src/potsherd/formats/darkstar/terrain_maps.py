"""The maps of a decoded GBLK tree as plain arrays, whatever the block's
version (shared by the codec, the glTF export and the heightmap import)."""
from __future__ import annotations

import numpy as np

from ...core.errors import FormatError


def block_heights(root: dict) -> np.ndarray:
    """The (size+1)^2 float heights of a decoded GBLK tree, any version."""
    h = root.get("heights")
    if isinstance(h, np.ndarray):
        return h
    if isinstance(h, dict):
        v = h["values"]
        if v.dtype.str != "<f4":
            raise FormatError("the height map does not hold (size+1)^2 floats", path="heights")
        return v
    rows = root["heightRows"]
    n = len(rows["scale"])
    sx = int(root["size"][0])
    out = np.zeros((n + 2, sx + 1), np.float32)
    out[0] = rows["top"]
    out[-1] = rows["bottom"]
    # height[x] = height[x-1] + delta * scale, accumulated in float as the engine does
    acc = rows["lead"].astype(np.float32).copy()
    out[1:-1, 0] = acc
    d = rows["deltas"].astype(np.float32) * rows["scale"].astype(np.float32)[:, None]
    for x in range(1, sx):
        acc = (acc + d[:, x - 1]).astype(np.float32)
        out[1:-1, x] = acc
    out[1:-1, sx] = rows["trail"]
    return out


def block_materials(root: dict) -> tuple[np.ndarray, np.ndarray] | None:
    m = root.get("materials")
    if isinstance(m, dict) and "flags" in m:
        return m["flags"], m["index"]
    return None


def light_map(root: dict) -> np.ndarray | None:
    lm = root.get("lightMap")
    if isinstance(lm, dict):
        lm = lm["values"]
    if isinstance(lm, np.ndarray) and lm.dtype.str == "<u2" and lm.ndim == 2:
        return lm
    return None
