"""Terrain: GBLK blocks of every version and GFIL grid files read back from an
independent field-by-field writer, edited maps written again, hostile counts
refused, and every .ted/.dtf/.dtb of the Tribes corpus round-tripped."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError
from potsherd.formats.darkstar import lzh
from potsherd.formats.darkstar import terrain_examples as te
from potsherd.formats.darkstar.terrain import block_heights, light_map

from corpus_paths import CORPUS_ROOT

TRIBES = CORPUS_ROOT / "tribes" / "base"


def decode(data: bytes, name: str = "x.dtb"):
    return potsherd._registry.decode(data, path=name)


@pytest.mark.parametrize("version", range(6))
def test_every_block_version_round_trips_with_its_maps(version):
    data = te.gblk_bytes(version, n=8)
    doc = decode(data)
    assert doc.format == "dtb" and doc.root["version"] == version
    assert doc.encode() == data
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.dumps(doc.to_json(form))).encode() == data
    assert doc.codec.opaque_bytes(doc) == 0
    flags, index = te.example_materials(8)
    assert np.array_equal(doc.root["materials"]["flags"], flags)
    assert np.array_equal(doc.root["materials"]["index"], index)
    assert np.array_equal(light_map(doc.root), te.example_light(8))
    h = block_heights(doc.root)
    assert h.shape == (9, 9)
    if version in (0, 4, 5):
        assert np.array_equal(h, te.example_heights(8))
    else:   # rows rebuilt from the deltas: row y, x = lead + sum(delta) * 0.5
        want = te.example_heights(8)[3, 0] + 0.5 * np.cumsum([(x % 5 - 2) for x in range(1, 8)])
        assert np.allclose(h[3, 1:8], want)
        assert np.array_equal(h[0], te.example_heights(8)[0])
    if version >= 2:
        assert [len(p) for p in doc.root["pinMaps"]] == [2, 2] + [0] * 9
    if version >= 3:
        hr = doc.root["hires"]
        assert hr["count"] == 1 and list(hr["colorPool"]) == [0x1234, 0x5678]
        assert list(hr["treeTable"]) == [0xDEADBEEF]


def test_no_light_map_when_light_scale_is_minus_one():
    data = te.gblk_bytes(5, n=4, light_scale=-1)
    doc = decode(data)
    assert "lightMap" not in doc.root and doc.encode() == data


def test_larger_light_scale_widens_the_light_map():
    data = te.gblk_bytes(4, n=4, light_scale=2)
    doc = decode(data)
    assert light_map(doc.root).shape == (17, 17) and doc.encode() == data


def test_edited_heights_are_compressed_again():
    data = te.gblk_bytes(5, n=8)
    doc = decode(data)
    doc.root["heights"]["values"][2, 3] = 123.5
    out = doc.encode()
    assert out != data
    again = decode(out)
    assert block_heights(again.root)[2, 3] == np.float32(123.5)
    assert np.array_equal(again.root["materials"]["flags"], doc.root["materials"]["flags"])
    # the new height stream is the engine encoder's
    want = lzh.encode(doc.root["heights"]["values"].tobytes())
    assert again.root["heights"]["stream"] == want


def test_grid_file_versions_round_trip():
    for version in (0, 1):
        data = te.gfil_bytes(version, blocks=2)
        doc = decode(data, "x.dtf")
        assert doc.format == "dtf" and doc.encode() == data
        assert doc.root["materialList"] == "mars.dml"
        assert [b["name"] for b in doc.root["blocks"]] == ["", "b1"]
        assert ("blockPattern" in doc.root) == (version == 1)
        assert potsherd.from_json(json.dumps(doc.to_json("readable"))).encode() == data


def test_hostile_blocks_are_refused_with_offsets():
    data = bytearray(te.gblk_bytes(5, n=8))
    # a height map claiming 1 GiB
    struct.pack_into("<i", data, 0x34, 1 << 30)
    with pytest.raises(FormatError):
        decode(bytes(data))
    # truncated in the middle of the material stream
    good = te.gblk_bytes(5, n=8)
    with pytest.raises(FormatError) as e:
        decode(good[:200])
    assert e.value.offset is not None
    # a non-square size
    bad = bytearray(good)
    struct.pack_into("<2i", bad, 0x2C, 8, 16)
    with pytest.raises(FormatError) as e:
        decode(bytes(bad))
    assert e.value.offset == 0x2C
    # a GFIL whose block map claims more blocks than bytes
    gf = bytearray(te.gfil_bytes(1))
    struct.pack_into("<2i", gf, 0x4C, 100000, 100000)
    with pytest.raises(FormatError):
        decode(bytes(gf), "x.dtf")


TEDS = sorted((TRIBES / "missions").glob("*.ted")) if TRIBES.is_dir() else []


@pytest.mark.corpus
@pytest.mark.parametrize("ted", TEDS, ids=lambda p: p.name)
def test_corpus_terrain_round_trips(ted):
    data = ted.read_bytes()
    vol = potsherd.read(ted)
    assert vol.format == "ted" and vol.encode() == data
    names = vol.codec.member_names(vol)
    assert {n.rsplit(".", 1)[1] for n in names} == {"dtf", "dtb"}
    for name in names:
        member = potsherd.read(f"{ted}::{name}")
        raw = vol.codec.read_member(vol, name)
        assert member.encode() == raw
        assert member.codec.opaque_bytes(member) <= len(raw) // 100
        if member.format == "dtb":
            assert member.root["version"] == 5
            h = block_heights(member.root)
            assert h.shape == (257, 257)
            lo, hi = member.root["heightRange"]
            assert np.isclose(h.min(), lo) and np.isclose(h.max(), hi)
            assert potsherd.from_json(json.dumps(member.to_json("wire"))).encode() == raw


@pytest.mark.skipif(not TEDS, reason="tribes corpus absent")
@pytest.mark.corpus
def test_corpus_dtf_names_its_block():
    for ted in TEDS:
        doc = potsherd.read(f"{ted}::{ted.stem}.dtf")
        assert doc.root["materialList"] in ("mars.dml", "lush.dml")
        assert doc.root["size"].tolist() == [3, 3]


# ----------------------------------------------------------------------------
# heightmap PNG <-> .dtb


def test_heightmap_unedited_is_byte_exact_and_edits_round_trip(tmp_path):
    import io
    from PIL import Image
    from potsherd.formats.darkstar.terrain_heightmap import (heightmap_png, import_heightmap,
                                                             read_heightmap)
    data = te.gblk_bytes(5, n=8)
    like = decode(data)
    png = heightmap_png(like)
    samples, rng = read_heightmap(png)
    assert samples.shape == (9, 9) and samples.min() == 0 and samples.max() == 65535
    assert import_heightmap(png, like).encode() == data              # unedited: byte-exact
    # edit two samples: heightmap -> .dtb -> heightmap is exact
    edited = samples.copy()
    edited[4, 4] = 12345
    edited[0, 0] = 65535
    img = Image.frombytes("I;16", (9, 9), edited.astype("<u2").tobytes())
    from PIL import PngImagePlugin
    info = PngImagePlugin.PngInfo()
    info.add_text("potsherd:heightRange", Image.open(io.BytesIO(png)).text["potsherd:heightRange"])
    buf = io.BytesIO()
    img.save(buf, format="PNG", pnginfo=info)
    out = import_heightmap(buf.getvalue(), like).encode()
    again = decode(out)
    h_old, h_new = block_heights(like.root), block_heights(again.root)
    changed = np.argwhere(h_old != h_new).tolist()
    assert changed == [[0, 0], [4, 4]]
    assert h_new[0, 0] == rng[1]
    assert np.array_equal(read_heightmap(heightmap_png(again))[0], edited)
    # the materials and light map streams are the stored ones, untouched
    assert again.root["materials"]["stream"] == like.root["materials"]["stream"]


def test_heightmap_of_the_wrong_size_is_refused():
    from potsherd.formats.darkstar.terrain_heightmap import heightmap_png, import_heightmap
    small = decode(te.gblk_bytes(5, n=4))
    with pytest.raises(FormatError) as e:
        import_heightmap(heightmap_png(small), decode(te.gblk_bytes(5, n=8)))
    assert e.value.path == "png.size"
    with pytest.raises(FormatError):
        import_heightmap(b"not a png", small)


@pytest.mark.corpus
@pytest.mark.skipif(not TEDS, reason="tribes corpus absent")
def test_corpus_heightmap_cli_round_trip(tmp_path):
    from potsherd.cli import main
    from potsherd.containers import read_input
    ted = TEDS[-1]
    member = f"{ted}::{ted.stem}#0.dtb"
    png, out = tmp_path / "h.png", tmp_path / "back.dtb"
    assert main(["heightmap", member, "-o", str(png)]) == 0
    assert main(["heightmap", str(png), "--like", member, "-o", str(out)]) == 0
    assert out.read_bytes() == read_input(member)


def test_gltf_grid_export_and_import_are_inverses(tmp_path):
    from potsherd.export.gltf import document_scene, write_gltf
    from potsherd.scene.gltf_read import read_gltf
    data = te.gblk_bytes(5, n=8)
    like = decode(data)
    glb = tmp_path / "b.glb"
    write_gltf(document_scene(like), glb)
    scene = read_gltf(str(glb))
    assert like.codec.from_scene(scene, like=like).encode() == data      # unedited: exact
    # raise grid point (x=3, y=5) by 10 m in every square that shares it
    for p in scene.meshes[0].primitives:
        at = (np.rint(p.positions[:, 0] / 8) == 3) & (np.rint(p.positions[:, 1] / 8) == 5)
        p.positions[at, 2] += 10.0
    out = decode(like.codec.from_scene(scene, like=like).encode())
    diff = block_heights(out.root) - block_heights(like.root)
    assert np.argwhere(diff != 0).tolist() == [[5, 3]] and np.isclose(diff[5, 3], 10.0)
    # the imported block exports to the edited grid
    again = document_scene(out).meshes[0].primitives
    for a, b in zip(again, scene.meshes[0].primitives):
        assert np.array_equal(a.positions, b.positions)
    with pytest.raises(FormatError):
        like.codec.from_scene(scene, like=None)
