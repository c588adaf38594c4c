"""Binary FBX on files built by the project's own code: record widths, null
records, footer styles and ids, arrays (lazy, capped, kept or recompressed),
byte orders, and hostile input refused with offsets."""
from __future__ import annotations

import json
import math
import struct
import zlib

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import (CountError, FormatError, LimitError, TruncatedError,
                                  ValueFormatError)
from potsherd.core.limits import Limits
from potsherd.core.values import F64NaN
from potsherd.document import Document
from potsherd.formats.fbx import FbxArray, FbxNode
from potsherd.formats.fbx.binary import MAGIC, build_footer
from potsherd.formats.fbx.model import BLENDER_TIME, FOOTER_MAGIC, file_id, footer_id

TIME = b"2020-03-31 21:36:34:164"


def make_doc(nodes: list, version: int = 7400, footer: str = "sdk", endian: int = 0) -> Document:
    root = FbxNode(b"", [], nodes)
    params = {"version": version, "endian_byte": endian, "byte21": 0x1A, "terminated": True,
              "footer": footer}
    return Document("fbx", root, params)


def small_tree() -> list:
    return [
        FbxNode(b"FBXHeaderExtension", [], [FbxNode(b"FBXVersion", [("I", 7400)])]),
        FbxNode(b"FileId", [("R", file_id(TIME))]),
        FbxNode(b"CreationTime", [("S", TIME)]),
        FbxNode(b"Objects", [], [
            FbxNode(b"Geometry", [("L", 12345), ("S", b"Cube\x00\x01Geometry"), ("S", b"Mesh")], [
                FbxNode(b"Vertices", [("d", FbxArray("d", np.arange(6, dtype="<f8")))]),
                FbxNode(b"PolygonVertexIndex",
                        [("i", FbxArray("i", np.array([0, 1, -3], "<i4")))]),
            ]),
        ]),
        FbxNode(b"References", [], []),
        FbxNode(b"Empty", []),
    ]


def test_id_hashes_match_the_blender_test_vector():
    assert file_id(BLENDER_TIME).hex() == "28b32aebb624ccc2bfc8b02aa92bfcf1"
    assert footer_id(BLENDER_TIME).hex() == "fabcab09d0c8d466b176fb831cf7267e"


def test_spec_worked_example_array():
    # the spec's example: i, count 3, encoding 0, 12 bytes, values 0, 1, -3
    body = bytes.fromhex("69" "03000000" "00000000" "0c000000" "00000000" "01000000" "fdffffff")
    name = b"PolygonVertexIndex"
    rec_len = 13 + len(name) + len(body)
    node = struct.pack("<IIIB", 27 + rec_len, 1, len(body), len(name)) + name + body
    data = MAGIC + b"\x1a\x00" + struct.pack("<I", 7400) + node + bytes(13)
    doc = potsherd.read(data)
    arr = doc.root.children[0].props[0][1]
    assert (arr.code, arr.count, arr.encoding) == ("i", 3, 0)
    assert arr.values.tolist() == [0, 1, -3]
    assert doc.params["footer"] == "raw" and doc.trailing == b""
    assert doc.encode() == data


def test_scratch_tree_gets_offsets_null_records_and_sdk_footer():
    data = make_doc(small_tree()).encode()
    doc = potsherd.read(data)
    assert doc.params["footer"] == "sdk" and doc.trailing == b""
    assert doc.encode() == data
    # top-level null record, then footer id derived from CreationTime
    tail = data[-(4 + 120 + 16):]
    assert tail.endswith(FOOTER_MAGIC) and tail[4:124] == bytes(120)
    assert struct.unpack_from("<I", tail, 0)[0] == 7400
    ver_off = len(data) - 140
    assert ver_off % 16 == 4  # SDK style
    assert footer_id(TIME) in data[-200:]
    kids = doc.root.children
    assert kids[4].children == [] and kids[5].children is None  # References {}; Empty
    # References: 13-byte record + name + 13-byte null record; Empty: no null record
    ref_start = data.index(b"\x0aReferences") - 12
    end, n, plen, nlen = struct.unpack_from("<IIIB", data, ref_start)
    assert (n, plen, nlen) == (0, 0, 10)
    assert end == ref_start + 13 + 10 + 13 and data[end - 13:end] == bytes(13)
    empty_start = end
    end2 = struct.unpack_from("<I", data, empty_start)[0]
    assert end2 == empty_start + 13 + 5


def test_blender_footer_style_and_version_7500_records():
    data = make_doc(small_tree(), version=7500, footer="blender").encode()
    doc = potsherd.read(data)
    assert doc.params["footer"] == "blender" and doc.encode() == data
    assert (len(data) - 140) % 16 == 0  # Blender puts the version 16-aligned
    # 25-byte records: u64 end offset of the first node
    end, n, plen, nlen = struct.unpack_from("<QQQB", data, 27)
    assert nlen == len(b"FBXHeaderExtension") and n == 0 and plen == 0
    assert data[end - 25:end] == bytes(25)


