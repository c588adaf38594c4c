"""Pixel decoders: BC1/BC2/BC3 against Pillow's DDS reader, hand-made blocks
with expected values worked out from the S3TC rules, packed formats by value."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from PIL import Image

from potsherd.core.errors import ValueFormatError
from potsherd.imaging import decode_bc1, decode_bc2, decode_bc3, decode_pixels, rgba_to_png

from ntf_fixtures import dds_wrap, pattern

DECODERS = {b"DXT1": (decode_bc1, 8), b"DXT3": (decode_bc2, 16), b"DXT5": (decode_bc3, 16)}


def pillow_rgba(fourcc: bytes, w: int, h: int, payload: bytes) -> np.ndarray:
    im = Image.open(io.BytesIO(dds_wrap(fourcc, w, h, payload)))
    im.load()
    return np.asarray(im.convert("RGBA"))


@pytest.mark.parametrize("fourcc", list(DECODERS))
@pytest.mark.parametrize("size", [(4, 4), (64, 32), (12, 20), (256, 256)])
def test_random_blocks_match_pillow(fourcc, size):
    decode, block = DECODERS[fourcc]
    w, h = size
    payload = pattern((w // 4) * (h // 4) * block, w * 7 + h + block)
    mine = decode(payload, w, h)
    assert mine.shape == (h, w, 4) and mine.dtype == np.uint8
    assert np.array_equal(mine, pillow_rgba(fourcc, w, h, payload))


def test_bc1_both_block_modes_match_pillow():
    # force half the blocks into three-colour mode (c0 <= c1), half four-colour
    raw = np.frombuffer(pattern(64 * 8, 5), dtype=np.uint8).reshape(-1, 8).copy()
    c = raw[:, :4].copy().view("<u2")
    lo, hi = np.minimum(c[:, 0], c[:, 1]), np.maximum(c[:, 0], c[:, 1])
    c[0::2, 0], c[0::2, 1] = lo[0::2], hi[0::2]
    c[1::2, 0], c[1::2, 1] = hi[1::2], lo[1::2]
    raw[:, :4] = c.view(np.uint8).reshape(-1, 4)
    payload = raw.tobytes()
    mine = decode_bc1(payload, 32, 32)
    assert np.array_equal(mine, pillow_rgba(b"DXT1", 32, 32, payload))
    assert (mine[..., 3] == 0).any() and (mine[..., 3] == 255).any()


def _lut2(indices):
    return sum(i << (2 * k) for k, i in enumerate(indices))


def test_bc1_block_by_hand():
    # c0 = pure red, c1 = pure blue; c0 > c1: four colours
    block = struct.pack("<HHI", 0xF800, 0x001F, _lut2([0, 1, 2, 3] * 4))
    px = decode_bc1(block, 4, 4)
    assert px[0].tolist() == [[255, 0, 0, 255], [0, 0, 255, 255],
                              [170, 0, 85, 255], [85, 0, 170, 255]]
    # c0 < c1: three colours + transparent black; green 6-bit 0x3F expands to 255
    block = struct.pack("<HHI", 0x001F, 0x07E0, _lut2([0, 1, 2, 3] * 4))
    px = decode_bc1(block, 4, 4)
    assert px[3].tolist() == [[0, 0, 255, 255], [0, 255, 0, 255],
                              [0, 127, 127, 255], [0, 0, 0, 0]]


def test_bc3_block_by_hand():
    # eight-alpha block: a0 = 255 > a1 = 0; pixel k uses alpha index k % 8
    idx = sum((k % 8) << (3 * k) for k in range(16))
    alpha = bytes([255, 0]) + idx.to_bytes(6, "little")
    colour = struct.pack("<HHI", 0xFFFF, 0x0000, 0)  # every pixel colour 0 = white
    px = decode_bc3(alpha + colour, 4, 4)
    expected = [255, 0, 218, 182, 145, 109, 72, 36]
    assert px[..., 3].reshape(-1).tolist() == expected * 2
    assert (px[..., :3] == 255).all()
    # six-alpha block: a0 = 0 <= a1 = 255, entries 6 and 7 are 0 and 255
    alpha = bytes([0, 255]) + idx.to_bytes(6, "little")
    px = decode_bc3(alpha + colour, 4, 4)
    assert px[..., 3].reshape(-1).tolist() == [0, 255, 51, 102, 153, 204, 0, 255] * 2
    # BC3 colour blocks always use four colours, even with c0 <= c1
    colour = struct.pack("<HHI", 0x001F, 0xF800, _lut2([3] * 16))
    px = decode_bc3(bytes(8) + colour, 4, 4)
    assert px[0, 0].tolist() == [170, 0, 85, 0]
    assert np.array_equal(decode_bc3(alpha + colour, 4, 4),
                          pillow_rgba(b"DXT5", 4, 4, alpha + colour))


def test_bc2_block_by_hand():
    alpha = sum(k << (4 * k) for k in range(16)).to_bytes(8, "little")
    colour = struct.pack("<HHI", 0x07E0, 0x07E0, 0)
    px = decode_bc2(alpha + colour, 4, 4)
    assert px[..., 3].reshape(-1).tolist() == [17 * k for k in range(16)]
    assert px[0, 0, :3].tolist() == [0, 255, 0]


def test_block_layout_in_the_image():
    # 8x4 image: two blocks side by side, the second solid blue
    red = struct.pack("<HHI", 0xF800, 0xF800, 0)
    blue = struct.pack("<HHI", 0x001F, 0x001F, 0)
    px = decode_bc1(red + blue, 8, 4)
    assert (px[:, :4, 0] == 255).all() and (px[:, 4:, 2] == 255).all()
    # a 6x6 image still needs 2x2 blocks, cropped
    px = decode_bc1(red * 4, 6, 6)
    assert px.shape == (6, 6, 4)


def test_block_payload_size_is_checked():
    with pytest.raises(ValueFormatError):
        decode_bc1(b"\0" * 7, 4, 4)
    with pytest.raises(ValueFormatError):
        decode_bc3(b"\0" * 16, 8, 4)
    with pytest.raises(ValueFormatError):
        decode_bc2(b"", 0, 4)


PIXELS = [
    # format, one pixel's bytes, expected RGBA
    ("A8R8G8B8", bytes([0x10, 0x20, 0x30, 0x40]), [0x30, 0x20, 0x10, 0x40]),
    ("X8R8G8B8", bytes([0x10, 0x20, 0x30, 0x40]), [0x30, 0x20, 0x10, 255]),
    ("R8G8B8", bytes([0x10, 0x20, 0x30]), [0x30, 0x20, 0x10, 255]),
    ("R5G6B5", struct.pack("<H", 0xF800), [255, 0, 0, 255]),
    ("R5G6B5", struct.pack("<H", (0b10000 << 11) | (0b100000 << 5) | 0b00001), [132, 130, 8, 255]),
    ("X1R5G5B5", struct.pack("<H", 0x03E0), [0, 255, 0, 255]),
    ("A1R5G5B5", struct.pack("<H", 0x801F), [0, 0, 255, 255]),
    ("A1R5G5B5", struct.pack("<H", 0x7C00), [255, 0, 0, 0]),
    ("A4R4G4B4", struct.pack("<H", 0x8F31), [255, 51, 17, 136]),
]


@pytest.mark.parametrize("fmt,raw,rgba", PIXELS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PIXELS)])
def test_packed_pixel_values(fmt, raw, rgba):
    px = decode_pixels(raw * 6, 3, 2, fmt)
    assert px.shape == (2, 3, 4)
    assert (px.reshape(-1, 4) == rgba).all()


def test_packed_rows_are_top_first_and_checked():
    data = bytes([0, 0, 255, 255]) * 2 + bytes([255, 0, 0, 255]) * 2  # red row, then blue row
    px = decode_pixels(data, 2, 2, "A8R8G8B8")
    assert px[0, 0].tolist() == [255, 0, 0, 255] and px[1, 1].tolist() == [0, 0, 255, 255]
    with pytest.raises(ValueFormatError):
        decode_pixels(data[:-1], 2, 2, "A8R8G8B8")
    with pytest.raises(ValueFormatError):
        decode_pixels(data, 2, 2, "P8")


def test_png_bytes_decode_back():
    rgba = np.arange(4 * 3 * 4, dtype=np.uint8).reshape(3, 4, 4)
    im = Image.open(io.BytesIO(rgba_to_png(rgba)))
    assert im.format == "PNG" and im.size == (4, 3)
    assert np.array_equal(np.asarray(im.convert("RGBA")), rgba)
