"""TRLE codecs on synthetic input: exact bytes, derived views, hostile input."""
from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

import potsherd
from potsherd.cli import main
from potsherd.core.errors import CountError, FormatError, TruncatedError, ValueFormatError
from potsherd.core.layout import Unparsed
from potsherd.document import Document
from potsherd.formats.trle import model
from potsherd.formats.trle.moveables import extract, insert, view_from_trwad, view_from_wad

from trle_fixtures import tiny_trwad_bytes, tiny_trwad_root, tiny_wad_root

# byte offsets in the tiny .trwad: header 8, moveable 18, link count 4, 7 links
LINK_COUNT_AT = 26
MESH_COUNT_AT = 26 + 4 + 28


def test_tiny_trwad_layout_bytes():
    data = tiny_trwad_bytes()
    assert struct.unpack_from("<ii", data, 0) == (170, 1)
    assert struct.unpack_from("<IHHIIh", data, 8) == (47, 2, 296, 1108, 5000, 50)
    assert struct.unpack_from("<i7i", data, LINK_COUNT_AT) == (7, 2, 10, -20, 30, 1900574, 786832,
                                                               2146160)
    assert struct.unpack_from("<I", data, MESH_COUNT_AT)[0] == 2
    # mesh 0 starts with center, u16 radius, u16 flags, u16 vertex count
    assert struct.unpack_from("<3hHHH", data, MESH_COUNT_AT + 4) == (1, -2, 3, 300, 1, 4)
    # the file ends with the sound count 0 and nothing after it
    assert data[-4:] == b"\0\0\0\0"
    doc = potsherd.read(data)
    assert doc.format == "trwad"
    assert doc.params["mesh_pad"] == 0
    assert doc.warnings == []
    assert doc.encode() == data


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_tiny_trwad_json_round_trip(form):
    data = tiny_trwad_bytes()
    doc = potsherd.read(data)
    text = json.dumps(doc.to_json(form))
    assert potsherd.from_json(text).encode() == data


def test_mesh_pad_variant_detected_per_file():
    padded = tiny_trwad_bytes(odd_quads=True, mesh_pad=1)
    plain = tiny_trwad_bytes(odd_quads=True, mesh_pad=0)
    assert len(padded) == len(plain) + 2  # mesh 0 has one quad
    doc = potsherd.read(padded, format="trwad")
    assert doc.params["mesh_pad"] == 1
    assert doc.root["meshes"][0]["pad"] == b"\0\0"
    assert doc.encode() == padded
    assert potsherd.read(plain, format="trwad").params["mesh_pad"] == 0


def test_state_changes_are_interleaved_with_dispatches():
    data = tiny_trwad_bytes()
    # state change (4, 2 dispatches, index 300) then its 2 dispatches, then the sound count
    tail = struct.pack("<3H", 4, 2, 300) + struct.pack("<8h", 0, 1, 51, 3, 1, 2, 50, 0)
    assert data[-4 - len(tail):-4] == tail


def test_commands_have_a_16_bit_count():
    root = potsherd.read(tiny_trwad_bytes()).root
    data = tiny_trwad_bytes()
    kw_at = data.index(struct.pack("<I", 36) + struct.pack("<h", -10))
    cmd_at = kw_at - 2 - 3 * 8
    assert struct.unpack_from("<h", data, cmd_at)[0] == 3
    assert struct.unpack_from("<4h", data, cmd_at + 2) == (5, 1, 0x4000 | 12, 0)
    assert root["commands"].tolist()[2] == [1, 10, -20, 30]


# --------------------------------------------------------------------------
# unusual files: decode with a warning shown by info and validate


def _with_link_count(data: bytes, count: int, words: list[int]) -> bytes:
    return data[:LINK_COUNT_AT] + struct.pack(f"<i{len(words)}i", count, *words) + data[MESH_COUNT_AT:]


def test_link_count_not_4n_minus_1_warns(tmp_path, capsys):
    data = _with_link_count(tiny_trwad_bytes(), 4, [2, 10, -20, 30])  # the "correct" 4(N-1)
    doc = potsherd.read(data, format="trwad")
    assert doc.encode() == data
    assert any("link word count 4 does not match 4 * 2 meshes - 1 = 7" in w for w in doc.warnings)
    path = tmp_path / "odd.trwad"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: link word count 4 does not match" in out
    assert main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["link_words"] == 4
    assert "link word count 4 does not match 4 * 2 meshes - 1 = 7" in info["warnings"]


