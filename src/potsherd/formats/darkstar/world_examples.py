"""Small Darkstar world files written by potsherd's own encoders: a palette
set, bitmaps, a bitmap array, a RIFF palette, a one-cube interior (.dis, .dig,
.dil) and a volume holding them.  Used as fuzz seeds and test fixtures (no
game file is ever copied)."""
from __future__ import annotations

import struct

import numpy as np

from .phoenix import BMP, PBA, PPL, RIFF_PAL, SHADE_HAZE, TRANSLUCENT
from .pers import BLOCK
from .textures import image_to_bitmap
from .volumes import build_volume

P = struct.pack


def example_colors() -> np.ndarray:
    """256 distinct RGB colours: a 6x6x6 cube, then greys."""
    cube = np.array([(r, g, b) for r in range(6) for g in range(6) for b in range(6)]) * 51
    greys = np.repeat(np.linspace(8, 248, 40).astype(int)[:, None], 3, axis=1)
    return np.concatenate([cube, greys]).astype(np.uint8)


def pl98_bytes(*, quantization: bool = True, translucent: bool = True) -> bytes:
    """Three palettes (shade/haze, translucent, plain) with their remap tables
    (without ``translucent`` the second palette is plain: no 64 KiB table)."""
    colors = example_colors()
    rgbx = np.zeros((256, 4), np.uint8)
    rgbx[:, :3] = colors
    shade_shift, haze = 1, 2
    shade = 1 << shade_shift
    rng = np.random.default_rng(7)
    maps = {"identityMap": np.arange(256, dtype=np.uint8),
            "indexToR": colors[:, 0].astype("<f4") / 255, "indexToG": colors[:, 1].astype("<f4") / 255,
            "indexToB": colors[:, 2].astype("<f4") / 255, "indexToA": np.ones(256, "<f4")}
    pals = [
        {"colors": rgbx, "paletteIndex": 0xFFFFFFFF, "paletteType": SHADE_HAZE,
         "shadeMap": rng.integers(0, 256, (shade * haze, 256), dtype=np.uint8),
         "hazeMap": rng.integers(0, 256, (shade, 256), dtype=np.uint8), **maps},
        ({"colors": rgbx[::-1].copy(), "paletteIndex": 0xFFFFFFFE, "paletteType": TRANSLUCENT,
          "transMap": rng.integers(0, 256, (256, 256), dtype=np.uint8), **maps} if translucent
         else {"colors": rgbx[::-1].copy(), "paletteIndex": 0xFFFFFFFE, "paletteType": 0}),
        {"colors": rgbx, "paletteIndex": 5, "paletteType": 0},
    ]
    root = {"tag": "PL98", "numPalettes": 3, "shadeShift": shade_shift, "hazeLevels": haze,
            "hazeColor": 254, "allowedColorMatches": np.full(32, 255, np.uint8),
            "palettes": pals, "hasQuantization": int(quantization), "expansion": 0}
    if quantization:
        root.update(colorWeights=np.linspace(0, 1, 256, dtype="<f4"), usedRangeStart=10,
                    usedRangeEnd=245)
    return PPL.encode_tree(root)


def riff_pal_bytes() -> bytes:
    rgbx = np.zeros((256, 4), np.uint8)
    rgbx[:, :3] = example_colors()
    root = {"tag": "RIFF", "riffSize": 0, "form": "PAL ", "chunks": [
        {"tag": "data", "size": 0, "version": 0x300, "count": 256, "colors": rgbx, "extra": b"",
         "pad": b""},
        {"tag": "offl", "size": 3, "raw": b"abc", "pad": b"\0"}]}
    return RIFF_PAL.encode_tree(root)


