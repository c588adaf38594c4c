"""The texture pages of a game level as RGBA (TR1's 8-bit palette pages, TR2/TR3's
16-bit pages, TR4/TR5's 32-bit pages), shared by the glTF export
(:mod:`.levelscene`) and the level-to-wad conversion (:mod:`.levelwad`)."""
from __future__ import annotations

from typing import Any

import numpy as np

PAGE = 256 * 256


def _pages(doc: Any) -> list[np.ndarray]:
    """(256, 256, 4) uint8 RGBA per texture page."""
    r = doc.root
    engine = doc.codec.engine
    if engine == 1:
        pal = np.asarray(r["palette"] if "palette" in r else r["demo_palette"],
                         dtype=np.uint16).reshape(256, 3)
        rgb = np.clip(pal * 4, 0, 255).astype(np.uint8)
        idx = np.frombuffer(bytes(r["textiles8"]), dtype=np.uint8).reshape(-1, 256, 256)
        out = np.empty(idx.shape + (4,), dtype=np.uint8)
        out[..., :3] = rgb[idx]
        out[..., 3] = np.where(idx == 0, 0, 255)
        return list(out)
    if engine in (2, 3):
        w = np.asarray(r["textiles16"], dtype=np.uint16).reshape(-1, 256, 256)
        out = np.empty(w.shape + (4,), dtype=np.uint8)
        for i, shift in enumerate((10, 5, 0)):
            c = (w >> shift) & 31
            out[..., i] = (c << 3 | c >> 2).astype(np.uint8)
        out[..., 3] = np.where(w & 0x8000, 255, 0)
        return list(out)
    px = np.frombuffer(bytes(r["textiles32"]["content"]["pixels"]), dtype=np.uint8)
    px = px[:len(px) // (PAGE * 4) * PAGE * 4].reshape(-1, 256, 256, 4)
    return list(px[..., [2, 1, 0, 3]])