def test_nonzero_zero_block_and_version_warn():
    root = tiny_trwad_root()
    root["zero_words"] = np.array([0, 77], np.int32)
    root["version"] = 171
    data = Document("trwad", root, {"mesh_pad": 0}).encode()
    doc = potsherd.read(data, format="trwad")
    assert doc.encode() == data
    assert "1 of the 2 words after the meshes are not zero" in doc.warnings
    assert "version 171 (WadMerger writes 170)" in doc.warnings


def test_several_moveables_are_kept_opaque():
    data = struct.pack("<ii", 170, 2) + b"\x01\x02\x03"
    doc = potsherd.read(data, format="trwad")
    assert doc.root["unsupported"] == b"\x01\x02\x03"
    assert any("moveable count 2 is not 1" in w for w in doc.warnings)
    assert doc.encode() == data


def test_sound_section_is_opaque_and_kept():
    data = tiny_trwad_bytes()[:-4] + struct.pack("<i", 1) + bytes(range(30))
    doc = potsherd.read(data, format="trwad")
    assert doc.root["sound_count"] == 1
    assert doc.root["sound_data"] == bytes(range(30))
    assert doc.encode() == data
    assert doc.codec.opaque_bytes(doc) == 30


# --------------------------------------------------------------------------
# malformed files: FormatError with offsets


def test_mesh_count_too_large_is_a_count_error_at_its_offset():
    data = bytearray(tiny_trwad_bytes())
    struct.pack_into("<I", data, MESH_COUNT_AT, 0x7FFFFFFF)
    with pytest.raises(CountError) as e:
        potsherd.read(bytes(data), format="trwad")
    assert e.value.offset == MESH_COUNT_AT + 4
    assert e.value.path == "trwad.meshes"


def test_negative_count_is_refused():
    data = bytearray(tiny_trwad_bytes())
    struct.pack_into("<i", data, MESH_COUNT_AT, -2)
    with pytest.raises(CountError) as e:
        potsherd.read(bytes(data), format="trwad")
    assert e.value.offset == MESH_COUNT_AT + 4


def test_link_count_too_large_is_a_count_error():
    data = bytearray(tiny_trwad_bytes())
    struct.pack_into("<i", data, LINK_COUNT_AT, 1 << 28)
    with pytest.raises(CountError) as e:
        potsherd.read(bytes(data), format="trwad")
    assert e.value.offset == LINK_COUNT_AT + 4
    assert e.value.path == "trwad.link_words"


def test_bad_polygon_shape_names_its_offset():
    data = bytearray(tiny_trwad_bytes())
    first_poly = MESH_COUNT_AT + 4 + 12 + 4 * 6 + 2 + 4 * 6 + 2
    assert struct.unpack_from("<H", data, first_poly)[0] == 9
    struct.pack_into("<H", data, first_poly, 7)
    with pytest.raises(ValueFormatError) as e:
        potsherd.read(bytes(data), format="trwad")
    assert e.value.offset == first_poly
    assert e.value.path == "trwad.meshes[0].polygons[0].shape"


def test_every_truncation_raises_format_error_with_offset():
    data = tiny_trwad_bytes()
    for n in range(len(data)):
        with pytest.raises(FormatError) as e:
            potsherd.read(data[:n], format="trwad")
        assert e.value.offset is not None, n
        assert e.value.offset <= n


def test_truncated_texture_pixels():
    data = tiny_trwad_bytes()
    root = potsherd.read(data).root
    # cut in the middle of texture 1's 9 pixel bytes
    tex_at = data.index(bytes([8, 16, 4, 0, 0, 0, 0, 2]))
    with pytest.raises(TruncatedError) as e:
        potsherd.read(data[:tex_at + 8 + 4], format="trwad")
    assert e.value.offset == tex_at + 8
    assert e.value.path == "trwad.textures[1].pixels"
    assert root["textures"][1]["pixels"] == bytes(range(10, 100, 10))


def test_mutations_raise_only_format_errors():
    data = tiny_trwad_bytes()
    rng = random.Random(1234)
    for _ in range(400):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            doc = potsherd.read(bytes(b), format="trwad")
        except FormatError:
            continue
        assert doc.encode() == bytes(b)
        doc.info()


# --------------------------------------------------------------------------
# derived views


