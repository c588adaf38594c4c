"""Interiors: .dis (layout table), .dig/.dil (PERS classes as data) decode into
fields, round-trip, and export to glTF textured and lit."""
from __future__ import annotations

import json
from pathlib import Path
import struct

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.export.gltf import document_scene
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.interiors import dis_names, unpack_colors


def decode(data: bytes, name: str):
    doc = potsherd._registry.decode(data, path=name)
    assert doc.encode() == data
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.dumps(doc.to_json(form))).encode() == data
    return doc


def test_dis_fields_and_names():
    doc = decode(we.dis_bytes("hall"), "hall.dis")
    assert doc.format == "dis" and doc.codec.opaque_bytes(doc) == 0
    assert dis_names(doc) == {"geometry": ["hall-0.dig"], "lighting": ["hall-0.dil"],
                              "states": ["State 0"], "materialList": "hall.dml"}
    assert doc.root["version"] == 3 and doc.root["lods"][0]["minPixels"] == 0


def test_dig_and_dil_decode_every_byte():
    g = decode(we.dig_bytes(), "x.dig")
    assert g.format == "dig" and g.codec.opaque_bytes(g) == 0
    p = g.root["payload"]
    assert (p["nSurfaces"], p["nVertices"], p["nPoints3"]) == (6, 24, 8)
    assert p["surfaces"].dtype.itemsize == 20 and p["surfaces"]["material"].tolist() == [0, 1, 0, 0, 0, 0]
    assert p["points3"]["z"].tolist() == [0, 0, 0, 0, 2, 2, 2, 2]
    lt = decode(we.dil_bytes(), "x.dil")
    assert lt.format == "dil" and lt.codec.opaque_bytes(lt) == 0
    lp = lt.root["payload"]
    assert lp["huffmanCompressed"] == 1 and lp["huffmanNodes"]["indexOne"].tolist() == [-2]
    assert lp["mapData"]["value"].tolist()[:2] == [0x00, 0x0F]
    # without the Huffman flag the tables are absent (a conditional payload entry)
    raw = bytearray(we.dil_bytes())
    at = raw.index(b"\x01" + struct.pack("<2i", 1, 2))
    short = bytes(raw[:at]) + b"\x00"
    short = short[:4] + struct.pack("<I", len(short) - 8) + short[8:]
    lt2 = decode(short, "y.dil")
    assert "huffmanNodes" not in lt2.root["payload"]


def test_detection_by_class_name_without_a_file_name():
    assert potsherd.read(we.dig_bytes(), format="dig").format == "dig"
    from potsherd.formats.darkstar.world import DIG, DIL
    assert DIG.sniff(we.dig_bytes()) and not DIG.sniff(we.dil_bytes()) and DIL.sniff(we.dil_bytes())


