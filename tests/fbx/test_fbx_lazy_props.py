"""Pending (lazily built) binary FBX property lists: the validating scan must
accept exactly what the eager property parser accepts, so hostile input still
fails at decode with the eager parser's error; built values, the writer's
copy of unbuilt lists and edits must all behave as with eager parsing."""
from __future__ import annotations

import random

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError, ValueFormatError
from potsherd.core.limits import DEFAULT_LIMITS, Limits
from potsherd.document import Document
from potsherd.formats.fbx import FbxArray, FbxNode
from potsherd.core.values import F32NaN, F64NaN
from potsherd.formats.fbx.binary import (_build_props, _order, _parse_props, _props_valid,
                                         _write_props, decode_binary)

SMALL_LIMITS = Limits(max_elements=20, max_inflated=100)


def random_props(rng: random.Random) -> list:
    props = []
    for _ in range(rng.randint(0, 6)):
        code = rng.choice("YCBZIFDLSRfdlibc")
        if code == "Y":
            props.append((code, rng.randint(-32768, 32767)))
        elif code in "CBZ":
            props.append((code, rng.randint(0, 255)))
        elif code == "I":
            props.append((code, rng.randint(-2**31, 2**31 - 1)))
        elif code in "FD":
            props.append((code, rng.uniform(-1e6, 1e6)))
        elif code == "L":
            props.append((code, rng.randint(-2**63, 2**63 - 1)))
        elif code in "SR":
            props.append((code, bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))))
        else:
            dtype = {"f": "<f4", "d": "<f8", "l": "<i8", "i": "<i4", "b": "u1", "c": "u1"}[code]
            values = np.arange(rng.randint(0, 30)).astype(dtype)
            arr = FbxArray(code, values, encoding=rng.choice((0, 1)), level=rng.choice((1, 9)))
            props.append((code, arr))
    return props


def eager_accepts(span: bytes, count: int, big: bool, limits: Limits) -> bool:
    try:
        _parse_props(span, 0, len(span), count, _order(big), limits)
    except FormatError:
        return False
    return True


@pytest.mark.parametrize("big", [False, True])
def test_scan_accepts_exactly_what_the_parser_accepts(big):
    rng = random.Random(7 + big)
    order = _order(big)
    u32, arr = order.u32.unpack_from, order.arr.unpack_from
    accepted = rejected = 0
    for trial in range(4000):
        props = random_props(rng)
        buf = bytearray()
        _write_props(buf, props, order, None)
        count = len(props)
        mutation = trial % 4
        if mutation == 1 and buf:  # flip one byte
            i = rng.randrange(len(buf))
            buf[i] = rng.choice((0, 0xFF, rng.randrange(256), buf[i] ^ (1 << rng.randrange(8))))
        elif mutation == 2 and buf:  # cut the list short
            del buf[rng.randrange(len(buf)):]
        elif mutation == 3:  # wrong property count
            count = max(0, count + rng.choice((-1, 1)))
        span = bytes(buf)
        limits = SMALL_LIMITS if trial % 3 == 0 else DEFAULT_LIMITS
        expected = eager_accepts(span, count, big, limits)
        assert _props_valid(span, 0, len(span), count, u32, arr, limits) is expected, \
            (span.hex(), count, big)
        if expected:  # the unchecked builder of validated lists builds the same values
            assert _built(_build_props(span, 0, count, order, limits)) == \
                _built(_parse_props(span, 0, len(span), count, order, limits))
        accepted += expected
        rejected += not expected
    assert accepted > 1000 and rejected > 1000  # both sides were really exercised


def _built(props: list) -> list:
    """Props compared exactly: value types, float bits (repr), array headers and payloads."""
    return [(c, type(v).__name__, repr(v) if isinstance(v, float) else
             (v.count, v.encoding, v.payload, v.offset, v.big_endian) if isinstance(v, FbxArray)
             else v) for c, v in props]