def test_skeleton_follows_push_pop():
    # mesh1 push from 0; mesh2 child of 1; mesh3 pop -> parent 0; mesh4 pop+push (peek)
    words = [2, 1, 2, 3, 0, 4, 5, 6, 1, 7, 8, 9, 3, 10, 11, 12, 0, 13, 14, 15, 99, 98, 97]
    bones = model.skeleton(words, 6)
    assert [b["parent"] for b in bones] == [-1, 0, 1, 0, 3, 4]
    assert bones[3] == {"parent": 0, "offset": (7, 8, 9), "flags": 1}
    words2 = [2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]
    assert [b["parent"] for b in model.skeleton(words2, 6)] == [-1, 0, 1, 2, 1, 0]
    with pytest.raises(ValueFormatError):
        model.skeleton([2, 0, 0], 2)


def test_keyframes_decode_packed_and_single_axis_angles():
    root = potsherd.read(tiny_trwad_bytes()).root
    kf = model.decode_keyframes(root["keyframe_words"], 12, 2, 2)
    assert kf["bbox"].tolist()[0] == [-10, 10, -20, 0, -5, 5]
    assert kf["offset"].tolist() == [[0, -100, 0], [0, -110, 5]]
    deg = np.degrees(kf["rotation"])
    np.testing.assert_allclose(deg[0, 0], [90, 0, 0])
    np.testing.assert_allclose(deg[1, 0], [0, 180, 1023 * 360 / 1024])
    np.testing.assert_allclose(deg[:, 1], [[0, 90, 0], [0, 180, 0]])
    q = model.quaternions_yxz(kf["rotation"][0, 0])
    np.testing.assert_allclose(q, [np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)], atol=1e-12)
    # yaw then pitch: qY * qX
    q2 = model.quaternions_yxz(np.array([np.pi / 2, np.pi / 2, 0]))
    np.testing.assert_allclose(q2, [0.5, 0.5, -0.5, 0.5], atol=1e-12)
    with pytest.raises(ValueFormatError):
        model.decode_keyframes(root["keyframe_words"], 12, 4, 2)


def test_command_stream_round_trip():
    words = np.array([1, 10, 20, 30, 3, 5, 4, 0x4000 | 9, 4, 2, 7, 8, 6, 1, 2], np.int16)
    cmds = model.parse_command_stream(words, 0, 6)
    assert cmds == [[1, 10, 20, 30], [3, 0, 0, 0], [5, 4, 0x4000 | 9, 0], [4, 0, 0, 0],
                    [2, 7, 8, 0], [6, 1, 2, 0]]
    assert model.command_stream(cmds) == words.tolist()
    with pytest.raises(ValueFormatError):
        model.parse_command_stream(np.array([9, 0], np.int16), 0, 1)
    with pytest.raises(ValueFormatError):
        model.parse_command_stream(np.array([1, 0], np.int16), 0, 1)


def test_texture_words():
    assert model.texture_index(9, 0xFFFF) == (1, 0x8000)
    assert model.texture_index(9, 25) == (25, 0)
    assert model.texture_index(8, 0xA005) == (5, 0xA000)
    assert model.texture_word(9, 1, 0x8000) == 0xFFFF
    assert model.texture_word(8, 5, 0xA000) == 0xA005
    with pytest.raises(ValueFormatError):
        model.texture_word(9, 0, 0x8000)


def test_texture_images_are_rgb():
    doc = potsherd.read(tiny_trwad_bytes())
    images = dict(doc.codec.textures(doc))
    img = images["texture0000"]
    assert img.mode == "RGB" and img.size == (2, 2)
    assert [img.getpixel(p) for p in [(0, 0), (1, 0), (0, 1), (1, 1)]] == [
        (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 0, 255)]
    assert images["texture0001"].size == (1, 3)


# --------------------------------------------------------------------------
# extract / insert without the corpus


