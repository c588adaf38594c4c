"""Pending (lazily created) binary FBX child nodes: decode validates the whole
file, so hostile records deep in the tree still fail at decode with their
offset and path; created nodes must equal the tree that was written, and the
writer's copy of never-created subtrees must give the bytes an eager writer
would."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError, LimitError
from potsherd.core.limits import Limits
from potsherd.core.spans import SpanMap
from potsherd.document import Document
from potsherd.formats.fbx import FbxArray, FbxNode
from potsherd.formats.fbx.binary import decode_binary, encode_binary


def sample_tree() -> list:
    return [
        FbxNode(b"Header", [("I", 1003)], [FbxNode(b"Version", [("I", 7400)])]),
        FbxNode(b"Objects", [], [
            FbxNode(b"Geometry", [("L", 7), ("S", b"Cube\x00\x01Geometry"), ("S", b"Mesh")], [
                FbxNode(b"Vertices", [("d", FbxArray("d", np.arange(6, dtype="<f8"),
                                                     encoding=1, level=9))]),
                FbxNode(b"Layer", [("I", 0)], [
                    FbxNode(b"Deep", [("S", b"x")], []),  # an empty block: children == []
                ]),
                FbxNode(b"Zero", [("C", 1)], zero_end=True),  # EndOffset 0
            ]),
            FbxNode(b"Model", [("L", 9)], []),
        ]),
        FbxNode(b"Empty", []),
    ]


def encode(nodes: list, version: int = 7400, endian: int = 0) -> bytes:
    return encode_binary(FbxNode(b"", [], nodes), {"version": version, "endian_byte": endian,
                                                   "byte21": 0x1A, "footer": "raw"})


def shape(node: FbxNode) -> tuple:
    """Everything the writer writes of a node, recursively (arrays by value)."""
    props = [(c, v.values.tolist() if isinstance(v, FbxArray) else v) for c, v in node.props]
    kids = None if node.children is None else [shape(c) for c in node.children]
    return node.name, props, node.zero_end, kids


@pytest.mark.parametrize("version,endian", [(7400, 0), (7500, 0), (7400, 1)])
def test_children_are_created_on_first_access_as_written(version, endian):
    nodes = sample_tree()
    data = encode(nodes, version, endian)
    root, _, _ = decode_binary(data)
    objects = root.find("Objects")
    assert objects.pending_children() and root.find("Header").pending_children()
    assert not root.find("Empty").pending_children() and root.find("Empty").children is None
    geometry = objects.find("Geometry")  # creates the children of Objects only
    assert not objects.pending_children() and geometry.pending_children()
    assert [shape(n) for n in root.children] == [shape(n) for n in sample_tree()]
    assert geometry.find("Zero").zero_end and geometry.find("Zero").children is None
    assert geometry.find("Layer").find("Deep").children == []
    assert objects.children is objects.children  # created once


def test_spans_decode_creates_every_node_with_its_byte_ranges():
    data = encode(sample_tree())
    root, _, _ = decode_binary(data, spans=(spans := SpanMap()))
    nodes = [n for _, n in root.walk()]
    assert not any(n.pending_children() for n in nodes)
    assert len(nodes) == 10
    for node in nodes:
        start, end = spans.get(node, "name")
        assert data[start:end] == node.name
        r_start, r_end = spans.get(node, "record")
        assert r_start == start - 13 and r_end > r_start
    deep = root.find("Objects").find("Geometry").find("Layer").find("Deep")
    r_start, r_end = spans.get(deep, "record")
    assert r_end - r_start == 13 + 4 + 6 + 13  # header, name, one "S" of 1 byte, null record


def test_hostile_record_deep_in_the_tree_fails_at_decode_with_offset_and_path():
    data = bytearray(encode(sample_tree()))
    root, _, _ = decode_binary(bytes(data), spans=(spans := SpanMap()))
    deep = root.find("Objects").find("Geometry").find("Layer").find("Deep")
    _, r_end = spans.get(deep, "record")
    data[r_end - 5] = 1  # a byte of Deep's null record
    with pytest.raises(FormatError) as e:
        decode_binary(bytes(data))  # never touching the tree
    assert e.value.offset == r_end - 13
    assert "null record" in str(e.value) and "/Objects/Geometry/Layer/Deep" in str(e.value)
    # negative control: the untouched file decodes
    data[r_end - 5] = 0
    decode_binary(bytes(data))


def test_bad_property_list_of_a_never_created_node_fails_at_decode():
    data = bytearray(encode(sample_tree()))
    root, _, _ = decode_binary(bytes(data), spans=(spans := SpanMap()))
    version = root.find("Header").find("Version")
    p_start, _ = spans.get(version, "props")
    data[p_start] = ord("Q")  # unknown type code
    with pytest.raises(FormatError) as e:
        decode_binary(bytes(data))
    assert e.value.offset == p_start and "/Header/Version" in str(e.value)
    assert "props[0]" in str(e.value)


def test_depth_limit_is_checked_at_decode():
    node = FbxNode(b"Leaf", [("I", 1)])
    for i in range(6):
        node = FbxNode(b"N%d" % i, [], [node])
    data = encode([node])
    decode_binary(data, Limits(max_depth=6))
    with pytest.raises(LimitError) as e:
        decode_binary(data, Limits(max_depth=5))
    # the sixth record header: five headers of 13 + 2 name bytes after the 27-byte header
    assert (e.value.offset, e.value.path, e.value.found) == (27 + 5 * 15, "/N5/N4/N3/N2/N1/N0", 6)


def test_writer_copies_unbuilt_subtrees_and_rewrites_what_changed():
    data = encode(sample_tree())
    doc = potsherd.read(data)
    assert potsherd.write(doc) == data
    # an edit inside a subtree: the edited node and its ancestors are rewritten
    doc = potsherd.read(data)
    doc.root.find("Objects").find("Geometry").find("Layer").find("Deep").name = b"Deeper"
    out = potsherd.write(doc)
    assert len(out) == len(data) + 2
    again = potsherd.read(out)
    assert again.root.find("Objects").find("Geometry").find("Layer").find("Deeper") \
        .props == [("S", b"x")]
    # an edit earlier in the file shifts the rest: nothing after it may be copied
    doc = potsherd.read(data)
    doc.root.find("Header").props = [("I", 1003), ("I", 5)]
    out = potsherd.read(potsherd.write(doc))
    assert [shape(n) for n in out.root.children[1:]] == [shape(n) for n in sample_tree()[1:]]
    # a renamed node whose children were never created
    doc = potsherd.read(data)
    doc.root.find("Objects").find("Geometry").name = b"Geom"
    assert doc.root.find("Objects").find("Geom").pending_children()
    out = potsherd.read(potsherd.write(doc))
    assert out.root.find("Objects").find("Geom").find("Layer") is not None
    # props assigned on a node with no properties in the file
    doc = potsherd.read(data)
    doc.root.find("Objects").props.append(("I", 3))
    assert potsherd.read(potsherd.write(doc)).root.find("Objects").props == [("I", 3)]
    # children replaced before they were ever created
    doc = potsherd.read(data)
    doc.root.find("Header").children = []
    assert potsherd.read(potsherd.write(doc)).root.find("Header").children == []


def test_byte_order_or_record_width_change_writes_every_record():
    data = encode(sample_tree())
    doc = potsherd.read(data)
    for params in ({"endian_byte": 1}, {"version": 7500}):
        moved = Document("fbx", doc.root, dict(doc.params, **params))
        out = potsherd.write(moved)
        assert [shape(n) for n in potsherd.read(out).root.children] == \
            [shape(n) for n in sample_tree()]


def test_pending_children_copy_pickle_and_ignore_later_buffer_edits():
    buf = bytearray(encode(sample_tree()))
    doc = potsherd.read(bytes(buf))
    for clone in (copy.deepcopy(doc), pickle.loads(pickle.dumps(doc))):
        assert clone.root.find("Objects").pending_children()
        assert [shape(n) for n in clone.root.children] == [shape(n) for n in sample_tree()]
    root, _, _ = decode_binary(buf)
    buf[:] = bytes(len(buf))
    assert root.find("Objects").find("Geometry").find("Layer").find("Deep").props == \
        [("S", b"x")]