def test_unrecognised_tail_kept_raw():
    data = make_doc(small_tree(), footer="sdk").encode()
    odd = data[:-10] + b"0123456789"
    doc = potsherd.read(odd)
    assert doc.params["footer"] == "raw"
    sdk = build_footer("sdk", TIME, len(odd) - len(doc.trailing), 7400, False)
    assert doc.trailing == sdk[:-10] + b"0123456789"
    assert doc.encode() == odd
    assert potsherd.write(potsherd.from_json(doc.to_json("wire"))) == odd


def test_zero_end_offset_is_kept():
    nodes = small_tree()
    nodes[0].children[0].zero_end = True
    data = make_doc(nodes).encode()
    first_child = 27 + 13 + len(b"FBXHeaderExtension")
    assert struct.unpack_from("<I", data, first_child)[0] == 0
    doc = potsherd.read(data)
    assert doc.root.children[0].children[0].zero_end
    assert doc.encode() == data


def test_floats_keep_sign_and_nan_bits_through_json():
    nan = F64NaN(0x7FF0000000000123)
    nodes = [FbxNode(b"V", [("D", -0.0), ("D", nan), ("F", -0.0), ("C", ord("T")), ("C", 1),
                            ("Z", 200), ("Y", -5), ("B", 3)])]
    data = make_doc(nodes, footer="raw").encode()
    for form in ("wire", "readable"):
        js = json.loads(json.dumps(potsherd.read(data).to_json(form), allow_nan=False))
        back = potsherd.from_json(js)
        assert back.encode() == data
        props = back.root.children[0].props
        assert math.copysign(1, props[0][1]) == -1 and props[1][1].bits == 0x7FF0000000000123
    readable = potsherd.read(data).to_json("readable")["root"]["nodes"][0]["props"]
    assert readable[3] == ["C", "T"] and readable[4] == ["C", 1]


def test_arrays_are_lazy_and_edits_recompress():
    raw = np.linspace(0, 1, 300).astype("<f8")
    # a stream zlib level 1 would not reproduce (different strategy)
    c = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
    odd = c.compress(raw.tobytes()) + c.flush()
    arr = FbxArray("d", count=300, encoding=1, payload=odd)
    data = make_doc([FbxNode(b"A", [("d", arr)])], footer="raw").encode()
    doc = potsherd.read(data)
    a = doc.root.children[0].props[0][1]
    assert not a.loaded()
    assert doc.encode() == data and not a.loaded()
    assert np.array_equal(a.values, raw)
    assert a.unchanged() and doc.encode() == data  # payload reused after reading
    a.values[0] = 5.0
    out = doc.encode()
    assert out != data
    again = potsherd.read(out).root.children[0].props[0][1]
    assert again.encoding == 1 and again.payload[:2] == b"\x78\x01"
    assert again.values[0] == 5.0 and np.array_equal(again.values[1:], raw[1:])


def test_big_endian_file_roundtrip():
    data = make_doc(small_tree(), version=7500, endian=1).encode()
    assert data[22] == 1 and struct.unpack_from(">I", data, 23)[0] == 7500
    doc = potsherd.read(data)
    assert doc.params["footer"] == "sdk" and doc.encode() == data
    verts = doc.root.find("Objects").find("Geometry").find("Vertices").props[0][1]
    assert verts.dtype == np.dtype(">f8") and verts.values.tolist() == [0, 1, 2, 3, 4, 5]
    assert potsherd.write(potsherd.from_json(doc.to_json("readable"))) == data


def test_build_footer_padding():
    assert len(build_footer("sdk", TIME, 32, 7400, False)) == 16 + 16 + 4 + 4 + 120 + 16
    assert len(build_footer("blender", TIME, 32, 7400, False)) == 16 + 4 + 12 + 4 + 120 + 16


# --- hostile input -----------------------------------------------------------

def _nested(depth: int, version: int = 7400) -> bytes:
    nodes = FbxNode(b"N", [], [])
    cur = nodes
    for _ in range(depth):
        nxt = FbxNode(b"N", [], [])
        cur.children.append(nxt)
        cur = nxt
    return make_doc([nodes], version=version, footer="raw").encode()


def test_deep_nesting_is_a_limit_error_not_a_crash():
    data = _nested(1000)
    with pytest.raises(LimitError) as e:
        potsherd.read(data)
    assert e.value.offset == 27 + 256 * 14  # the first node deeper than max_depth
    assert potsherd.read(_nested(100)).encode() == _nested(100)


def test_every_truncation_is_a_format_error():
    data = make_doc(small_tree()).encode()
    top_null = data.rindex(bytes(13), 0, len(data) - 150)
    for n in range(0, top_null, 7):
        with pytest.raises(FormatError):
            potsherd.read(data[:n], format="fbx")