def test_insert_into_empty_wad_and_extract_back():
    t = potsherd.read(tiny_trwad_bytes()).root
    wad = tiny_wad_root()
    data = Document("tr4wad", wad, {"mesh_pad": 1}).encode()
    back = potsherd.read(data, format="tr4wad")
    assert back.encode() == data
    r = back.root
    assert model.records(r["moveables"]) == [{"object_id": 47, "mesh_count": 2, "first_mesh_pointer": 0,
                               "links_index": 0, "keyframe_offset": 0, "anim_index": 0}]
    assert r["link_words"].tolist() == [2, 10, -20, 30]  # junk words dropped
    assert r["command_words"].tolist() == [5, 1, 0x4000 | 12, 3, 1, 10, -20, 30]
    assert [(a["next_anim"], a["keyframe_offset"], a["command_offset"]) for a in r["animations"]] \
        == [(1, 0, 0), (0, 48, 4)]
    assert r["dispatches"].tolist() == [[0, 1, 1, 3], [1, 2, 0, 0]]
    assert r["state_changes"].tolist() == [[4, 2, 0]]
    # the mirrored quad of texture 0 needs no copy here; page 0 holds both textures
    assert r["page_byte_count"] == model.PAGE_BYTES and r["texture_count"] == 2
    assert r["meshes"][0]["pad"] == b"\0\0" and r["meshes"][1]["pad"] == b""
    assert view_from_wad(r, 47) == view_from_trwad(t)
    again = extract(r, 47)
    assert again["link_words"].tolist() == [2, 10, -20, 30, 0, 0, 0]  # nothing follows
    assert again["commands"].tolist() == t["commands"].tolist()


def test_mirrored_quad_on_texture_zero_gets_a_copy():
    wad = tiny_wad_root()  # its texture 0 is the 2x2 red/green/blue/magenta block
    root = tiny_trwad_root(odd_quads=False)
    root["textures"] = root["textures"][::-1]  # the mirrored quad (texture 1) now uses that block
    t = potsherd.read(Document("trwad", root, {"mesh_pad": 0}).encode()).root
    new = insert(wad, dict(t, moveable=dict(t["moveable"], object_id=48)))
    # both textures deduplicate; the mirrored quad gets a copy of texinfo 0
    assert len(new["textures"]) == 3
    assert new["textures"][2] == new["textures"][0]
    assert new["page_byte_count"] == wad["page_byte_count"]
    quads = [p for p in new["meshes"][2]["polygons"] if p["shape"] == 9]
    assert [model.texture_index(9, p["texture"]) for p in quads] == [(1, 0), (2, 0x8000)]
    view = view_from_trwad(t)
    view["object_id"] = 48
    assert view_from_wad(new, 48) == view


def test_insert_replaces_in_place_and_keeps_neighbours():
    wad = tiny_wad_root()
    t = potsherd.read(tiny_trwad_bytes()).root
    other = dict(t, moveable=dict(t["moveable"], object_id=10))
    wad2 = insert(wad, other)  # id 10 goes before 47
    assert [m["object_id"] for m in wad2["moveables"]] == [10, 47]
    assert [m["anim_index"] for m in wad2["moveables"]] == [0, 2]
    t3 = dict(t, animations=t["animations"][:1], animation_count=1, command_count=2,
              commands=t["commands"][:2], keyframe_words=t["keyframe_words"][:24],
              keyframe_word_count=24)
    t3["animations"] = [dict(model.records(t3["animations"])[0], next_anim=50)]
    wad3 = insert(wad2, dict(t3, moveable=dict(t["moveable"], object_id=10)))
    assert [m["object_id"] for m in wad3["moveables"]] == [10, 47]
    assert len(wad3["animations"]) == 3
    assert wad3["moveables"][1]["anim_index"] == 1
    assert wad3["moveables"][1]["keyframe_offset"] == 48
    assert view_from_wad(wad3, 47) == view_from_wad(wad, 47)
    assert view_from_wad(wad3, 10)["animations"][0]["next_anim"] == 0
    data = Document("tr4wad", wad3, {"mesh_pad": 1}).encode()
    assert potsherd.read(data, format="tr4wad").encode() == data


