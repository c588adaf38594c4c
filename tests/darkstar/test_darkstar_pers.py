"""The PERS block layer: opaque blocks, size flag, pads, slack, trailing bytes,
size regeneration after edits, and hostile input (exact offsets and paths)."""
from __future__ import annotations

import json
import random
import struct

import pytest

import potsherd
from potsherd.core.errors import (CountError, EncodeError, FormatError, JsonFormatError,
                                  LimitError, MagicError, TruncatedError, ValueFormatError)

from dts_fixtures import block_doc, envelope, mesh_bytes, mesh_doc, pers, shape_bytes, shape_doc

P = struct.pack


def _roundtrip(data: bytes, fmt: str = "dts") -> potsherd.Document:
    doc = potsherd.read(data, format=fmt)
    assert potsherd.write(doc) == data
    for form in ("wire", "readable"):
        j = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.write(potsherd.from_json(j)) == data
    return doc


@pytest.mark.parametrize("cls,version", [("TS::TransAnimMesh", 1), ("TS::Shape", 1), ("TS::Shape", 9),
                                         ("TS::MaterialList", 1), ("TS::CelAnimMesh", 4),
                                         ("ITRGeometry", 3)])
def test_unknown_class_or_version_is_an_opaque_block(cls: str, version: int):
    data = pers(cls, version, b"\x01\x02\x03\x04")
    doc = _roundtrip(data)
    assert doc.root["payload"] == b"\x01\x02\x03\x04"
    assert doc.root["className"] == cls.encode() and doc.root["version"] == version
    assert doc.codec.opaque_bytes(doc) == 4
    assert doc.to_json("readable")["root"]["payload"] == "01020304"
    info = doc.info()
    assert info["opaque_payload_bytes"] == 4 and info["class"] == cls


def test_opaque_mesh_inside_a_shape():
    root = shape_doc(8)
    root["payload"]["meshes"] = [block_doc("TS::TransAnimMesh", 1, "0a0b0c0d")]
    data = potsherd.write(potsherd.from_json(envelope(root)))
    doc = _roundtrip(data)
    mesh = doc.root["payload"]["meshes"][0]
    assert mesh["payload"] == b"\x0a\x0b\x0c\x0d"
    assert mesh["size"] == 2 + 18 + 4 + 4
    assert doc.codec.opaque_bytes(doc) == 4
    assert doc.info()["objects"][0]["mesh_class"] == "TS::TransAnimMesh v1"


def test_align_dword_flag_pads_to_four():
    data = pers("Foo", 3, b"\x01", flag=True)
    assert struct.unpack_from("<I", data, 4)[0] == 0x80000000 | 11
    assert len(data) == 8 + 12
    doc = _roundtrip(data)
    assert doc.root["pad"] == b"\0" and doc.root["namePad"] == b"\0"
    data = pers("Foo", 3, b"", flag=True)
    assert _roundtrip(data).root["pad"] == b"\0\0"


def test_odd_size_pad_value_kept_and_may_be_missing_at_eof():
    block = pers("Foo", 3, b"\x01")            # 11 data bytes + 1 pad
    assert len(block) == 20
    data = block[:-1] + b"\xAA"
    doc = _roundtrip(data)
    assert doc.root["pad"] == b"\xAA"
    assert doc.to_json("readable")["root"]["pad"] == "aa"
    doc = _roundtrip(block[:-1])               # the engine's known missing pad
    assert doc.root["pad"] == b"" and doc.trailing == b""


def test_class_name_pad_byte_value_kept():
    data = bytearray(shape_bytes(6))
    assert data[19] == 0
    data[19] = 0x58
    doc = _roundtrip(bytes(data))
    assert doc.root["namePad"] == b"X"


