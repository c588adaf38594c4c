"""The viewer's HTTP API on a real server bound to a free port: each endpoint, byte spans
that point at the bytes they describe, path confinement and error answers."""
from __future__ import annotations

import json
import os
import struct
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import registry
from potsherd.examples import write_examples
from potsherd.view import make_server
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "game"
    root.mkdir()
    write_examples(str(root))
    (root / "broken.n3pmesh").write_bytes(b"\x05\x00\x00\x00abc")
    (tmp_path / "secret.n3pmesh").write_bytes((root / "cube.n3pmesh").read_bytes())
    os.symlink(tmp_path / "secret.n3pmesh", root / "escape.n3pmesh")
    server = make_server(root, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield base, root
    server.shutdown()
    server.server_close()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return res.status, res.headers["Content-Type"], res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def get_json(url: str) -> tuple[int, dict]:
    status, ctype, body = get(url)
    assert ctype.startswith("application/json")
    return status, json.loads(body)


def test_files_lists_recognised_regular_files_only(served):
    base, root = served
    status, body = get_json(base + "/api/files")
    assert status == 200
    paths = {f["path"]: f for f in body["files"]}
    assert paths["cube.n3pmesh"] == {"path": "cube.n3pmesh", "family": "ko", "format": "n3pmesh",
                                     "size": (root / "cube.n3pmesh").stat().st_size}
    assert "escape.n3pmesh" not in paths        # symlinks are not followed
    assert body["skipped"] == 1


def test_doc_spans_point_at_the_bytes_of_each_field(served):
    base, root = served
    data = (root / "cube.n3pmesh").read_bytes()
    doc = potsherd.read(root / "cube.n3pmesh")
    status, body = get_json(base + "/api/doc?path=cube.n3pmesh")
    assert status == 200 and body["format"] == "n3pmesh" and body["size"] == len(data)
    kids = {c["name"]: c for c in body["tree"]["children"]}
    name_len = struct.unpack_from("<i", data, 0)[0]
    assert kids["name"]["span"] == [0, 4 + name_len]
    at = 4 + name_len
    for field in ("collapseCount", "changeCount", "vertexCount", "indexCount"):
        assert kids[field]["span"] == [at, at + 4]
        assert kids[field]["value"] == struct.unpack_from("<i", data, at)[0] == doc.root[field]
        at += 4
    verts = kids["vertices"]
    start, end = verts["span"]
    assert np.array_equal(np.frombuffer(data[start:end], "<f4"),
                          np.asarray(doc.root["vertices"], "<f4").reshape(-1))
    # negative control: non-empty spans differ from field to field and tile the file
    filled = sorted(tuple(c["span"]) for c in kids.values() if c["span"] and c["span"][1] > c["span"][0])
    assert len(set(filled)) == len(filled) > 8
    assert filled[0][0] == 0 and filled[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(filled, filled[1:]))


def test_field_at_a_byte_and_bytes_endpoint(served):
    base, root = served
    data = (root / "cube.n3pmesh").read_bytes()
    _, doc = get_json(base + "/api/doc?path=cube.n3pmesh")
    verts = next(c for c in doc["tree"]["children"] if c["name"] == "vertices")
    offset = verts["span"][0] + 9
    status, hit = get_json(base + f"/api/field?path=cube.n3pmesh&offset={offset}")
    assert status == 200 and hit["path"] == "/root/vertices"
    assert hit["itemSpan"][0] <= offset < hit["itemSpan"][1]
    status, _, raw = get(base + f"/api/bytes?path=cube.n3pmesh&offset=3&length=10")
    assert status == 200 and raw == data[3:13]
    status, _, raw = get(base + f"/api/bytes?path=cube.n3pmesh&offset=0&length=999999")
    assert raw == data[:65536]


def test_glb_endpoint_serves_the_export(served):
    base, _ = served
    status, ctype, body = get(base + "/api/glb?path=cube.n3pmesh")
    assert status == 200 and ctype == "model/gltf-binary"
    assert body[:4] == b"glTF" and struct.unpack_from("<I", body, 8)[0] == len(body)


@pytest.mark.parametrize("rel, status", [
    ("../secret.n3pmesh", 403), ("%2Fetc%2Fpasswd", 403), ("escape.n3pmesh", 403),
    ("sub/..%2F..%2Fsecret.n3pmesh", 403), ("missing.n3pmesh", 404), ("", 400),
])
def test_paths_are_confined_to_the_served_folder(served, rel, status):
    base, _ = served
    for endpoint in ("doc", "bytes", "glb", "field"):
        got, body = get_json(base + f"/api/{endpoint}?path={rel}&offset=0")
        assert got == status, (endpoint, rel, body)
        assert body["error"] in ("Forbidden", "NotFound", "BadRequest")


def test_bad_file_is_an_error_with_offset_not_a_dead_server(served):
    base, _ = served
    status, body = get_json(base + "/api/doc?path=broken.n3pmesh")
    assert status == 422
    with pytest.raises(potsherd.FormatError) as direct:
        potsherd.read(b"\x05\x00\x00\x00abc", "n3pmesh")
    assert body["error"] == type(direct.value).__name__ == "TruncatedError"
    assert body["offset"] == direct.value.offset == 0
    assert body["fieldPath"] == direct.value.path == "n3pmesh.name"
    status, body = get_json(base + "/api/doc?path=cube.n3pmesh")   # still serving
    assert status == 200
    assert get_json(base + "/api/nothing")[0] == 404
    assert get_json(base + "/api/doc?path=cube.n3pmesh&node=/root/nope")[0] == 404
    assert get_json(base + "/api/bytes?path=cube.n3pmesh&offset=x")[0] == 400


def test_static_page_and_vendor_refusals(served):
    base, _ = served
    status, ctype, body = get(base + "/")
    assert status == 200 and ctype.startswith("text/html") and b"potsherd view" in body
    assert get(base + "/app.js")[1] == "text/javascript"
    assert get(base + "/../server.py")[0] in (403, 404)


def _walk(node_span, tree, data, check):
    """Every span inside its parent's and inside the file."""
    for key, child, span in tree._entries(node_span[0]):
        if span is None:
            continue
        lo, hi = node_span[1] if node_span[1] else (0, len(data))
        check(lo <= span[0] <= span[1] <= hi, (key, span, (lo, hi)))
        _walk((child, span), tree, data, check)


def _corpus_files():
    if not CORPUS.is_dir():
        return []
    out = []
    for fam in ("ko", "dts", "fbx", "tr4wad"):
        for path in sorted((CORPUS / fam).rglob("*")):
            if path.is_file() and path.suffix.lower() not in (".txt",):
                out.append(path)
    return out


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_span_decode_is_the_same_document_on_every_corpus_file():
    """The span-recording decode must not change what is decoded: it re-encodes
    byte-exactly, and every span nests inside its parent."""
    from potsherd.view.tree import DocTree
    checked = 0
    for path in _corpus_files():
        data = path.read_bytes()
        try:
            codec = registry.detect(data, str(path))
        except potsherd.FormatError:
            continue
        try:
            doc, spans = registry.decode_with_spans(data, path=str(path))
        except potsherd.FormatError:
            with pytest.raises(potsherd.FormatError):
                potsherd.read(data, codec.name)
            continue
        assert doc.encode() == data, path
        problems = []
        _walk((doc.root, None), DocTree(doc.root, spans), data,
              lambda ok, what: ok or problems.append(what))
        assert not problems, (path, problems[:3])
        checked += 1
    assert checked > 300


def test_a_ragged_table_is_a_record_of_its_columns(served):
    """Skin bindings (a ragged table) open as a record whose children are the
    fixed columns and the flat arrays, with the table's byte span."""
    base, root = served

    def s(b):
        return struct.pack("<i", len(b)) + b
    f32 = lambda *v: struct.pack(f"<{len(v)}f", *v)  # noqa: E731
    i32 = lambda *v: struct.pack(f"<{len(v)}i", *v)  # noqa: E731
    u16 = lambda *v: struct.pack(f"<{len(v)}H", *v)  # noqa: E731
    bindings = (f32(1, 2, 3) + i32(1) + b"PTRSPTRS" + i32(7)
                + f32(4, 5, 6) + i32(3) + b"\x01" * 8 + i32(1, 2, 3) + f32(0.5, 0.25, 0.25)
                + f32(7, 8, 9) + i32(0) + b"\x02" * 8)
    lod0 = (s(b"lod0") + i32(1, 3, 2) + f32(*range(18)) + u16(0, 1, 2) + f32(0, 0, 1, 1)
            + u16(0, 1, 1) + bindings)
    data = s(b"skins") + lod0 + (s(b"") + i32(0, 0, 0)) * 3
    (root / "skin.n3cskins").write_bytes(data)
    status, body = get_json(base + "/api/doc?path=skin.n3cskins&node=/root/lods/0/bindings")
    assert status == 200, body
    tree = body["tree"]
    assert tree["kind"] == "record" and tree["count"] == 5
    kids = {c["name"]: c for c in tree["children"]}
    assert list(kids) == ["origin", "count", "pointerPlaceholders", "joints", "weights"]
    assert kids["count"]["preview"] == [1, 3, 0] and kids["joints"]["preview"] == [7, 1, 2, 3]
    start, end = tree["span"]
    assert data[start:start + 12] == struct.pack("<3f", 1, 2, 3) and end == len(data) - 3 * 16


def test_a_record_array_is_a_table_of_columns_paged_by_rows(served):
    """Record arrays answer as columns (name, type) and a page of rows, never as numpy's
    dtype text; ``offset`` pages through the rows."""
    base, root = served
    doc = potsherd.read(root / "cube.n3pmesh")
    rows = np.zeros(130, dtype=doc.root["collapses"].dtype)
    rows["indicesToLose"] = np.arange(130)
    rows["padding"] = b"ab\x00"
    doc.root["collapses"], doc.root["collapseCount"] = rows, 130
    (root / "table.n3pmesh").write_bytes(potsherd.write(doc))
    status, body = get_json(base + "/api/doc?path=table.n3pmesh")
    top = next(c for c in body["tree"]["children"] if c["name"] == "collapses")
    assert top["kind"] == "table" and top["count"] == 130 and "rows" not in top
    assert [c["name"] for c in top["columns"]][:2] == ["indicesToLose", "indicesToChange"]
    assert {c["name"]: c["type"] for c in top["columns"]}["padding"] == "V3"
    assert top["itemSize"] == 24 and "dtype" not in top
    status, body = get_json(base + "/api/doc?path=table.n3pmesh&node=/root/collapses&offset=120")
    t = body["tree"]
    assert status == 200 and t["offset"] == 120 and t["more"] == 0 and len(t["rows"]) == 10
    assert t["rows"][0][0] == 120 and t["rows"][0][-1] == "ab"
    first = get_json(base + "/api/doc?path=table.n3pmesh&node=/root/collapses")[1]["tree"]
    assert len(first["rows"]) == 100 and first["more"] == 30
    assert "('" not in json.dumps(first)