def gradient_image(w: int, h: int) -> np.ndarray:
    """An RGB test picture of palette colours: red across, green down, blue in blocks."""
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = (x * 6 // max(w, 1)) * 51
    img[..., 1] = (y * 6 // max(h, 1)) * 51
    img[..., 2] = ((x // 4 + y // 4) % 6) * 51
    return img


def bitmap_bytes(w: int = 16, h: int = 8, *, mips: int = 3, attribute: int = 0,
                 palette_index: int = 0xFFFFFFFF) -> bytes:
    return image_to_bitmap(gradient_image(w, h), example_colors(), mips=mips,
                           attribute=attribute, palette_index=palette_index)


def pba_bytes() -> bytes:
    """An array of two bitmaps (odd widths: padded rows) with an index remap."""
    bms = [BMP.decode(bitmap_bytes(w, h, mips=1)).root for w, h in ((5, 3), (7, 2))]
    for bm in bms:  # array members start at their head chunk
        bm["chunks"] = bm["chunks"][1:]
    root = {"chunks": [{"tag": "PBMA", "size": 0},
                       {"tag": "head", "size": 8, "version": 0, "chunkCount": 3, "numBitmaps": 2},
                       {"tag": "rmap", "size": 8, "remap": np.array([1, 0], "<i4")},
                       *({"tag": "PBMP", "size": 0, "bitmap": bm} for bm in bms)]}
    return PBA.encode_tree(root)


# ----------------------------------------------------------------------------
# a one-cube interior

CUBE_POINTS = [(x, y, z) for z in (0.0, 2.0) for y in (-1.0, 1.0) for x in (-1.0, 1.0)]
#: outward faces as point indices, counter-clockwise seen from outside (Z up)
CUBE_FACES = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]


def _pers(cls: str, version: int, payload: bytes) -> bytes:
    name = cls.encode() + (b"\0" if len(cls) % 2 else b"")
    data = P("<h", len(cls)) + name + P("<i", version) + payload
    return b"PERS" + P("<I", len(data)) + data + bytes(len(data) % 2)


def dig_bytes(build_id: int = 77, reverse: bool = True) -> bytes:
    """ITRGeometry v7 of a cube: 6 quad surfaces (material 0, the top 1), UVs
    0..1 per face.  The engine's polygons wind clockwise seen from outside
    (``reverse``)."""
    faces = [tuple(reversed(f)) if reverse else f for f in CUBE_FACES]
    surfaces = b"".join(P("<6BHIIBB2x", 0x20, 1 if i == 1 else 0, 15, 15, 0, 0, i, 4 * i, 0, 4, 0)
                        for i in range(6))
    verts = b"".join(P("<2H", p, k) for f in faces for k, p in enumerate(f))
    points3 = b"".join(P("<3f", *p) for p in CUBE_POINTS)
    points2 = b"".join(P("<2f", *uv) for uv in ((0, 0), (1, 0), (1, 1), (0, 1)))
    planes = b"".join(P("<4f", 0, 0, 1, 0) for _ in range(6))
    payload = (P("<if6f", build_id, 4.0, -1, -1, 0, 1, 1, 2) + P("<9i", 6, 0, 0, 0, 0, 24, 8, 4, 6)
               + surfaces + verts + points3 + points2 + planes + P("<iI", 0, 0))
    return _pers("ITRGeometry", 7, payload)


def dil_bytes(build_id: int = 77) -> bytes:
    """ITRLighting v7 for the cube: surface 0 white (-1), 1 a raw 2x2 map, 2 a
    Huffman 2x2 map (one-bit codes: 0 -> black, 1 -> full red), 3-5 constant
    colours in the low 16 bits of a negative map index."""
    raw_map = P("<4H", 0x0F00, 0x00F0, 0x000F, 0xFFFF)       # red, green, blue, white
    huff_map = bytes([0b0110])                               # texels 0,1,1,0 (LSB first)
    map_data = raw_map + huff_map
    surfaces = [(-1, 0, 0, 2, 2, 0, 0), (0, 0, 0, 2, 2, 0, 0), (0x40000000 | len(raw_map), 0, 0, 2, 2, 0, 0),
                (-0x10000 | 0x0F00, 0, 0, 1, 1, 0, 0), (-0x10000 | 0x00F0, 0, 0, 1, 1, 0, 0),
                (-0x10000 | 0x000F, 0, 0, 1, 1, 0, 0)]
    payload = (P("<3i", build_id, 4, 0) + P("<5i", 0, 0, 0, 6, len(map_data))
               + b"".join(P("<i2h4B", *s) for s in surfaces) + map_data
               + P("<I", 0) + b"\x01" + P("<2i", 1, 2) + P("<2i", -2, -1) + P("<2I", 0x0000, 0x0F00))
    return _pers("ITRLighting", 7, payload)


def dig_v4_bytes(build_id: int = 77) -> bytes:
    """The cube of :func:`dig_bytes` as ITRGeometry version 4: one list of
    48-byte leaves (an outside leaf, a solid and an empty one) where version 7
    has its solid and empty lists."""
    v7 = dig_bytes(build_id)
    at = v7.index(P("<9i", 6, 0, 0, 0, 0, 24, 8, 4, 6))
    head = v7[at - 32:at]                       # buildId, textureScale, box
    rest = v7[at + 36:]                         # surfaces ... footer
    surfaces, tail = rest[:6 * 20], rest[6 * 20:]
    box = (-1.0, -1.0, 0.0, 1.0, 1.0, 2.0)
    leaves = (P("<2H2I2H2I6f", 2, 0, 0, 0x4211D0, 0, 0, 0, 0, *box)
              + P("<2H2I2H2I6f", 1, 0, 0, 0, 2, 1, 3, 4, *box)
              + P("<2H2I2H2I6f", 0, 1, 5, 0, 6, 0, 0, 0, *box))
    payload = head + P("<8i", 6, 0, 3, 0, 24, 8, 4, 6) + surfaces + leaves + tail
    return _pers("ITRGeometry", 4, payload)


def dil_v4_bytes(build_id: int = 77) -> bytes:
    """ITRLighting version 4 for the cube: no Huffman flag or tables, so every
    map is raw (surface 1 the 2x2 map of :func:`dil_bytes`, surface 2 another)."""
    raw_map = P("<4H", 0x0F00, 0x00F0, 0x000F, 0xFFFF)
    second = P("<4H", 0x0888, 0x0888, 0x0888, 0x0888)
    surfaces = [(-1, 0, 0, 2, 2, 0, 0), (0, 0, 0, 2, 2, 0, 0), (len(raw_map), 0, 0, 2, 2, 0, 0),
                (-0x10000 | 0x0F00, 0, 0, 1, 1, 0, 0), (-0x10000 | 0x00F0, 0, 0, 1, 1, 0, 0),
                (-0x10000 | 0x000F, 0, 0, 1, 1, 0, 0)]
    payload = (P("<3i", build_id, 4, 0) + P("<5i", 0, 0, 0, 6, 16)
               + b"".join(P("<i2h4B", *s) for s in surfaces) + raw_map + second + P("<I", 0))
    return _pers("ITRLighting", 4, payload)


def mission_dil_bytes(build_id: int = 77) -> bytes:
    """ITRMissionLighting v7: the payload of :func:`dil_bytes`, then its index
    table (srcIndex -> destIndex pairs) as the engine writes it: a count and
    one LZH stream."""
    from .lzh import encode as lzh_encode
    v7 = dil_bytes(build_id)
    payload = (v7[len(b"PERS") + 4 + 2 + 12 + 4:] + P("<i", 2)
               + lzh_encode(P("<4i", 0, 0, 8, 8)))
    return _pers("ITRMissionLighting", 7, payload)


def dis_bytes(prefix: str = "cube") -> bytes:
    """An ITRs shape: one state, one LOD naming ``<prefix>-0.dig`` and
    ``<prefix>-0.dil``, material list ``<prefix>.dml``."""
    names = [b"State 0", f"{prefix}-0.dig".encode(), f"{prefix}-0.dil".encode(),
             f"{prefix}.dml".encode()]
    offs, buf = [], b""
    for n in names:
        offs.append(len(buf))
        buf += n + b"\0"
    body = (P("<I", 3) + P("<I", 1) + P("<3I", offs[0], 0, 1) + P("<I", 1) + P("<4I", 0, offs[1], 0, 0)
            + P("<I", 1) + P("<I", offs[2]) + P("<i", 1) + P("<I", 0) + P("<I", len(buf)) + buf
            + P("<i", offs[3]) + b"\0")
    return b"ITRs" + P("<I", len(body)) + body


def dml_bytes(maps: tuple[str, ...] = ("wall.bmp", "roof.bmp")) -> bytes:
    """A TS::MaterialList v3 of texture materials naming ``maps``."""
    recs = b"".join(P("<ifi4B", 0x103 if i else 0x1103, 1.0, 0, 0, 0, 0, 0)
                    + m.encode().ljust(32, b"\0") + P("<iff", 0, 1.0, 1.0)
                    for i, m in enumerate(maps))
    return _pers("TS::MaterialList", 3, P("<2i", 1, len(maps)) + recs)


def interior_files(prefix: str = "cube") -> list[tuple[str, bytes]]:
    """The files of the example interior tree, with its bitmaps and palette."""
    return [(f"{prefix}.dis", dis_bytes(prefix)), (f"{prefix}-0.dig", dig_bytes()),
            (f"{prefix}-0.dil", dil_bytes()), (f"{prefix}.dml", dml_bytes()),
            ("wall.bmp", bitmap_bytes(16, 16, mips=1)),
            ("roof.bmp", bitmap_bytes(8, 8, mips=1, attribute=1)),
            ("world.ppl", pl98_bytes())]


def volume_bytes() -> bytes:
    return build_volume(interior_files())


def seed_files() -> dict[str, bytes]:
    """One small file per world codec (fuzz seeds)."""
    return {"example.bmp": bitmap_bytes(), "example.pba": pba_bytes(), "example.ppl": pl98_bytes(translucent=False),
            "example.pal": riff_pal_bytes(), "example.dis": dis_bytes(), "example.dig": dig_bytes(),
            "example.dil": dil_bytes(), "example-v4.dig": dig_v4_bytes(),
            "example-v4.dil": dil_v4_bytes(), "example-mission.dil": mission_dil_bytes(),
            "example.vol": build_volume(
                [("a.bmp", bitmap_bytes(4, 4, mips=1)), ("b.dis", dis_bytes())]),
            **terrain_seed_files()}


def terrain_seed_files() -> dict[str, bytes]:
    """Tribes world seeds: terrain blocks (LZH and row-coded), a grid file, a
    mission and an LZH-compressed volume."""
    from .terrain_examples import MISSION_TEXT, gblk_bytes, gfil_bytes
    return {"example.dtb": gblk_bytes(5, n=4), "example-v2.dtb": gblk_bytes(2, n=4),
            "example.dtf": gfil_bytes(1), "example.mis": MISSION_TEXT,
            "example-lzh.vol": build_volume([("a.dtf", gfil_bytes(1))], compress="lzh")}


_ = BLOCK  # the PERS machinery decodes the .dig/.dil seeds