def test_slack_inside_a_block_is_kept():
    mesh = mesh_bytes(3)
    size = struct.unpack_from("<I", mesh, 4)[0]
    data = b"PERS" + P("<I", size + 4) + mesh[8:8 + size] + b"SLAK"
    doc = _roundtrip(data)
    assert doc.root["slack"] == b"SLAK"
    assert doc.codec.opaque_bytes(doc) == 4
    assert doc.info()["slack_bytes"] == 4


def test_trailing_bytes_after_the_top_level_block():
    data = shape_bytes(5) + b"stale"
    doc = _roundtrip(data)
    assert doc.trailing == b"stale"
    assert doc.warnings == [f"5 bytes after the top-level PERS block (offset {len(data) - 5}) kept raw"]
    assert doc.to_json("wire")["trailing"] == b"stale".hex()


def test_edit_regenerates_counts_and_sizes_keeping_the_flag():
    doc = potsherd.read(shape_bytes(8), format="dts")
    p = doc.root["payload"]
    p["nodes"] = p["nodes"][:1]
    doc.root["size"] |= 0x80000000
    out = potsherd.write(doc)
    assert len(out) == 738 - 10            # one 10-byte node less: 720 data bytes, 4-aligned
    back = potsherd.read(out, format="dts").root
    assert back["payload"]["nNodes"] == 1
    assert back["size"] == 0x80000000 | 720 and back["pad"] == b""
    p["nodes"] = p["nodes"][:0]
    out = potsherd.write(doc)
    assert len(out) == 738 - 20 + 2        # 710 data bytes, padded to 4 now
    back = potsherd.read(out, format="dts").root
    assert back["payload"]["nNodes"] == 0
    assert back["size"] == 0x80000000 | 710 and back["pad"] == b"\0\0"
    # an unedited document keeps its stored size word
    doc = potsherd.read(shape_bytes(8), format="dts")
    assert potsherd.write(doc) == shape_bytes(8)


def test_edit_of_a_nested_mesh_updates_both_sizes():
    doc = potsherd.read(shape_bytes(7), format="dts")
    mesh = doc.root["payload"]["meshes"][0]
    mesh["payload"]["faces"] = mesh["payload"]["faces"][:0]
    out = potsherd.write(doc)
    assert len(out) == len(shape_bytes(7)) - 28
    back = potsherd.read(out, format="dts").root
    assert back["payload"]["meshes"][0]["payload"]["numFaces"] == 0
    assert back["payload"]["meshes"][0]["size"] == 182 - 8 - 28
    assert back["size"] == len(out) - 8


# ----------------------------------------------------------------------------
# hostile input


def test_every_truncation_is_a_format_error():
    data = shape_bytes(8)
    for n in range(len(data)):
        with pytest.raises(FormatError):
            potsherd.read(data[:n], format="dts")


def test_random_mutations_decode_or_fail_cleanly():
    rng = random.Random(1234)
    base = shape_bytes(7)
    decoded = 0
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            doc = potsherd.read(bytes(data), format="dts")
        except FormatError as e:
            assert type(e).__name__ != "InternalDecodeError", e
            continue
        decoded += 1
        assert potsherd.write(doc) == bytes(data)
    assert decoded > 100


