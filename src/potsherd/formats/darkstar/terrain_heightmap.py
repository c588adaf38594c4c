"""Terrain heights as a 16-bit greyscale PNG and back into a ``.dtb``.

Export: ``(size+1)^2`` samples, row 0 = the block's y = 0 row, value
``round((h - lo) / (hi - lo) * 65535)`` over the block's height range (widened
to the heights if they leave it); ``lo`` and ``hi`` are written in a text chunk
(``potsherd:heightRange``, exact float32 hex) so a tool that keeps the chunk
gives exactly the same metres back.

Import (``--like`` the original block): a sample equal to what the original
exports to keeps the original's float height, so an unedited image rebuilds
the block byte for byte (LZH streams included); edited samples become
``lo + v * (hi - lo) / 65535``.  The block's height range becomes the PNG's
range, which encloses every imported height.
"""
from __future__ import annotations

import copy
import io
import struct

import numpy as np

from ...core.errors import FormatError, ValueFormatError
from ...document import Document
from .terrain_maps import block_heights

TEXT_KEY = "potsherd:heightRange"


def _range(root: dict, h: np.ndarray) -> tuple[np.float32, np.float32]:
    lo, hi = (np.float32(x) for x in root["heightRange"])
    if not (np.isfinite(lo) and np.isfinite(hi)):
        lo, hi = np.float32(h.min()), np.float32(h.max())
    lo, hi = min(lo, np.float32(h.min())), max(hi, np.float32(h.max()))
    return np.float32(lo), np.float32(hi)


def quantize(h: np.ndarray, lo: float, hi: float) -> np.ndarray:
    span = float(hi) - float(lo)
    if span <= 0:
        return np.zeros(h.shape, np.uint16)
    q = np.rint((h.astype(np.float64) - float(lo)) / span * 65535.0)
    return np.clip(q, 0, 65535).astype(np.uint16)


def _hex(v: np.float32) -> str:
    return struct.pack("<f", float(v)).hex()


def heightmap_png(doc) -> bytes:
    """The block's heights as a 16-bit greyscale PNG."""
    from PIL import Image, PngImagePlugin
    root = doc.root
    h = block_heights(root)
    if not np.isfinite(h).all():
        raise FormatError("the height map holds non-finite heights", path="heights")
    lo, hi = _range(root, h)
    q = quantize(h, lo, hi)
    img = Image.frombytes("I;16", (q.shape[1], q.shape[0]), q.astype("<u2").tobytes())
    info = PngImagePlugin.PngInfo()
    info.add_text(TEXT_KEY, f"{_hex(lo)} {_hex(hi)} {float(lo)!r} {float(hi)!r}")
    buf = io.BytesIO()
    img.save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def read_heightmap(png: bytes) -> tuple[np.ndarray, tuple[np.float32, np.float32] | None]:
    """(uint16 samples, (lo, hi) from the text chunk or None)."""
    from PIL import Image
    try:
        img = Image.open(io.BytesIO(png))
        img.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for a bad PNG
        raise FormatError(f"not a readable PNG heightmap ({e})", offset=0) from None
    if img.mode not in ("I;16", "I;16B", "I", "L"):
        raise ValueFormatError(f"a heightmap is a 16-bit (or 8-bit) greyscale PNG, not "
                               f"mode {img.mode}", path="png.mode", found=img.mode)
    a = np.asarray(img)
    if img.mode == "L":
        a = a.astype(np.uint16) * 257
    a = a.astype(np.int64)
    if a.min() < 0 or a.max() > 65535:
        raise ValueFormatError("heightmap samples outside 0..65535", path="png")
    rng = None
    text = getattr(img, "text", {}) or {}
    if TEXT_KEY in text:
        try:
            lo_h, hi_h = text[TEXT_KEY].split()[:2]
            rng = (np.float32(struct.unpack("<f", bytes.fromhex(lo_h))[0]),
                   np.float32(struct.unpack("<f", bytes.fromhex(hi_h))[0]))
        except (ValueError, struct.error):
            rng = None
    return a.astype(np.uint16), rng