def test_colour_nibbles():
    assert unpack_colors(np.array([0x0F00, 0x00F0, 0x000F, 0xF000])).tolist() == [
        [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]


@pytest.fixture
def tree(tmp_path):
    game = tmp_path / "game.vol"
    game.mkdir()
    for name, data in we.interior_files():
        (game / name.upper() if name.endswith(".bmp") else game / name).write_bytes(data)
    return game


def test_interior_exports_textured_and_lit(tree):
    doc = potsherd.read(tree / "cube.dis")
    scene = document_scene(doc, {"ambient": 0.0})
    prims = scene.meshes[0].primitives
    assert sum(len(p.indices) // 3 for p in prims) == 12                 # 6 quads
    assert [scene.materials[p.material].name for p in prims] == ["wall.bmp", "roof.bmp"]
    assert all(scene.materials[p.material].base_color_texture is not None for p in prims)
    assert scene.materials[prims[1].material].alpha_mode == "MASK"       # transparent roof.bmp
    # wall.bmp's bitmap is opaque, but its material is flagged transparent (0x1000):
    # MASK, with palette index 0 clear in the texture
    wall = scene.materials[prims[0].material]
    assert wall.alpha_mode == "MASK"
    from PIL import Image
    import io
    png = np.asarray(Image.open(io.BytesIO(scene.images[wall.base_color_texture.image].data)))
    idx = potsherd._registry.decode(we.bitmap_bytes(16, 16, mips=1), path="w.bmp")
    from potsherd.formats.darkstar.phoenix import mip_levels
    zero = mip_levels(idx.root)[0] == 0
    assert zero.any() and (png[..., 3][zero] == 0).all() and (png[..., 3][~zero] == 255).all()
    assert any("world.ppl" in w for w in scene.warnings)                 # the palette is named
    # roof (surface 1): textureSize 16 over an 8-pixel bitmap -> uvs 0..2
    assert prims[1].uvs[0].max() == pytest.approx(2.0)
    # vertex colours: surface 0 white, 3-5 red / green / blue (constant light maps)
    cols = {tuple(c) for c in np.round(prims[0].colors, 3).tolist()}
    assert {(1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1)} <= cols
    # surface 2's Huffman map: bits 0,1,1,0 -> black, red, red, black at the corners
    assert {(0, 0, 0)} <= cols


def test_interior_winding_faces_outward(tree):
    scene = document_scene(potsherd.read(tree / "cube.dis"), {})
    for prim in scene.meshes[0].primitives:
        tri = prim.positions[prim.indices.reshape(-1, 3)]
        normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        outward = tri.mean(axis=1) - np.array([0, 0, 1.0])    # cube centre in Darkstar space
        assert (np.einsum("ij,ij->i", normal, outward) > 0).all()


def test_missing_files_fall_back_or_refuse(tree):
    (tree / "cube.dml").unlink()
    scene = document_scene(potsherd.read(tree / "cube.dis"), {})
    assert any("material list 'cube.dml' not found" in w for w in scene.warnings)
    assert all(m.base_color_texture is None for m in scene.materials)
    (tree / "cube-0.dig").unlink()
    from potsherd.core.errors import FormatError
    with pytest.raises(FormatError, match="geometry files"):
        document_scene(potsherd.read(tree / "cube.dis"), {})


def test_shape_textures_come_from_volumes_on_the_data_root(tmp_path):
    """A shape alone in its folder; its WOOD1.bmp (named WOOD1.bmp in the material list,
    stored as wood1.BMP) inside a volume under --data-root."""
    from dts_fixtures import shape_bytes
    from potsherd.formats.darkstar.volumes import build_volume
    shape_dir, data = tmp_path / "shapes", tmp_path / "data"
    shape_dir.mkdir()
    data.mkdir()
    (shape_dir / "s.dts").write_bytes(shape_bytes(8))
    (data / "art.vol").write_bytes(build_volume([("wood1.BMP", we.bitmap_bytes(8, 8, mips=1)),
                                                 ("w.ppl", we.pl98_bytes(translucent=False))]))
    doc = potsherd.read(shape_dir / "s.dts")
    plain = document_scene(doc, {})
    assert all(m.base_color_texture is None for m in plain.materials)
    assert plain.warnings == []                              # nothing in the tree: silent
    scene = document_scene(doc, {"data_root": str(data)})
    textured = [m for m in scene.materials if m.base_color_texture is not None]
    assert [m.name for m in textured] == ["WOOD1.bmp"]
    assert any("'x.bmp' not found" in w for w in scene.warnings)
    assert any("art.vol::w.ppl" in w for w in scene.warnings)
    from PIL import Image
    import io
    img = np.asarray(Image.open(io.BytesIO(scene.images[textured[0].base_color_texture.image].data)))
    assert (img[..., :3] == we.gradient_image(8, 8)).all()


def test_mutated_interior_trees_raise_only_format_errors(tmp_path):
    """Bytes of the .dis/.dig/.dil/.dml/.bmp changed at random: the export either
    works or refuses with a FormatError (never another exception)."""
    import os
    import random
    from potsherd.core.errors import FormatError
    rng = random.Random(20261201)
    files = dict(we.interior_files())
    refused = 0
    for _ in range(150):
        for name, data in files.items():
            b = bytearray(data)
            if name != "world.ppl" and rng.random() < 0.6:
                for _ in range(rng.randint(1, 6)):
                    b[rng.randrange(len(b))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
            (tmp_path / name).write_bytes(bytes(b))
        os.utime(tmp_path, None)
        try:
            doc = potsherd.read(tmp_path / "cube.dis")
            doc.codec.to_scene(doc, source_path=str(tmp_path / "cube.dis"))
        except FormatError:
            refused += 1
    assert 0 < refused < 150


# ----------------------------------------------------------------------------
# older and mission versions: ITRGeometry v4, ITRLighting v4, ITRMissionLighting v7


def test_version_4_geometry_decodes_every_byte_into_its_leaf_list():
    g = decode(we.dig_v4_bytes(), "x.dig")
    assert g.codec.opaque_bytes(g) == 0 and g.root["version"] == 4
    p = g.root["payload"]
    assert p["nLeaves"] == 3 and "solidLeaves" not in p and "emptyLeaves" not in p
    leaves = p["leaves"]
    assert leaves.dtype.itemsize == 48
    assert leaves["flags"].tolist() == [2, 1, 0] and leaves["reserved"].tolist() == [0x4211D0, 0, 0]
    assert leaves["surfaceIndex"].tolist() == [0, 3, 0] and leaves["planeCount"].tolist() == [0, 1, 0]
    assert leaves["maxZ"].tolist() == [2.0, 2.0, 2.0]
    # the rest is laid out as in version 7: same surfaces, vertices, points
    g7 = decode(we.dig_bytes(), "y.dig").root["payload"]
    for key in ("surfaces", "vertices", "points3", "points2", "planes"):
        assert p[key].tobytes() == g7[key].tobytes(), key
    # a leaf count past the bytes left is refused at the leaf table, not read
    bad = bytearray(we.dig_v4_bytes())
    at = bad.index(struct.pack("<8i", 6, 0, 3, 0, 24, 8, 4, 6))
    bad[at + 8:at + 12] = struct.pack("<i", 10**6)
    with pytest.raises(potsherd.FormatError) as e:
        potsherd._registry.decode(bytes(bad), path="bad.dig")
    assert "leaves" in str(e.value)


def test_version_4_lighting_has_no_huffman_tables():
    lt = decode(we.dil_v4_bytes(), "x.dil")
    assert lt.codec.opaque_bytes(lt) == 0 and lt.root["version"] == 4
    lp = lt.root["payload"]
    assert "huffmanCompressed" not in lp and lp["nMapData"] == 16
    assert lp["surfaces"]["mapIndex"].tolist()[:3] == [-1, 0, 8]


def test_mission_lighting_index_table_is_decoded_into_rows():
    data = we.mission_dil_bytes()
    lt = decode(data, "m.dil")
    assert lt.format == "dil"
    lp = lt.root["payload"]
    assert lp["nIndexEntries"] == 2
    assert lp["index"]["rows"].tolist() == [(0, 0), (8, 8)]
    assert lt.codec.opaque_bytes(lt) == 0          # the LZH stream is decoded
    assert lp["huffmanNodes"]["indexOne"].tolist() == [-2]
    # the encoder reproduces this stream, so JSON carries only the rows
    assert set(lt.to_json("readable")["root"]["payload"]["index"]) == {"rows"}


def test_mission_lighting_stream_kept_while_unchanged_recompressed_when_edited():
    from potsherd.formats.darkstar import lzh
    data = we.mission_dil_bytes()
    # the writer's last byte is never used by the reader: another value there
    # gives a stream the encoder does not reproduce, holding the same rows
    odd = data[:-1] + bytes([data[-1] ^ 0x5A])
    doc = decode(odd, "m.dil")
    j = doc.to_json("readable")["root"]["payload"]["index"]
    assert bytes.fromhex(j["stream"]) == odd[-8:] and j["crc"] == doc.root["payload"]["index"]["crc"]
    assert doc.root["payload"]["index"]["rows"].tolist() == [(0, 0), (8, 8)]
    doc.root["payload"]["index"]["rows"]["destIndex"][1] = 4
    out = doc.encode()
    stream = lzh.encode(struct.pack("<4i", 0, 0, 8, 4))
    head = len(odd) - 8                   # where the stream starts (the block before it unchanged)
    assert out[head:head + len(stream)] == stream and out[8:head] == odd[8:head]
    back = potsherd._registry.decode(out, path="m.dil").root["payload"]["index"]
    assert back["rows"].tolist() == [(0, 0), (8, 4)] and back["stream"] == stream
    # edited through JSON too: the stale stream (CRC of other rows) is not reused
    j = doc.to_json("wire")
    j["root"]["payload"]["index"] = {"rows": {"srcIndex": [0, 8], "destIndex": [0, 12]},
                             "stream": odd[-8:].hex(), "crc": 1}
    again = potsherd.from_json(json.dumps(j)).encode()
    stream = lzh.encode(struct.pack("<4i", 0, 0, 8, 12))
    assert again[head:head + len(stream)] == stream


def test_mission_lighting_index_rows_and_count_must_agree():
    from potsherd.core.errors import EncodeError, JsonFormatError
    doc = potsherd._registry.decode(we.mission_dil_bytes(), path="m.dil")
    lp = doc.root["payload"]
    three = np.array([(0, 0), (8, 8), (9, 12)], dtype=lp["index"]["rows"].dtype)
    lp["index"] = {"rows": three}
    with pytest.raises(EncodeError) as e:
        doc.encode()
    assert "3 rows" in str(e.value) and "nIndexEntries" in str(e.value)
    lp["nIndexEntries"] = 3              # with its count: a new stream of the three rows
    back = potsherd._registry.decode(doc.encode(), path="m.dil").root["payload"]
    assert back["index"]["rows"].tolist() == [(0, 0), (8, 8), (9, 12)]
    # JSON that is not a table (or a stream without its CRC) is refused by path
    j = doc.to_json("readable")
    for bad in ({"rows": {"srcIndex": [0]}}, {"rows": three.tolist()},
                {"rows": {"srcIndex": [0], "destIndex": [0]}, "stream": "00"},
                {"rows": {"srcIndex": [0], "destIndex": [0]}, "stream": "00", "crc": -1}):
        j["root"]["payload"]["index"] = bad
        with pytest.raises(JsonFormatError) as e:
            potsherd.from_json(json.dumps(j))
        assert "index" in (e.value.path or ""), bad


def test_hostile_mission_lighting_index_streams_are_format_errors():
    from potsherd.core.errors import FormatError
    data = we.mission_dil_bytes()
    head = len(data) - 8 - 4              # the count, then the 8-byte stream
    assert struct.unpack_from("<i", data, head)[0] == 2
    cases = {"truncated": data[:-3], "count -1": data[:head] + struct.pack("<i", -1) + data[head + 4:],
             "count huge": data[:head] + struct.pack("<i", 1 << 28) + data[head + 4:],
             "count past the stream": data[:head] + struct.pack("<i", 40) + data[head + 4:]}
    for what, bad in cases.items():
        bad = bad[:4] + struct.pack("<I", len(bad) - 8) + bad[8:]   # the PERS size follows
        with pytest.raises(FormatError) as e:
            potsherd._registry.decode(bad, path="m.dil", format="dil")
        assert e.value.offset is not None and e.value.offset >= head, what
        assert "index" in str(e.value), what


def _v4_interior(tmp_path):
    files = dict(we.interior_files())
    files["cube-0.dig"], files["cube-0.dil"] = we.dig_v4_bytes(), we.dil_v4_bytes()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path / "cube.dis"


def test_interior_of_version_4_parts_exports_lit(tmp_path):
    scene = document_scene(potsherd.read(_v4_interior(tmp_path)), {"ambient": 0.0})
    assert scene.extras["lighting"] == "cube-0.dil"
    assert not [w for w in scene.warnings if "light" in w]
    colours = {}
    for prim in scene.meshes[0].primitives:
        for c in np.unique(np.round(prim.colors.astype(np.float64), 4), axis=0):
            colours[tuple(c.tolist())] = 1
    # surface 0 white, surface 1 the raw red/green/blue/white map, surface 2 the grey map
    assert (1.0, 0.0, 0.0) in colours and (0.0, 1.0, 0.0) in colours
    # the grey nibble 8 is a display value the renderer multiplies by: linear 0.2462
    assert (round(float(srgb_formula.decode(8 / 15)), 4),) * 3 in colours
    assert (round(8 / 15, 4),) * 3 not in colours


CORPUS_GARAGE = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / \
    "darkstar-world" / "gameobjects.vol"


@pytest.mark.skipif(not CORPUS_GARAGE.is_dir(), reason="Darkstar world corpus absent")
def test_garage_with_version_4_levels_exports_with_light_maps(tmp_path):
    """hgaragee's volume holds version-4 geometry (-03, -04) and lighting (-001, -030 ...)
    that its .dis does not name; pointing the names at them (same lengths) exports them lit."""
    import shutil
    for p in CORPUS_GARAGE.glob("hgaragee*"):
        shutil.copy(p, tmp_path / p.name)
    dis = (CORPUS_GARAGE / "hgaragee.dis").read_bytes()
    dis = dis.replace(b"hGarageE-00.dig", b"hGarageE-03.dig").replace(
        b"hGarageE-000.dil", b"hGarageE-030.dil").replace(b"hGarageE-010.dil", b"hGarageE-011.dil")
    (tmp_path / "v4.dis").write_bytes(dis)
    doc = potsherd.read(tmp_path / "v4.dis")
    for lod, (geometry, lighting, surfaces) in enumerate([("hGarageE-03.dig", "hGarageE-030.dil", 40),
                                                          ("hGarageE-01.dig", "hGarageE-011.dil", 68)]):
        scene = document_scene(doc, {"lod": lod})
        assert (scene.extras["geometry"], scene.extras["lighting"]) == (geometry, lighting)
        assert not [w for w in scene.warnings if "light" in w], scene.warnings
        cols = np.concatenate([p.colors for p in scene.meshes[0].primitives])
        assert cols.std() > 0.1            # light maps, not one flat colour
        lt = potsherd.read(tmp_path / lighting.lower())
        assert len(lt.root["payload"]["surfaces"]) == surfaces


TRIBES_MISSIONS = CORPUS_GARAGE.parents[1] / "tribes" / "base" / "missions"


def _corpus_interior_parts():
    from potsherd.formats.darkstar.volumes import list_members, member_bytes
    out = [(p.name, p.read_bytes()) for p in sorted(CORPUS_GARAGE.glob("*.di[lg]"))]
    for vol in sorted(TRIBES_MISSIONS.glob("*.vol")):
        doc = potsherd.read(vol)
        out += [(m.name, member_bytes(doc, m)) for m in list_members(doc)
                if m.name.lower().endswith((".dil", ".dig"))]
    return out


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS_GARAGE.is_dir() or not TRIBES_MISSIONS.is_dir(),
                    reason="Darkstar world / Tribes corpus absent")
def test_every_corpus_dil_and_dig_round_trips_decoded():
    """Every .dil/.dig of the corpus (Starsiege v4 and v7, Tribes mission lighting)
    round-trips through both JSON forms with nothing opaque (the mission lighting's
    LZH index table decoded into rows, its stream re-encoded or kept as stored)."""
    parts = _corpus_interior_parts()
    versions = set()
    tables = reproduced = 0
    for name, data in parts:
        doc = decode(data, name)
        block = doc.root
        versions.add((bytes(block["className"]).decode(), block["version"]))
        lp = block["payload"]
        assert isinstance(lp, dict), name
        assert doc.codec.opaque_bytes(doc) == 0, name
        if "index" in lp:
            rows = lp["index"]["rows"]
            assert len(rows) == lp["nIndexEntries"], name
            # the engine searches the table by halves: sorted, offsets inside mapData
            assert (np.diff(rows["srcIndex"]) > 0).all(), name
            assert ((rows["destIndex"] >= 0) & (rows["destIndex"] < lp["nMapData"])).all(), name
            reproduced += "stream" not in doc.to_json("wire")["root"]["payload"]["index"]
            tables += 1
    assert len(parts) >= 140
    # every Tribes mission lighting file; the encoder gives back every stream,
    # the 8 tables of 48 bytes (under F = 60, whose look-ahead reaches into the
    # engine's uninitialised ring) included
    assert tables == 117 and reproduced == 117
    # mission lighting's own surfaces index its own map data (no table needed)
    from potsherd.formats.darkstar.interiors import light_map
    for name, data in parts:
        lp = potsherd._registry.decode(data, path=name).root["payload"]
        if "index" in lp:
            budget = [1 << 22]
            lit = [light_map(lp, i, budget) for i in range(len(lp["surfaces"]))]
            assert all(m is not None for m, k in zip(lit, lp["surfaces"]["mapIndex"]) if k >= 0), name
    assert versions == {("ITRGeometry", 4), ("ITRGeometry", 7), ("ITRLighting", 4),
                        ("ITRLighting", 7), ("ITRMissionLighting", 7)}


def test_interior_lit_by_mission_lighting(tmp_path):
    files = dict(we.interior_files())
    files["cube-0.dil"] = we.mission_dil_bytes()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    scene = document_scene(potsherd.read(tmp_path / "cube.dis"), {"ambient": 0.0})
    assert scene.extras["lighting"] == "cube-0.dil"
    assert not [w for w in scene.warnings if "light" in w]
    cols = np.concatenate([p.colors for p in scene.meshes[0].primitives])
    assert (np.isclose(cols, [1.0, 0.0, 0.0]).all(axis=1)).any()    # surface 1's red texel