def test_size_larger_than_input():
    data = bytearray(shape_bytes(8))
    data[4:8] = P("<I", 0x7FFFFFFF)
    with pytest.raises(TruncatedError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert ei.value.offset == 4 and ei.value.path == "block"
    assert ei.value.found == 0x7FFFFFFF


def test_negative_class_name_length():
    data = bytearray(shape_bytes(8))
    data[8:10] = P("<h", -1)
    with pytest.raises(ValueFormatError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert ei.value.offset == 8 and ei.value.path == "block.className"


def test_huge_count_refused_before_allocating():
    data = bytearray(shape_bytes(8))
    data[24:28] = P("<i", 0x7FFFFFFF)          # nNodes
    with pytest.raises(CountError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert ei.value.offset == 108 and ei.value.path == "block.payload.nodes"


def test_nested_block_with_wrong_tag():
    data = bytearray(shape_bytes(8))
    at = data.index(b"PERS", 4)
    data[at:at + 4] = b"XERS"
    with pytest.raises(MagicError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert ei.value.offset == at and ei.value.path == "block.payload.meshes[0]"


def test_materials_flag_without_a_list():
    data = shape_bytes(8, materials=False)
    cut = len(data) - 4
    size = struct.unpack_from("<I", data, 4)[0]
    data = data[:4] + P("<I", size) + data[8:cut] + P("<i", 1)
    with pytest.raises(TruncatedError) as ei:
        potsherd.read(data, format="dts")
    assert ei.value.path == "block.payload.materials" and ei.value.offset == len(data)


def _minimal_shape(inner: bytes) -> bytes:
    counts = [0] * 8 + [1, 0, 0]               # one mesh
    return pers("TS::Shape", 8, P("<11i", *counts) + bytes(40) + P("<2i", 0, -1) + inner + P("<i", 0))


def test_nesting_bomb_is_limited():
    data = mesh_bytes(3)
    for _ in range(40):
        data = _minimal_shape(data)
    with pytest.raises(LimitError):
        potsherd.read(data, format="dts")
    data = mesh_bytes(3)
    for _ in range(5):
        data = _minimal_shape(data)
    _roundtrip(data)


def test_non_pers_input():
    with pytest.raises(MagicError) as ei:
        potsherd.read(b"\x08\x00\x14\x00" + P("<I", 4) + b"abcd", format="dts")
    assert ei.value.offset == 0 and "3Space 2.x" in str(ei.value) and "block type 0x0008" in str(ei.value)
    with pytest.raises(MagicError, match="only 2 bytes"):
        potsherd.read(b"PE", format="dml")


# ----------------------------------------------------------------------------
# documents that cannot be written or loaded


def test_encode_errors():
    doc = potsherd.read(pers("TS::TransAnimMesh", 1, b"ab"), format="dts")
    doc.root["payload"] = {"x": 1}
    with pytest.raises(EncodeError) as ei:
        potsherd.write(doc)
    assert ei.value.path == "block.payload"
    doc = potsherd.read(shape_bytes(8), format="dts")
    doc.root["namePad"] = b""
    with pytest.raises(EncodeError) as ei:
        potsherd.write(doc)
    assert ei.value.path == "block.namePad"
    doc = potsherd.read(shape_bytes(8), format="dts")
    doc.root["payload"]["nodes"] = doc.root["payload"]["nodes"][["fName", "fParent"]]
    with pytest.raises(EncodeError) as ei:
        potsherd.write(doc)
    assert ei.value.path == "block.payload.nodes"


def test_json_errors():
    root = shape_doc(8)
    root["payload"]["names"]["name"][0] = "x" * 25
    with pytest.raises(JsonFormatError) as ei:
        potsherd.from_json(envelope(root))
    assert ei.value.path == "$.root.payload.names.name[0]"
    root = shape_doc(8)
    del root["payload"]["nodes"]["fParent"]
    with pytest.raises(JsonFormatError) as ei:
        potsherd.from_json(envelope(root))
    assert ei.value.path == "$.root.payload.nodes"
    root = mesh_doc(3)
    root["payload"]["verts"]["x"] = [0, 1, 2]
    with pytest.raises(JsonFormatError) as ei:
        potsherd.from_json(envelope(root))
    assert ei.value.path == "$.root.payload.verts.y"
    root = mesh_doc(3)
    del root["slack"]
    with pytest.raises(JsonFormatError) as ei:
        potsherd.from_json(envelope(root))
    assert ei.value.path == "$.root"


def test_registry_entries():
    rows = {r["name"]: r for r in potsherd.list_formats() if r["family"] == "darkstar"}
    assert rows["dts"]["extensions"] == [".dts"] and rows["dts"]["magic"] == "50455253"
    assert rows["dml"]["extensions"] == [".dml"] and rows["dml"]["magic"] == "50455253"