def test_cli_extract_insert_textures(tmp_path, capsys):
    wad_path = tmp_path / "tiny.wad"
    wad_path.write_bytes(Document("tr4wad", tiny_wad_root(), {"mesh_pad": 1}).encode())
    out = tmp_path / "m.trwad"
    assert main(["trle", "extract", str(wad_path), "--moveable", "MUMMY", "-o", str(out)]) == 0
    t = potsherd.read(str(out))
    assert t.root["moveable"]["object_id"] == 47
    new = tmp_path / "new.wad"
    assert main(["trle", "insert", "-", str(out), "-o", str(new)]) == 0
    assert view_from_wad(potsherd.read(str(new)).root, 47) == view_from_trwad(t.root)
    assert main(["trle", "textures", str(out), "-o", str(tmp_path / "png")]) == 0
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["texture0000.png",
                                                                   "texture0001.png"]
    assert main(["trle", "skeleton", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == [
        {"parent": -1, "offset": [0, 0, 0], "flags": 0},
        {"parent": 0, "offset": [10, -20, 30], "flags": 2}]
    assert main(["trle", "extract", str(wad_path), "--moveable", "3", "-o", str(out)]) == 1
    assert main(["trle", "extract", str(wad_path), "--moveable", "all", "-o",
                 str(tmp_path / "all")]) == 0
    assert [p.name for p in (tmp_path / "all").iterdir()] == ["047_MUMMY.trwad"]
    assert (tmp_path / "all" / "047_MUMMY.trwad").read_bytes() == out.read_bytes()


def test_text_lists_round_trip():
    for data in [b"", b"LARA:Z:\\a.prk\nHAIR:b\n", b"no newline", b"a\r\nb\r\n"]:
        doc = potsherd.read(data, format="tr4was")
        assert doc.encode() == data
        for form in ("wire", "readable"):
            assert potsherd.from_json(json.dumps(doc.to_json(form))).encode() == data
    assert potsherd.read(b"LARA:x\nHAIR:y\n", format="tr4was").info()["names"] == ["LARA", "HAIR"]
    with pytest.raises(FormatError):
        potsherd.read(b"a\0b", format="tr4sam")


def test_sfx_variants():
    v129 = struct.pack("<370h", *([-1] * 370)) + struct.pack("<I", 1) + struct.pack(
        "<HBBBBH", 3, 200, 10, 0, 0, 4) + struct.pack("<II", 1, 77)
    doc = potsherd.read(v129, format="tr4sfx")
    assert doc.params["map_size"] == 370 and doc.encode() == v129
    v130 = struct.pack("<2048h", *([-1] * 2048)) + struct.pack("<II", 0, 0)
    doc = potsherd.read(v130, format="tr4sfx")
    assert doc.params["map_size"] == 2048 and doc.encode() == v130
    padded = struct.pack("<370h", *([-1] * 370)) + bytes(20)
    doc = potsherd.read(padded, format="tr4sfx")
    assert doc.trailing == bytes(12) and doc.encode() == padded


def _tiny_wad_bytes(version: int = 129) -> bytes:
    return Document("tr4wad", dict(tiny_wad_root(), version=version), {"mesh_pad": 1}).encode()


@pytest.mark.parametrize("version", [129, 130])
def test_wad_versions(version):
    data = _tiny_wad_bytes(version)
    doc = potsherd.read(data)
    assert doc.format == "tr4wad" and doc.root["version"] == version
    assert doc.encode() == data
    info = doc.info()
    assert info["moveables"] == [{"id": 47, "name": "MUMMY", "meshes": 2, "animations": 2}]
    assert (info["textures"], info["animations"], info["meshes"]) == (2, 2, 2)


def test_wad_hostile_input():
    data = _tiny_wad_bytes()
    with pytest.raises(potsherd.MagicError) as e:
        potsherd.read(struct.pack("<I", 131) + data[4:], format="tr4wad")
    assert e.value.offset == 0
    bad = bytearray(data)
    struct.pack_into("<I", bad, 4, 1 << 30)  # texture count
    with pytest.raises(CountError) as e:
        potsherd.read(bytes(bad), format="tr4wad")
    assert (e.value.offset, e.value.path) == (8, "wad.textures")
    for n in range(0, len(data), 97):
        with pytest.raises(FormatError) as e:
            potsherd.read(data[:n], format="tr4wad")
        assert e.value.offset is not None


def test_unparsable_mesh_blob_is_kept_raw_with_a_warning():
    data = bytearray(_tiny_wad_bytes())
    root = potsherd.read(bytes(data)).root
    blob_at = 4 + 4 + 16 + 4 + model.PAGE_BYTES + 4 + 8 + 4
    assert struct.unpack_from("<3h", data, blob_at) == (1, -2, 3)
    first_shape = blob_at + 12 + 4 * 6 + 2 + 4 * 6 + 2
    struct.pack_into("<H", data, first_shape, 5)
    doc = potsherd.read(bytes(data))
    assert isinstance(doc.root["meshes"], Unparsed)
    assert len(doc.root["meshes"]) == 2 * root["mesh_word_count"]
    assert any("do not parse as their content" in w and "polygon shape 5" in w for w in doc.warnings)
    assert doc.to_json("wire")["root"]["meshes"] == {"raw": bytes(doc.root["meshes"]).hex()}
    assert doc.encode() == bytes(data)
    assert doc.codec.opaque_bytes(doc) == len(doc.root["meshes"])
    assert potsherd.from_json(json.dumps(doc.to_json("readable"))).encode() == bytes(data)