def test_truncated_node_reports_offset_and_path():
    data = make_doc(small_tree()).encode()
    objects = data.index(b"\x07Objects") - 12
    with pytest.raises(TruncatedError) as e:
        potsherd.read(data[:objects + 20])
    assert e.value.offset == objects and e.value.path == "/Objects"


def _single(props: bytes, nprops: int, version: int = 7400) -> bytes:
    name = b"A"
    end = 27 + 13 + 1 + len(props)
    return (MAGIC + b"\x1a\x00" + struct.pack("<I", version)
            + struct.pack("<IIIB", end, nprops, len(props), 1) + name + props + bytes(13))


def test_array_counts_checked_before_allocating():
    # raw array claiming 2**30 elements in 12 bytes
    bad = _single(b"i" + struct.pack("<III", 1 << 30, 0, 12) + bytes(12), 1)
    with pytest.raises(LimitError):
        potsherd.read(bad)
    bad = _single(b"i" + struct.pack("<III", 5, 0, 12) + bytes(12), 1)
    with pytest.raises(CountError) as e:
        potsherd.read(bad)
    assert e.value.offset == 27 + 14 + 1 + 8 and e.value.path == "/A.props[0]"
    # compressed: a bomb ratio is refused at decode time, before inflating
    bomb = zlib.compress(bytes(1 << 22), 9)
    bad = _single(b"d" + struct.pack("<III", 1 << 19, 1, len(bomb)) + bomb, 1)
    with pytest.raises(LimitError):
        potsherd.read(bad, limits=Limits(max_inflation_ratio=10))
    # within limits but lying about its count: refused when inflated
    stream = zlib.compress(bytes(80), 1)
    liar = _single(b"d" + struct.pack("<III", 9, 1, len(stream)) + stream, 1)
    arr = potsherd.read(liar).root.children[0].props[0][1]
    with pytest.raises(FormatError) as e:
        arr.values
    assert e.value.offset == 27 + 14 + 1


def test_unknown_codes_and_bad_lengths():
    with pytest.raises(ValueFormatError) as e:
        potsherd.read(_single(b"Q" + bytes(4), 1))
    assert e.value.offset == 27 + 14
    with pytest.raises(CountError):
        potsherd.read(_single(b"S" + struct.pack("<I", 1000) + b"abc", 1))
    with pytest.raises(ValueFormatError):
        potsherd.read(_single(b"i" + struct.pack("<III", 1, 7, 4) + bytes(4), 1))
    with pytest.raises(CountError):
        potsherd.read(_single(b"I" + bytes(4), 9))


def test_editing_creation_time_rederives_file_id_and_footer():
    data = make_doc(small_tree()).encode()
    doc = potsherd.read(data)
    assert doc.params["file_id"] == "derived"
    new_time = b"2024-12-31 23:59:58:999"
    doc.root.find("CreationTime").props = [("S", new_time)]
    out = doc.encode()
    again = potsherd.read(out)
    assert again.root.find("FileId").props == [("R", file_id(new_time))]
    assert again.params["footer"] == "sdk" and footer_id(new_time) in out[-200:]
    assert len(out) == len(data)


def test_deepest_allowed_tree_survives_json():
    data = _nested(255)
    doc = potsherd.read(data)
    text = json.dumps(doc.to_json("readable"))
    assert potsherd.write(potsherd.from_json(text)) == data


def test_bad_documents_are_refused_cleanly():
    from potsherd.core.errors import EncodeError, JsonFormatError
    js = make_doc(small_tree()).to_json("wire")
    js["params"]["endian_byte"] = "x"
    with pytest.raises(JsonFormatError) as e:
        potsherd.from_json(js)
    assert e.value.path == "$.params.endian_byte"
    doc = make_doc([FbxNode(b"A", [("I", "not a number")])])
    with pytest.raises(EncodeError):
        doc.encode()
    with pytest.raises(FormatError):
        make_doc([FbxNode(b"x" * 256)]).encode()


def test_eager_inflation_checks_streams_at_decode():
    stream = zlib.compress(bytes(80), 1)
    liar = _single(b"d" + struct.pack("<III", 9, 1, len(stream)) + stream, 1)
    assert potsherd.read(liar).encode() == liar  # lazy: never inflated, kept as is
    with pytest.raises(FormatError) as e:
        potsherd.read(liar, inflate="eager")
    assert e.value.offset == 27 + 14 + 1 and e.value.path == "/A.props[0]"


def test_array_that_does_not_inflate_survives_json():
    stream = zlib.compress(bytes(80), 1)
    liar = _single(b"d" + struct.pack("<III", 9, 1, len(stream)) + stream, 1)
    doc = potsherd.read(liar)
    for form in ("wire", "readable"):
        js = json.loads(json.dumps(doc.to_json(form)))
        arr = js["root"]["nodes"][0]["props"][0][1]
        assert "values" not in arr and arr["invalid"].startswith("compressed array")
        assert potsherd.write(potsherd.from_json(js)) == liar
