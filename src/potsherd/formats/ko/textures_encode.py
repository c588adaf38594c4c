"""Images to NTF records (``.dxt``): the encode side of ``textures.py``.

Block compression is Pillow's own BC1/BC2/BC3 encoder (its DDS writer, Pillow
>= 11.2), one call per mip level, rather than a hand-written compressor.  The
record follows the engine's writer: DXT1 for opaque images, DXT3 for 1-bit
(colour-keyed) alpha, DXT5 for smooth alpha; a full mip chain down to 4x4; the
16-bit fallback copy (half size per level but the last: A1R5G5B5 for DXT1,
A4R4G4B4 otherwise); NTF7 when ``encrypt`` (RC4 over each main level, as the
engine reads it).
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...core.values import RawString
from . import ntf

DDS_HEADER = 128


def _pow2(n: int) -> int:
    p = 4
    while p < n and p < 2048:
        p *= 2
    return p


def _bc(img: Any, pixel_format: str) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "DDS", pixel_format=pixel_format)
    data = buf.getvalue()
    if data[84:88] != pixel_format.encode():
        raise FormatError(f"Pillow wrote {data[84:88]!r}, not {pixel_format} (Pillow >= 11.2 "
                          "is needed for DXT encoding)")
    return data[DDS_HEADER:]


def _fallback16(img: Any, fmt: int) -> bytes:
    """The 16-bit copy of one level at half size (little-endian words)."""
    a = np.asarray(img.convert("RGBA"), np.uint16)
    r, g, b, al = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    if fmt == ntf.FOURCC_DXT1:
        word = ((al >= 128).astype(np.uint16) << 15) | ((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3)
    else:
        word = ((al >> 4) << 12) | ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4)
    return word.astype("<u2").tobytes()


def choose_format(alpha: np.ndarray) -> int:
    """DXT1 opaque, DXT3 for cut-out (two-level) alpha, DXT5 for smooth alpha."""
    if alpha.min() == 255:
        return ntf.FOURCC_DXT1
    if np.isin(alpha, (0, 255)).all():
        return ntf.FOURCC_DXT3
    return ntf.FOURCC_DXT5


#: the most texels a lossless (32-bit) texture gets: 1 MB at full detail
LOSSLESS_MAX_TEXELS = 512 * 512


def _bgra(img: Any) -> bytes:
    """A level as ``A8R8G8B8``/``X8R8G8B8`` pixels: little-endian words, so the
    bytes of each pixel are blue, green, red, alpha."""
    return np.ascontiguousarray(np.asarray(img.convert("RGBA"))[..., [2, 1, 0, 3]]).tobytes()


def encode_ntf(img: Any, name: str, *, encrypt: bool = False, mipmap: bool = True,
               warnings: list | None = None, lossless: bool = False) -> dict:
    """An NTF record (the dict ``DxtCodec`` decodes) of a Pillow image.
    ``lossless``: 32-bit pixels (``X8R8G8B8``, ``A8R8G8B8`` with alpha, formats
    the client's own files use) instead of block compression, up to
    :data:`LOSSLESS_MAX_TEXELS`: for pictures block compression would spoil,
    such as baked vertex colours."""
    from PIL import Image
    rgba = img.convert("RGBA")
    w, h = rgba.size
    pw, ph = _pow2(w), _pow2(h)
    if (pw, ph) != (w, h):
        rgba = rgba.resize((pw, ph), Image.LANCZOS)
        if warnings is not None:
            warnings.append(f"texture {name}: {w}x{h} resized to {pw}x{ph} (power of two)")
    alpha = np.asarray(rgba)[..., 3]
    if lossless and pw * ph <= LOSSLESS_MAX_TEXELS:
        fmt = ntf.D3DFMT_X8R8G8B8 if alpha.min() == 255 else ntf.D3DFMT_A8R8G8B8
    else:
        fmt = choose_format(alpha)
    pixel_format = ntf.FORMAT_NAMES[fmt]
    dims = ntf.level_dims(pw, ph, int(mipmap))
    levels, fallback = [], []
    for i, (lw, lh) in enumerate(dims):
        level = rgba if i == 0 else rgba.resize((lw, lh), Image.LANCZOS)
        data = _bgra(level) if fmt in ntf.PIXEL_BYTES else _bc(level, pixel_format)
        if len(data) != ntf.level_bytes(fmt, lw, lh):
            raise FormatError(f"texture {name}: level {i} encoded to {len(data)} bytes, "
                              f"expected {ntf.level_bytes(fmt, lw, lh)}")
        if encrypt:
            data = ntf.decrypt_level(data, fmt, lw)   # RC4 XOR: the same operation
        levels.append(data)
        if mipmap and i < len(dims) - 1 and fmt in ntf.DXT_FORMATS:
            fallback.append(_fallback16(level.resize((lw // 2, lh // 2), Image.LANCZOS), fmt))
    if not mipmap and fmt in ntf.DXT_FORMATS:
        fallback.append(_fallback16(rgba.resize((pw // 2, ph // 2), Image.LANCZOS), fmt))
    sizes, fb_size, thumb = ntf.payload_plan(fmt, pw, ph, int(mipmap))
    fb = b"".join(fallback)
    assert len(fb) == fb_size, (len(fb), fb_size)
    return {"name": RawString(name.encode("cp949", "replace")), "id": ntf.NTF_MAGIC,
            "version": ntf.ENCRYPTED_VERSION if encrypt else 3, "width": pw, "height": ph,
            "format": fmt, "mipmap": int(mipmap), "levels": levels, "fallback": fb,
            "thumbnail": bytes(thumb)}