@pytest.mark.parametrize("big", [False, True])
def test_builder_keeps_nan_bits_signed_zeros_and_every_scalar_type(big):
    order = _order(big)
    props = [("F", F32NaN(0x7FC00001)), ("D", F64NaN(0xFFF0000000000123)), ("F", -0.0),
             ("D", -0.0), ("F", 1.5), ("D", 1e300), ("Y", -2), ("C", 1), ("B", 0), ("Z", 255),
             ("I", -(2**31)), ("L", 2**63 - 1), ("S", b""), ("R", b"\x00\xff")]
    buf = bytearray()
    _write_props(buf, props, order, None)
    built = _build_props(bytes(buf), 0, len(props), order, DEFAULT_LIMITS)
    assert _built(built) == _built(_parse_props(bytes(buf), 0, len(buf), len(props), order,
                                                 DEFAULT_LIMITS))
    assert isinstance(built[0][1], F32NaN) and built[0][1].bits == 0x7FC00001
    assert isinstance(built[1][1], F64NaN) and built[1][1].bits == 0xFFF0000000000123
    assert repr(built[2][1]) == "-0.0" and built[11] == ("L", 2**63 - 1)


def doc_bytes(nodes: list, endian: int = 0) -> bytes:
    root = FbxNode(b"", [], nodes)
    doc = Document("fbx", root, {"version": 7400, "endian_byte": endian, "byte21": 0x1A,
                                 "terminated": True, "footer": "raw"})
    return potsherd.write(doc)


def sample_nodes() -> list:
    return [
        FbxNode(b"Objects", [], [
            FbxNode(b"Geometry", [("L", 7), ("S", b"Cube\x00\x01Geometry"), ("S", b"Mesh")], [
                FbxNode(b"Vertices", [("d", FbxArray("d", np.arange(6, dtype="<f8"),
                                                     encoding=1, level=9))]),
                FbxNode(b"P", [("S", b"Lcl"), ("D", -0.0), ("F", 1.5), ("Y", -2), ("C", 1)]),
            ]),
        ]),
        FbxNode(b"Empty", []),
    ]


@pytest.mark.parametrize("endian", [0, 1])
def test_props_are_built_on_first_access_with_the_eager_values(endian):
    data = doc_bytes(sample_nodes(), endian)
    root, _, _ = decode_binary(data)
    geometry = root.find("Objects").find("Geometry")
    p_node = geometry.find("P")
    assert p_node.pending_props() is not None
    _, start, end, count = p_node.pending_props()
    assert count == 5
    expected = _parse_props(data, start, end, count, _order(bool(endian)), DEFAULT_LIMITS)
    assert p_node.props == expected == [("S", b"Lcl"), ("D", -0.0), ("F", 1.5), ("Y", -2),
                                        ("C", 1)]
    assert p_node.pending_props() is None and p_node.props is p_node.props  # built once
    assert root.find("Empty").pending_props() is None and root.find("Empty").props == []
    vertices = geometry.find("Vertices").props[0][1]
    assert not vertices.loaded()  # arrays stay compressed until their values are read
    assert vertices.values.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("endian", [0, 1])
def test_writer_copies_unbuilt_lists_and_writes_edited_ones(endian):
    data = doc_bytes(sample_nodes(), endian)
    doc = potsherd.read(data)
    assert potsherd.write(doc) == data
    # byte order changed: nothing can be copied, every list is rewritten
    swapped = Document("fbx", doc.root, dict(doc.params, endian_byte=1 - endian))
    assert potsherd.write(potsherd.read(potsherd.write(swapped))) == potsherd.write(swapped)
    assert potsherd.read(potsherd.write(swapped)).root.find("Objects").find("Geometry") \
        .find("P").props == [("S", b"Lcl"), ("D", -0.0), ("F", 1.5), ("Y", -2), ("C", 1)]
    doc = potsherd.read(data)
    geometry = doc.root.find("Objects").find("Geometry")
    geometry.find("P").props[1] = ("D", 2.0)  # in-place edit of the built list
    geometry.props = [("L", 8)]
    out = potsherd.write(doc)
    again = potsherd.read(out).root.find("Objects").find("Geometry")
    assert again.props == [("L", 8)]
    assert again.find("P").props[1] == ("D", 2.0)
    assert len(out) == len(data) - (1 + 4 + 14) - (1 + 4 + 4)  # the two strings are gone


def test_later_edits_of_a_bytearray_input_do_not_reach_pending_props():
    buf = bytearray(doc_bytes(sample_nodes()))
    root, _, _ = decode_binary(buf)
    buf[:] = bytes(len(buf))
    assert root.find("Objects").find("Geometry").props[2] == ("S", b"Mesh")


def test_bad_property_is_refused_at_decode_with_offset_and_path():
    data = bytearray(doc_bytes(sample_nodes()))
    at = data.index(b"Lcl") - 5  # the S code of the P node's first property
    assert data[at] == ord("S")
    data[at] = ord("x")
    with pytest.raises(ValueFormatError) as e:
        decode_binary(bytes(data))
    assert e.value.offset == at
    assert e.value.path.startswith("/Objects/Geometry/P") and "props[0]" in e.value.path


