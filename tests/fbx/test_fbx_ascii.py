"""ASCII FBX: byte-exact reading/writing of odd layouts, the canonical writer,
detection by content, and refusals with offsets."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import potsherd
from potsherd.core.errors import FormatError, LimitError, TruncatedError
from potsherd.formats.fbx.ascii import AsciiArray, escape, unescape

SAMPLE = (
    "; FBX 7.5.0 project file\n"
    "; ----------------------------------------------------\n"
    "\n"
    "FBXHeaderExtension:  {\n"
    "\tFBXVersion: 7500\n"
    "\tCreator: \"FBX SDK &quot;x&quot;\"\n"
    "}\n"
    "; Object properties\n"
    "Objects:  {\n"
    "\tGeometry: 42, \"Geometry::Cube\", \"Mesh\" {\n"
    "\t\tVertices: *6 {\n"
    "\t\t\ta: 0,1.36604283440533e-008,-0,1,\n"
    "2,3\n"
    "\t\t} \n"
    "\t\tShading: T\n"
    "\t\tP: \"Lcl Translation\", \"Lcl Translation\", \"\", \"A\",1.5,0,-2\n"
    "\t\tEmpty:  {\n"
    "\t\t}\n"
    "\t}\n"
    "}\n"
    "Content: , \"aGVsbG8=\", \"d29ybGQ=\"\n"
)


def test_sample_is_byte_exact_and_typed_by_lexeme():
    data = SAMPLE.encode()
    doc = potsherd.read(data, format="fbx-ascii")
    assert doc.params["version"] == 7500
    assert doc.encode() == data
    geo = doc.root.find("Objects").find("Geometry")
    assert geo.props == [("n", "42"), ("s", "Geometry::Cube"), ("s", "Mesh")]
    arr = geo.find("Vertices").props[0][1]
    assert arr.count == "6" and arr.lexemes() == ["0", "1.36604283440533e-008", "-0", "1", "2", "3"]
    assert arr.values.dtype == np.float64 and np.signbit(arr.values[2])
    assert geo.find("Shading").props == [("w", "T")]
    assert geo.find("Empty").children == [] and geo.find("Shading").children is None
    content = doc.root.find("Content")
    assert [p[1] for p in content.props] == ["aGVsbG8=", "d29ybGQ="]
    for form in ("wire", "readable"):
        js = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.write(potsherd.from_json(js)) == data


def test_crlf_and_space_indent_survive():
    text = SAMPLE.replace("\n", "\r\n").replace("\t", "    ")
    doc = potsherd.read(text.encode(), format="fbx-ascii")
    assert doc.params["newline"] == "\r\n" and doc.params["indent"] == "    "
    assert doc.encode() == text.encode()
    # most nodes are canonical for the file's own style, so they carry no layout
    with_fmt = [n.name for _, n in doc.root.walk() if n.fmt is not None]
    assert b"FBXVersion" not in with_fmt and b"P" not in with_fmt


def test_edited_nodes_are_written_canonically():
    doc = potsherd.read(SAMPLE.encode(), format="fbx-ascii")
    verts = doc.root.find("Objects").find("Geometry").find("Vertices")
    verts.props[0][1].values = np.array([1.0, 2.5])
    verts.fmt = None
    out = doc.encode().decode()
    assert "\t\tVertices: *2 {\n\t\t\ta: 1,2.5\n\t\t} \n\t\tShading: T" in out
    again = potsherd.read(out.encode(), format="fbx-ascii")
    assert again.root.find("Objects").find("Geometry").find("Vertices").props[0][1].values.tolist() \
        == [1.0, 2.5]


def test_canonical_writer_from_scratch():
    doc = potsherd.read(SAMPLE.encode(), format="fbx-ascii")
    from potsherd.formats.fbx.ascii import encode_ascii
    out = encode_ascii(doc.root, doc.params, canonical=True).decode()
    assert out.startswith("; FBX 7.5.0 project file\n; ---")
    assert "\nObjects:  {\n\tGeometry: 42, \"Geometry::Cube\", \"Mesh\" {\n" in out
    assert "\t\tP: \"Lcl Translation\", \"Lcl Translation\", \"\", \"A\",1.5,0,-2\n" in out
    assert "\t\tEmpty:  {\n\t\t}\n" in out
    re = potsherd.read(out.encode(), format="fbx-ascii")
    assert all(n.fmt is None for _, n in re.root.walk())
    assert re.encode().decode() == out


def test_detection_by_content():
    assert potsherd.read(SAMPLE.encode()).format == "fbx-ascii"
    # no header comment: still recognised by its header node
    body = SAMPLE.split("\n", 3)[3]
    assert potsherd.read(body.encode()).format == "fbx-ascii"
    assert potsherd.read(SAMPLE.replace("; FBX 7.5.0", "; FBX 6.1.0").encode()).params[
        "version"] == 6100


def test_escapes():
    assert unescape("a&quot;b&cr;&lf;c&d") == b'a"b\r\nc&d'
    assert escape(b'a"b\r\nc&d') == "a&quot;b&cr;&lf;c&d"


def test_ascii_array_values():
    assert AsciiArray("3", " 1,2,\n3\n").values.tolist() == [1, 2, 3]
    assert AsciiArray("0", " \n").lexemes() == []
    with pytest.raises(FormatError):
        AsciiArray("2", " 1,x").values


def test_refusals_with_offsets():
    with pytest.raises(TruncatedError) as e:
        potsherd.read(b"; FBX 7.4.0 project file\nA:  {\n\tB: 1\n", format="fbx-ascii")
    assert e.value.path == "/A"
    with pytest.raises(FormatError) as e:
        potsherd.read(b"; FBX 7.4.0 project file\nA: 1\n}\n", format="fbx-ascii")
    assert e.value.offset == 30
    with pytest.raises(FormatError) as e:
        potsherd.read(b"; FBX 7.4.0 project file\n\"oops\"\n", format="fbx-ascii")
    assert e.value.offset == 25
    deep = "; FBX 7.4.0 project file\n" + "A: {" * 1000 + "}" * 1000
    with pytest.raises(LimitError):
        potsherd.read(deep.encode(), format="fbx-ascii")
    ok = "; FBX 7.4.0 project file\n" + "A: {" * 50 + "}" * 50
    assert potsherd.read(ok.encode()).encode() == ok.encode()


def _tree(node) -> tuple:
    """Everything the parser records of a node: name, values, layout, children."""
    props = [(k, v.count, v.text) if k == "*" else (k, v) for k, v in node.props]
    return (node.name, props, node.fmt,
            None if node.children is None else [_tree(c) for c in node.children])


_PIECES = ["Node:", "P:", '"Lcl::Translation"', '"a,b"', '"x":', "1.5", "-2", "1.#INF", "T",
           "*3", "{", "}", "a:", "0,1,2", ",", ", ", "  ", "\t", "\n", "\r\n", "; note\n", "Key:"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40))
@settings(max_examples=400, deadline=None)
def test_the_plain_values_fast_path_parses_as_token_by_token(pieces):
    """A line's plain values are taken by one regular expression; token by token
    gives the same tree, values and layout (or the same error), on random runs
    of names, strings with commas and colons, numbers, arrays, blocks, commas,
    line ends and comments."""
    from potsherd.formats.fbx import ascii as fa
    text = ("Top: " + " ".join(pieces) + "\n").encode()
    outcomes = []
    for fast in (True, False):
        fa.FAST_VALUES = fast
        try:
            root, params = fa.decode_ascii(text)
            outcomes.append(("ok", _tree(root), params))
        except FormatError as e:
            outcomes.append(("error", type(e).__name__, str(e)))
        finally:
            fa.FAST_VALUES = True
    assert outcomes[0] == outcomes[1]


def test_the_fast_path_matches_on_the_corpus():
    """Every corpus ASCII FBX parses to the same tree both ways (the control for
    the property test: real files, long P lines, wrapped lists)."""
    from corpus_paths import CORPUS_ROOT
    from potsherd.formats.fbx import ascii as fa
    files = [p for p in sorted((CORPUS_ROOT / "fbx").rglob("*.fbx"))
             if not p.read_bytes().startswith(b"Kaydara FBX Binary")]
    if not files:
        pytest.skip("no ASCII FBX in the corpus")
    for path in files:
        data = path.read_bytes()
        trees = []
        for fast in (True, False):
            fa.FAST_VALUES = fast
            try:
                trees.append(_tree(fa.decode_ascii(data)[0]))
            finally:
                fa.FAST_VALUES = True
        assert trees[0] == trees[1], path.name