def import_heightmap(png: bytes, like) -> Document:
    """A new ``.dtb`` document: ``like`` with the heights of ``png``."""
    if like.format != "dtb":
        raise FormatError(f"--like must be a terrain block (.dtb), not {like.format}")
    root = copy.deepcopy(like.root)
    old = block_heights(root)
    if "heightRows" in root:
        raise FormatError("version 1-3 blocks store row deltas; potsherd imports heights into "
                          "version 0 and 4-5 blocks", path="heightRows")
    samples, rng = read_heightmap(png)
    if samples.shape != old.shape:
        raise ValueFormatError(f"heightmap is {samples.shape[1]}x{samples.shape[0]}, the block "
                               f"needs {old.shape[1]}x{old.shape[0]}", path="png.size",
                               found=samples.shape)
    lo, hi = rng if rng is not None else _range(root, old)
    if not (np.isfinite(lo) and np.isfinite(hi) and hi >= lo):
        raise ValueFormatError("the PNG's height range is not a finite lo <= hi", path="png.text")
    olo, ohi = _range(like.root, old)
    same = samples == quantize(old, olo, ohi) if (olo, ohi) == (lo, hi) else \
        np.zeros(old.shape, bool)
    new = (np.float64(lo) + samples.astype(np.float64) * ((float(hi) - float(lo)) / 65535.0))
    heights = np.where(same, old, new.astype(np.float32)).astype("<f4")
    if not same.all():
        root["heightRange"] = np.array([lo, hi], "<f4")
    if isinstance(root.get("heights"), dict):
        root["heights"]["values"] = heights
    else:
        root["heights"] = heights
    return Document("dtb", root, dict(like.params), bytes(like.trailing), [],
                    dict(like.meta) if like.meta else {})


def block_from_scene(scene, like) -> Document:
    """A ``.dtb`` from a glTF terrain grid (as ``convert X.dtb X.glb`` writes it,
    possibly edited): every vertex at a grid point sets that height; points
    no vertex reaches (holes) keep the original's.  ``like`` supplies every
    other field; an unedited grid rebuilds the block byte for byte."""
    if like is None or like.format != "dtb":
        raise FormatError("importing a terrain block needs --like with the original .dtb")
    root = copy.deepcopy(like.root)
    if "heightRows" in root:
        raise FormatError("version 1-3 blocks store row deltas; potsherd imports heights into "
                          "version 0 and 4-5 blocks", path="heightRows")
    old = block_heights(root)
    n = old.shape[0] - 1
    mesh_ids = [node.mesh for node in scene.nodes if node.mesh is not None]
    if not mesh_ids:
        raise FormatError("the glTF holds no mesh to take terrain heights from")
    prims = scene.meshes[mesh_ids[0]].primitives
    pos = np.concatenate([np.asarray(p.positions, np.float64).reshape(-1, 3) for p in prims])
    if not np.isfinite(pos).all():
        raise ValueFormatError("non-finite vertex positions", path="positions")
    xs = pos[:, 0]
    step = np.min(xs[xs > 1e-6]) if np.any(xs > 1e-6) else 0.0
    if not step > 0:
        raise ValueFormatError("cannot find the grid's square size in the mesh", path="positions")
    gx, gy = np.rint(pos[:, 0] / step), np.rint(pos[:, 1] / step)
    on = (np.abs(pos[:, 0] / step - gx) < 1e-3) & (np.abs(pos[:, 1] / step - gy) < 1e-3) \
        & (gx >= 0) & (gy >= 0) & (gx <= n) & (gy <= n)
    if not on.any() or on.mean() < 0.99:
        raise ValueFormatError(f"{int((~on).sum())} of {len(on)} vertices are off the block's "
                               f"{n}x{n} grid", path="positions")
    heights = old.copy()
    heights[gy[on].astype(np.int64), gx[on].astype(np.int64)] = pos[on, 2].astype(np.float32)
    if not np.array_equal(heights, old):
        lo, hi = np.float32(heights.min()), np.float32(heights.max())
        root["heightRange"] = np.array([min(lo, root["heightRange"][0]),
                                        max(hi, root["heightRange"][1])], "<f4")
    if isinstance(root.get("heights"), dict):
        root["heights"]["values"] = heights.astype("<f4")
    else:
        root["heights"] = heights.astype("<f4")
    return Document("dtb", root, dict(like.params), bytes(like.trailing), [],
                    dict(like.meta) if like.meta else {})
