"""Packed (uncompressed) pixel formats to RGBA ``uint8`` arrays.

Names follow Direct3D ``D3DFORMAT``: components are listed from the most
significant bit of a little-endian pixel word, so ``A8R8G8B8`` is the byte
sequence B, G, R, A and ``R8G8B8`` is B, G, R.  Channels narrower than 8 bits
expand by bit replication (``x5 -> x5 << 3 | x5 >> 2``; 4-bit ``x * 17``); a
1-bit alpha becomes 0 or 255; formats without alpha (``X...``, ``R5G6B5``,
``R8G8B8``) get 255.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.errors import ValueFormatError


def _bits(v: np.ndarray, shift: int, width: int) -> np.ndarray:
    x = (v >> shift) & ((1 << width) - 1)
    if width == 8:
        return x
    if width == 1:
        return x * 255
    if width == 4:
        return x * 17
    return (x << (8 - width)) | (x >> (2 * width - 8))  # widths 5 and 6


def _stack(r, g, b, a) -> np.ndarray:
    return np.stack([r, g, b, a], axis=-1).astype(np.uint8)


def _argb8888(buf: np.ndarray, alpha: bool) -> np.ndarray:
    px = buf.reshape(-1, 4)  # B, G, R, A in memory
    a = px[:, 3] if alpha else np.full(px.shape[0], 255, np.uint8)
    return _stack(px[:, 2], px[:, 1], px[:, 0], a)


def _rgb888(buf: np.ndarray) -> np.ndarray:
    px = buf.reshape(-1, 3)  # B, G, R in memory
    return _stack(px[:, 2], px[:, 1], px[:, 0], np.full(px.shape[0], 255, np.uint8))


def _word16(layout: tuple) -> Callable[[np.ndarray], np.ndarray]:
    """A 16-bit format from ((shift, width) for R, G, B, A or None)."""
    def dec(buf: np.ndarray) -> np.ndarray:
        v = buf.view("<u2").astype(np.int32)
        ch = [(_bits(v, *f) if f else np.full(v.shape, 255, np.int32)) for f in layout]
        return _stack(*ch)
    return dec


#: name -> (bytes per pixel, decoder of a flat uint8 array to (n, 4) RGBA)
PIXEL_DECODERS: dict[str, tuple[int, Callable[[np.ndarray], np.ndarray]]] = {
    "A8R8G8B8": (4, lambda b: _argb8888(b, True)),
    "X8R8G8B8": (4, lambda b: _argb8888(b, False)),
    "R8G8B8": (3, _rgb888),
    "R5G6B5": (2, _word16(((11, 5), (5, 6), (0, 5), None))),
    "X1R5G5B5": (2, _word16(((10, 5), (5, 5), (0, 5), None))),
    "A1R5G5B5": (2, _word16(((10, 5), (5, 5), (0, 5), (15, 1)))),
    "A4R4G4B4": (2, _word16(((8, 4), (4, 4), (0, 4), (12, 4)))),
}


def decode_pixels(data: bytes, width: int, height: int, fmt: str) -> np.ndarray:
    """Tightly packed rows, top row first -> RGBA ``(h, w, 4)``."""
    if fmt not in PIXEL_DECODERS:
        raise ValueFormatError(f"no decoder for pixel format {fmt}", found=fmt)
    bpp, dec = PIXEL_DECODERS[fmt]
    if width <= 0 or height <= 0:
        raise ValueFormatError(f"image size {width} x {height} is not positive",
                               found=f"{width}x{height}")
    need = width * height * bpp
    if len(data) != need:
        raise ValueFormatError(f"{width} x {height} {fmt} needs {need} bytes, found {len(data)}",
                               expected=need, found=len(data))
    buf = np.frombuffer(data, dtype=np.uint8)
    return dec(buf).reshape(height, width, 4)
