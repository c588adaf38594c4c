"""The generated JSON loaders (core/layout/jsonload.py) give what the
field-by-field loading gives: the same values, key order and types, and for
a document that is wrong the same error with the same JSON path."""
from __future__ import annotations

import copy
import random

import numpy as np
import orjson
import pytest

from potsherd.core.errors import FormatError
from potsherd.core.layout import JsonCtx, Layout
from potsherd.core.layout.records import Record
from potsherd.core.values import F32NaN, RawString

LAYOUT = Layout({
    "root": [("version", "u16", "always"), ("scale", "f32", "always"), ("big", "f64", "always"),
             ("name", "string", "always"), ("pos", "vec3", "always"), ("box", "rect", "always"),
             ("extra", "i8", {"gt": ["version", 1]}),
             ("n", "u8", "always"), ("kids", {"kind": "array", "count": "n", "item": "node"}, "always"),
             ("raw", {"kind": "bytes", "count": 2}, "always"),
             ("blob", {"kind": "bytes", "count": "n"}, "always"),
             ("vals", {"kind": "array", "count": 3, "item": "i16"}, "always"),
             ("wide", {"kind": "array", "count": 2, "item": "u64"}, "always"),
             ("tris", {"kind": "array", "count": "n", "item": {"kind": "array", "count": 3, "item": "u32"}},
              "always"),
             ("pts", {"kind": "array", "count": "n", "item": "vec3"}, "always"),
             ("fl", {"kind": "array", "count": "n", "item": "f32"}, "always"),
             ("tree", "tree", "always"),
             ("names", {"kind": "array", "count": 2, "item": "string"}, "always")],
    "node": [("w", "f32", "always"), ("id", "i32", "always"), ("q", "quat", "always")],
    "tree": [("label", "string", "always"), ("m", "u8", "always"),
             ("children", {"kind": "array", "count": "m", "item": "tree"}, "always")],
    # two fields of one name (exclusive conditions): loaded field by field only
    "shared": [("v", "u8", "always"), ("kind", "u8", {"eq": ["v", 1]}), ("kind", "u16", {"ne": ["v", 1]})],
})

NAN = F32NaN(0x7FC00123)
VALUE = {
    "version": 2, "scale": 1.5, "big": -2.25e300, "name": RawString(b"abc"), "pos": [1.0, -2.0, 3.25],
    "box": [1, -2, 3, 4], "extra": -5, "n": 2,
    "kids": [{"w": 0.5, "id": -7, "q": [0.0, 0.0, 0.0, 1.0]},
             {"w": NAN, "id": 3, "q": [NAN, 1.0, float("inf"), 0.0]}],
    "raw": b"\x01\x02", "blob": b"\xff\x00", "vals": np.array([1, -2, 3], np.int16),
    "wide": np.array([0, 2 ** 64 - 1], np.uint64),
    "tris": np.array([[0, 1, 2], [4294967295, 7, 8]], np.uint32),
    "pts": np.array([[1, 2, 3], [4, 5, float("nan")]], np.float32),
    "fl": np.array([0.5, -0.0], np.float32),
    "tree": {"label": RawString(b"a"), "m": 1,
             "children": [{"label": RawString(b""), "m": 0, "children": []}]},
    "names": [RawString(b"x"), RawString(b"", -3)],
}


def reference(monkeypatch, rec, o, ctx):
    """Every record (nested ones too) loaded field by field: the value, or the error."""
    with monkeypatch.context() as m:
        m.setattr(Record, "from_json", Record.from_json_by_field)
        return outcome(lambda: rec.from_json(o, ctx, "$"))


def outcome(fn):
    try:
        return "ok", fn()
    except FormatError as e:
        return "error", (type(e).__name__, e.message, e.path)


def same(a, b) -> bool:
    # repr: key order, types, dtypes, shapes and NaN-bearing values compared exactly
    return repr(a) == repr(b)


def docs(form):
    ctx = JsonCtx(form, "latin-1")
    return ctx, orjson.loads(orjson.dumps(LAYOUT.record("root").to_json(VALUE, ctx),
                                          option=orjson.OPT_SERIALIZE_NUMPY))


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_generated_loading_is_the_field_by_field_loading(form, monkeypatch):
    ctx, o = docs(form)
    rec = LAYOUT.record("root")
    calls = []
    by_field = Record.from_json_by_field
    monkeypatch.setattr(Record, "from_json_by_field",
                        lambda self, *a: calls.append(self.name) or by_field(self, *a))
    got = outcome(lambda: rec.from_json(o, ctx, "$"))
    # the document is usual: no record went the slow way (negative control below)
    assert calls == []
    want = reference(monkeypatch, rec, o, ctx)
    assert got[0] == want[0] == "ok" and same(got, want)
    assert got[1]["tris"].dtype == np.uint32 and got[1]["tris"].shape == (2, 3)
    assert got[1]["kids"][1]["w"].bits == 0x7FC00123 and got[1]["names"][1].raw_len == -3
    # negative control: one unusual value sends that record (and its parents) the slow way
    o["kids"][1]["id"] = 2 ** 40
    calls.clear()
    assert outcome(lambda: rec.from_json(o, ctx, "$"))[0] == "error"
    assert calls == ["root", "node"]


