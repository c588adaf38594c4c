"""Phoenix bitmaps, bitmap arrays and palettes: exact bytes against independent
packing, JSON both ways, mip levels, PNG conversion both ways, hostile input."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError, TruncatedError
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.phoenix import mip_levels, palette_colors
from potsherd.formats.darkstar.textures import bitmap_rgba, image_to_bitmap, quantize

P = struct.pack


def chunk(tag: bytes, data: bytes) -> bytes:
    return tag + P("<I", len(data)) + data


def bitmap_packed(w: int, h: int, levels: list[bytes], *, attr=0, pidx=0xFFFFFFFF,
                  pbmp_size=1234) -> bytes:
    data = b"".join(levels)
    return (b"PBMP" + P("<I", pbmp_size) + chunk(b"head", P("<5I", 3, w, h, 8, attr))
            + chunk(b"data", data) + chunk(b"DETL", P("<i", len(levels)))
            + chunk(b"PiDX", P("<I", pidx)))


def roundtrip_all(data: bytes, path: str):
    doc = potsherd._registry.decode(data, path=path)
    assert doc.encode() == data
    for form in ("wire", "readable"):
        again = potsherd.from_json(json.dumps(doc.to_json(form)))
        assert again.encode() == data, form
    return doc


def test_bitmap_chunks_and_mips_decode_into_fields():
    # 5x2 level 0 (rows padded to 8), then 2x1 and 1x1 mip levels (engine: w*h/4 steps)
    level0 = bytes(range(1, 6)) + b"\xAA\xBB\xCC" + bytes(range(6, 11)) + b"\xDD\xEE\xFF"
    data = bitmap_packed(5, 2, [level0, b"\x10\x11"], attr=1, pidx=9)
    doc = roundtrip_all(data, "x.bmp")
    assert doc.format == "pbmp" and doc.codec.opaque_bytes(doc) == 0
    head = doc.root["chunks"][1]
    assert (head["width"], head["height"], head["chunkCount"], head["attribute"]) == (5, 2, 3, 1)
    assert doc.root["chunks"][0] == {"tag": "PBMP", "size": 1234}   # kept as stored
    levels = mip_levels(doc.root)
    assert levels[0].tolist() == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    # level 1 starts at w*h = 10 (inside level 0's row padding), 2x1 pixels
    assert levels[1].tolist() == [[level0[10], level0[11]]] == [[8, 9]]
    assert doc.info()["paletteIndex"] == 9


def test_edited_pixels_regenerate_sizes_and_chunk_count():
    data = bitmap_packed(4, 1, [b"\1\2\3\4"])
    doc = potsherd._registry.decode(data, path="x.bmp")
    doc.root["chunks"][2]["pixels"] = np.arange(8, dtype=np.uint8)
    doc.root["chunks"].append({"tag": "user", "size": 0, "raw": b"hi"})
    out = doc.encode()
    assert out[36:44] == b"data" + P("<I", 8)
    assert out[16:20] == P("<I", 4)                       # head chunk count now 4
    assert out.endswith(chunk(b"user", b"hi"))


def test_array_of_bitmaps_with_remap():
    data = we.pba_bytes()
    doc = roundtrip_all(data, "x.pba")
    assert doc.format == "pbma" and doc.codec.opaque_bytes(doc) == 0
    bms = doc.codec.bitmaps(doc)
    assert [lv.shape for lv in (mip_levels(b)[0] for b in bms)] == [(3, 5), (2, 7)]
    assert doc.root["chunks"][2]["remap"].tolist() == [1, 0]
    # the header counts the chunks after it
    assert struct.unpack_from("<2I", data, 16) == (3, 2)


def test_pl98_tables_by_palette_type():
    data = we.pl98_bytes()
    doc = roundtrip_all(data, "x.ppl")
    r = doc.root
    assert doc.format == "pl98" and doc.codec.opaque_bytes(doc) == 0
    assert [p["paletteType"] for p in r["palettes"]] == [1, 2, 0]
    assert r["palettes"][0]["shadeMap"].shape == (4, 256)         # 2 shades x 2 haze levels
    assert r["palettes"][0]["hazeMap"].shape == (2, 256)
    assert r["palettes"][1]["transMap"].shape == (256, 256)
    assert "identityMap" not in r["palettes"][2]
    assert r["colorWeights"][255] == np.float32(1.0) and r["usedRangeEnd"] == 245
    # independent size: header 52 + 3 x 1032 + tables + 2 x (256 + 4 x 1024) + 1 + 1032 + 4
    assert len(data) == 52 + 3 * 1032 + (4 + 2) * 256 + 65536 + 2 * (256 + 4096) + 1 + 1032 + 4
    assert palette_colors(doc, 5).tolist() == we.example_colors().tolist()
    assert palette_colors(doc, 0xFFFFFFFE)[0].tolist() == we.example_colors()[-1].tolist()
    assert palette_colors(doc, 12345).tolist() == we.example_colors().tolist()   # none: first


def test_riff_palette_keeps_every_chunk():
    data = we.riff_pal_bytes()
    doc = roundtrip_all(data, "x.pal")
    assert doc.format == "riffpal"
    assert doc.codec.opaque_bytes(doc) == 3                      # the unknown chunk's payload
    assert data[:4] == b"RIFF" and struct.unpack_from("<I", data, 4)[0] == len(data) - 8
    assert palette_colors(doc).tolist() == we.example_colors().tolist()


def test_png_to_bitmap_and_back_is_exact_for_palette_colours():
    colors = we.example_colors()
    img = we.gradient_image(13, 6)
    data = image_to_bitmap(img, colors, mips=3, palette_index=7)
    doc = roundtrip_all(data, "x.bmp")
    rgba = bitmap_rgba(doc.root, colors)
    assert rgba.shape == (6, 13, 4) and (rgba[..., :3] == img).all() and (rgba[..., 3] == 255).all()
    levels = mip_levels(doc.root)
    assert [lv.shape for lv in levels] == [(6, 13), (3, 6), (1, 3)]
    assert doc.info()["detailLevels"] == 3 and doc.info()["paletteIndex"] == 7


def test_quantize_nearest_and_dither():
    colors = np.zeros((256, 3), np.uint8)
    colors[1] = (200, 0, 0)
    colors[2] = (0, 0, 200)
    img = np.array([[[190, 10, 0], [10, 0, 180], [0, 0, 0]]], np.uint8)
    assert quantize(img, colors).tolist() == [[1, 2, 0]]
    flat = np.full((8, 8, 3), 100, np.uint8)                     # between black and red
    flat[..., 1:] = 0
    plain, dithered = quantize(flat, colors), quantize(flat, colors, dither=True)
    assert len(np.unique(plain)) == 1 and set(np.unique(dithered)) == {0, 1}


def test_transparent_index_zero_is_clear():
    colors = we.example_colors()
    doc = potsherd._registry.decode(we.bitmap_bytes(8, 8, mips=1, attribute=1), path="t.bmp")
    rgba = bitmap_rgba(doc.root, colors)
    idx = mip_levels(doc.root)[0]
    assert (rgba[..., 3][idx == 0] == 0).all() and (rgba[..., 3][idx != 0] == 255).all()
    assert (idx == 0).any()


def test_hostile_bitmaps_are_refused_with_offsets():
    good = bitmap_packed(4, 1, [b"\1\2\3\4"])
    with pytest.raises(TruncatedError) as e:
        potsherd._registry.decode(good[:40], path="x.bmp")     # inside the data chunk header
    assert e.value.offset == 36 and e.value.path == "chunks[2]"
    with pytest.raises(TruncatedError) as e:
        potsherd._registry.decode(good[:46], path="x.bmp")     # inside its 4 pixel bytes
    assert e.value.offset == 40 and e.value.path.startswith("chunks[2]")
    no_head = b"PBMP" + P("<I", 0) + b"".join(chunk(b"junk", b"") for _ in range(70))
    with pytest.raises(FormatError, match="no 'head' chunk"):
        potsherd._registry.decode(no_head, path="x.bmp")
    huge = b"PL98" + P("<4I", 100000, 1, 2, 0) + bytes(32)
    with pytest.raises(FormatError, match="palettes"):
        potsherd._registry.decode(huge, path="x.ppl")
    with pytest.raises(TruncatedError):
        potsherd._registry.decode(b"RIFF" + P("<I", 999) + b"PAL ", path="x.pal")


def test_textures_command_palette_choice(tmp_path, capsys):
    from PIL import Image
    from potsherd.cli import main
    from potsherd.formats.darkstar.volumes import build_volume
    tree = tmp_path / "art.vol"
    tree.mkdir()
    (tree / "pic.bmp").write_bytes(we.bitmap_bytes(6, 4, mips=1))
    (tree / "a_first.ppl").write_bytes(we.pl98_bytes(translucent=False))
    out = tmp_path / "png"
    assert main(["textures", str(tree / "pic.bmp"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "palette" in err and "a_first.ppl" in err              # the choice is said
    got = np.asarray(Image.open(out / "pic.png").convert("RGB"))
    assert (got == we.gradient_image(6, 4)).all()
    # a named palette whose colours are reversed gives other pixels (negative control)
    rev = tmp_path / "rev.pal"
    doc = potsherd._registry.decode(we.riff_pal_bytes(), path="x.pal")
    doc.root["chunks"][0]["colors"] = doc.root["chunks"][0]["colors"][::-1].copy()
    rev.write_bytes(doc.encode())
    assert main(["textures", str(tree / "pic.bmp"), "-o", str(tmp_path / "p2"),
                 "--option", f"palette={rev}"]) == 0
    assert not (np.asarray(Image.open(tmp_path / "p2" / "pic.png").convert("RGB"))
                == we.gradient_image(6, 4)).all()
    assert main(["textures", str(tree / "pic.bmp"), "-o", str(out), "--option", "nope=1"]) == 2
    vol = tmp_path / "v.vol"
    vol.write_bytes(build_volume([("x.bmp", we.bitmap_bytes(4, 4, mips=1)),
                                  ("p.ppl", we.pl98_bytes(translucent=False))]))
    assert main(["textures", str(vol), "-o", str(tmp_path / "p3")]) == 0
    assert (tmp_path / "p3" / "x.png").is_file()


def test_bitmap_with_its_own_palette(tmp_path, capsys):
    from PIL import Image
    from potsherd.cli import main
    from potsherd.formats.darkstar.textures import embedded_palette
    colors = we.example_colors()[::-1].copy()
    data = image_to_bitmap(we.gradient_image(6, 4), colors, embed_palette=True)
    doc = roundtrip_all(data, "own.bmp")
    assert [c["tag"] for c in doc.root["chunks"]] == ["PBMP", "head", "RIFF", "data", "DETL", "PiDX"]
    assert doc.codec.opaque_bytes(doc) == 0
    assert palette_colors(embedded_palette(doc.root)).tolist() == colors.tolist()
    (tmp_path / "own.bmp").write_bytes(data)
    (tmp_path / "other.ppl").write_bytes(we.pl98_bytes(translucent=False))   # not used
    assert main(["textures", str(tmp_path / "own.bmp"), "-o", str(tmp_path / "o")]) == 0
    assert "its own RIFF chunk" in capsys.readouterr().err
    got = np.asarray(Image.open(tmp_path / "o" / "own.png").convert("RGB"))
    assert (got == we.gradient_image(6, 4)).all()