def test_documents_with_pending_props_copy_and_pickle():
    import copy
    import pickle
    data = doc_bytes(sample_nodes(), 1)
    doc = potsherd.read(data)
    for clone in (copy.deepcopy(doc), pickle.loads(pickle.dumps(doc))):
        assert clone.root.find("Objects").find("Geometry").pending_props() is not None
        assert potsherd.write(clone) == data
        assert clone.root.find("Objects").find("Geometry").props[2] == ("S", b"Mesh")


def comparable(props: list) -> list:
    return [(c, (v.code, v.count, v.encoding, v.payload) if isinstance(v, FbxArray) else repr(v))
            for c, v in props]


@pytest.mark.parametrize("big", [False, True])
def test_decode_refuses_exactly_the_property_lists_the_parser_refuses(big):
    """Through decode_binary (so also its inline one-property check): a
    mutated property list fails at decode with the eager parser's error."""
    rng = random.Random(11 + big)
    order = _order(big)
    refused = 0
    for trial in range(600):
        props = random_props(rng)[:rng.choice((1, 1, 2, 5))] or [("S", b"x")]
        data = bytearray(doc_bytes([FbxNode(b"N", props)], int(big)))
        start = 27 + 13 + 1  # header, record, name "N"
        end = len(data) - 13  # the top-level null record follows the node
        if trial % 2:
            i = rng.randrange(start, end)
            data[i] = rng.choice((0, 0xFF, rng.randrange(256), ord(rng.choice("SRYCIDLfx"))))
        span = bytes(data[start:end])
        try:
            expected = _parse_props(span, 0, len(span), len(props), order, DEFAULT_LIMITS)
        except FormatError as e:
            expected = e
        try:
            root, _, _ = decode_binary(bytes(data))
        except FormatError as e:
            assert isinstance(expected, FormatError), (span.hex(), e)
            assert type(e) is type(expected) and e.offset == expected.offset + start
            assert e.path.startswith("/N")
            refused += 1
            continue
        assert not isinstance(expected, FormatError), span.hex()
        assert comparable(root.children[0].props) == comparable(expected)
    assert 30 < refused < 300


@pytest.mark.parametrize("encoding", [0, 1])
@pytest.mark.parametrize("field,value,error", [
    (None, None, None),  # negative control: the file as written decodes
    ("count", 7, "CountError"),  # raw: stored bytes no longer match; zlib: inflates short
    ("count", 21, "LimitError"),  # over max_elements
    ("encoding", 2, "ValueFormatError"),
    # raw: stored bytes no longer match; zlib: the payload no longer fills the list
    ("clen", -1, ("CountError", "FormatError")),
])
def test_single_array_lists_checked_inline_reject_what_the_parser_rejects(encoding, field,
                                                                          value, error):
    """Lists of one array are checked by the record loop itself, not the scan:
    the same rule, so the same files are refused with the parser's error."""
    arr = FbxArray("i", np.arange(6, dtype="<i4"), encoding=encoding, level=1)
    data = bytearray(doc_bytes([FbxNode(b"Arr", [("i", arr)])]))
    at = 27 + 13 + 3 + 1  # the array header after the record header, name and type code
    if field is not None:
        offset = {"count": 0, "encoding": 4, "clen": 8}[field]
        old = int.from_bytes(data[at + offset:at + offset + 4], "little")
        new = old + value if field == "clen" else value
        data[at + offset:at + offset + 4] = new.to_bytes(4, "little")
    if error is None or (field == "count" and value == 7 and encoding == 1):
        # a zlib count within limits is only checked when the values are inflated
        root, _, _ = decode_binary(bytes(data), SMALL_LIMITS)
        assert root.find("Arr").props[0][1].count == (6 if field is None else 7)
        return
    with pytest.raises(FormatError) as e:
        decode_binary(bytes(data), SMALL_LIMITS)
    plen = int.from_bytes(data[27 + 8:27 + 12], "little")
    with pytest.raises(FormatError) as parser:
        _parse_props(bytes(data), at - 1, at - 1 + plen, 1, _order(False), SMALL_LIMITS)
    if isinstance(error, tuple):
        error = error[encoding]
    assert type(e.value) is type(parser.value) and type(e.value).__name__ == error
    assert e.value.offset == parser.value.offset and "/Arr" in str(e.value)