HOSTILE = [None, True, False, 0, -1, 1.5, -0.0, 2 ** 31, 2 ** 32, 2 ** 64, -2 ** 63 - 1, 1e39, -1e308,
           "", "zz", "0102", "616263 ", [], [[]], [1, 2], [1.0, 2], [True, 1], [[1, 2, 3]], [[1, 2], [3]],
           [0x7FC00000], [-1], [2 ** 33], {"bits": 5}, {"bits": [1, 2]}, {"len": -2}, {"len": 1},
           {"hex": "00"}, {}, {"x": 1}, float("nan"), float("inf")]


def _nodes(o, path=()):
    yield path
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _nodes(v, path + (i,))


def _mutate(o, rng):
    o = copy.deepcopy(o)
    paths = [p for p in _nodes(o) if p]
    p = rng.choice(paths)
    parent = o
    for k in p[:-1]:
        parent = parent[k]
    what = rng.random()
    if what < 0.7:
        parent[p[-1]] = copy.deepcopy(rng.choice(HOSTILE))
    elif what < 0.8 and isinstance(parent, dict):
        del parent[p[-1]]
    elif what < 0.9 and isinstance(parent, dict):
        parent["unknown"] = 1
    elif isinstance(parent, dict):  # the same keys in another order
        items = list(parent.items())
        rng.shuffle(items)
        parent.clear()
        parent.update(items)
    return o


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_hostile_edits_load_or_fail_exactly_as_field_by_field(form, monkeypatch):
    ctx, base = docs(form)
    rec = LAYOUT.record("root")
    rng = random.Random(f"jsonload-{form}")
    kinds = {"ok": 0, "error": 0}
    for _ in range(600):
        o = _mutate(base, rng)
        got = outcome(lambda: rec.from_json(o, ctx, "$"))
        want = reference(monkeypatch, rec, o, ctx)
        assert got[0] == want[0] and same(got, want), (o, got, want)
        kinds[got[0]] += 1
    # (both outcomes are exercised, so neither comparison is vacuous)
    assert kinds["ok"] > 50 and kinds["error"] > 100


def test_fields_sharing_a_name_load_field_by_field(monkeypatch):
    rec = LAYOUT.record("shared")
    ctx = JsonCtx("wire")
    for o in ({"v": 1, "kind": 200}, {"v": 2, "kind": 60000}, {"v": 1, "kind": 70000}):
        assert same(outcome(lambda: rec.from_json(o, ctx, "$")), reference(monkeypatch, rec, o, ctx))
    assert rec._load_fns[("wire", "latin-1")][1] is None


def test_key_orders_each_get_their_function_and_keep_their_order():
    rec = LAYOUT.record("node")
    ctx = JsonCtx("wire")
    a = rec.from_json({"w": 0, "id": 1, "q": [0, 0, 0, 0]}, ctx, "$")
    b = rec.from_json({"q": [0, 0, 0, 0], "id": 1, "w": 0}, ctx, "$")
    assert list(a) == ["w", "id", "q"] and list(b) == ["q", "id", "w"]
    assert a == b


def test_recompiled_fields_get_a_new_loader():
    lay = Layout({"r": [("a", "u8", "always"), ("b", "u8", "always")]})
    rec = lay.record("r")
    ctx = JsonCtx("wire")
    assert rec.from_json({"a": 1, "b": 2}, ctx, "$") == {"a": 1, "b": 2}
    rec.fields = [f for f in rec.fields if f.name != "b"]
    with pytest.raises(FormatError, match="unknown field 'b'"):
        rec.from_json({"a": 1, "b": 2}, ctx, "$")


# --- the corpus: every layout-engine file loads the same both ways -------------

def _corpus_files():
    from corpus_paths import CORPUS_ROOT
    import potsherd
    out = []
    for fam in ("ko", "dts", "darkstar-world", "tr4wad"):
        folder = CORPUS_ROOT / fam
        if folder.is_dir():
            out += sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() not in
                          (".txt", ".md", ".png", ".glb", ".gltf", ".fbx"))
    return out, potsherd


def deep_same(a, b) -> bool:
    """Equal values of equal types, dict keys in the same order, arrays of the
    same dtype, shape and bytes (NaN bit patterns included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(deep_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(deep_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, F32NaN):
        return a.bits == b.bits
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, RawString):
        return bytes(a) == bytes(b) and a.raw_len == b.raw_len
    if hasattr(a, "rows") and hasattr(a, "flat"):  # a ragged table
        return deep_same(a.rows, b.rows) and deep_same(a.flat, b.flat)
    return a == b


def test_corpus_documents_load_as_field_by_field(monkeypatch):
    files, potsherd = _corpus_files()
    if not files:
        pytest.skip("corpus not present at ../shared/corpus")
    slow_records = set()
    by_field = Record.from_json_by_field
    loaded = 0
    for path in files:
        if path.stat().st_size > 2_000_000:
            continue  # (the largest zones: the KO corpus test rebuilds them from JSON)
        try:
            doc = potsherd.read(path)
        except FormatError:
            continue  # (files that are not a layout format's, or refused by design)
        for form in ("wire", "readable"):
            o = orjson.loads(doc.dumps(form))
            monkeypatch.setattr(Record, "from_json_by_field",
                                lambda self, *a: slow_records.add(self) or by_field(self, *a))
            fast = potsherd.from_json(o)
            monkeypatch.undo()
            monkeypatch.setattr(Record, "from_json", by_field)
            slow = potsherd.from_json(o)
            monkeypatch.undo()
            assert deep_same(fast.root, slow.root), (path, form)
            assert fast.encode() == slow.encode() == path.read_bytes()
            loaded += 1
    assert loaded > 300
    # only records with two fields of one name went field by field
    def shares_a_name(rec):
        names = [f.name for f in rec.fields if not f.is_param]
        return len(set(names)) < len(names)
    assert all(shares_a_name(r) for r in slow_records), sorted(r.name for r in slow_records)


def test_each_form_and_encoding_keeps_its_loader():
    rec = LAYOUT.record("tree")
    o = {"label": "61", "m": 0, "children": []}
    keys = [("wire", "cp949"), ("wire", "cp950"), ("readable", "cp949")]
    def functions():
        return [rec._load_fns[(form, enc)][1] for form, enc in keys]
    for form, enc in keys:
        rec.from_json(o, JsonCtx(form, enc), "$")
    first = functions()
    for form, enc in keys * 2:
        rec.from_json(o, JsonCtx(form, enc), "$")
    assert functions() == first and len(set(map(id, first))) == 3


def test_nesting_too_deep_is_not_retried_at_every_level(monkeypatch):
    # (the field-by-field path nests deeper still: retrying it on the way up
    # made a hostile 600-level document cost as many failed descents)
    rec = LAYOUT.record("tree")
    o = {"label": "", "m": 0, "children": []}
    for _ in range(5000):
        o = {"label": "", "m": 1, "children": [o]}
    calls = []
    by_field = Record.from_json_by_field
    monkeypatch.setattr(Record, "from_json_by_field",
                        lambda self, *a: calls.append(1) or by_field(self, *a))
    with pytest.raises(RecursionError):
        rec.from_json(o, JsonCtx("wire"), "$")
    assert calls == []


@pytest.mark.parametrize("pattern", ["*.n3pmesh", "*.uif", "*.n3anim", "*.n3chr", "*.fxb", "*.n3sky",
                                     "*.sam", "*.n3cskins"])
def test_corpus_documents_with_hostile_edits_load_or_fail_as_field_by_field(pattern, monkeypatch):
    from corpus_paths import CORPUS_ROOT
    import potsherd
    files = sorted(p for fam in ("ko", "tr4wad") for p in (CORPUS_ROOT / fam).rglob(pattern)
                   if p.is_file() and p.stat().st_size < 200_000)
    if not files:
        pytest.skip(f"no {pattern} in the corpus")
    rng = random.Random(f"jsonload-corpus-{pattern}")
    by_field = Record.from_json_by_field
    kinds = {"ok": 0, "error": 0}
    for path in rng.sample(files, min(3, len(files))):
        doc = potsherd.read(path)
        for form in ("wire", "readable"):
            base = orjson.loads(doc.dumps(form))
            for _ in range(60):
                o = _mutate(base, rng)
                fast = outcome(lambda: potsherd.from_json(o).root)
                with monkeypatch.context() as m:
                    m.setattr(Record, "from_json", by_field)
                    slow = outcome(lambda: potsherd.from_json(o).root)
                assert fast[0] == slow[0], (path, form, fast, slow)
                assert deep_same(fast[1], slow[1]) if fast[0] == "ok" else fast == slow, (path, form)
                kinds[fast[0]] += 1
    assert kinds["ok"] and kinds["error"]
