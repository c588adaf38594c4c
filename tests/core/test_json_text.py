"""JSON text: orjson's, with numpy arrays and lazy record lists written in bulk;
what orjson refuses is the standard library's text in the same layout."""
from __future__ import annotations

import io
import json
import random
import struct
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import potsherd
from potsherd import api, registry
from potsherd.core import jsontext
from potsherd.core.errors import FormatError

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def _orjson(obj, indent):
    opt = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, option=opt | orjson.OPT_SERIALIZE_NUMPY).decode()


def _std(obj, indent):
    return json.dumps(obj, indent=indent, ensure_ascii=False,
                      separators=(",", ":") if indent is None else None)


def _floats(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = i % 3
        if k == 0:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        elif k == 1:
            v = float(np.frombuffer(struct.pack("<I", rng.getrandbits(32)), np.float32)[0])
        else:
            v = rng.uniform(-1, 1) * 10.0 ** rng.randint(-9, 22)
        if v == v and abs(v) != float("inf"):
            out.append(v)
    return out


@pytest.mark.parametrize("indent", [2, None])
def test_text_is_orjsons_and_reads_back_exactly(indent):
    vals = _floats(30000, 7)
    obj = {"floats": vals, "edge": [1e-5, -1e-5, 9.99e-5, 1e-4, 1e16, 1e15, 1.5e300, 5e-324, -0.0, 0.0,
                                    200.00006103515625, 10.00001, 1.00000001],
           "strings": ["x 1e5", "0.00001", "a, 1e-7", "a\x01\x7f\u2028é\b\f\n\t\"\\/", "null", "a: null"],
           "nested": [[[[[[1e-7]]]]], {}, [], {"k\"\\": [True, False, 18446744073709551615]}],
           "ints": list(range(-5, 5))}
    for o in (obj, vals[:3], 1e-5, -2.5e-7, "s", [], {}, {"a": {}}):
        text = jsontext.dumps(o, indent)
        assert text == _orjson(o, indent)
        assert jsontext.loads(text) == o
    assert jsontext.dumps(obj, 2).count("\n") > 30000  # (a negative control: it is indented)


def test_numpy_arrays_are_written_as_their_lists():
    # (arrays reach dumps in native byte order: see layout.jsonio._native)
    arrays = [np.arange(7, dtype=np.uint16), np.arange(6, dtype=np.int64).reshape(2, 3),
              np.array([1e-5, 0.25, 3e20]), np.zeros((0, 3), np.int32), np.array([True, False]),
              np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2],      # not contiguous
              np.array([1.5, -2.0], dtype=np.float16)]                 # not written by orjson itself
    obj = {"a": arrays}
    for indent in (2, None):
        assert jsontext.dumps(obj, indent) == _orjson({"a": [a.tolist() for a in arrays]}, indent)


def test_what_orjson_refuses_is_the_standard_librarys_text(monkeypatch):
    for o in ({"x": float("nan")}, {"x": None}, {1: 2}, {"a": 2 ** 70}, {"s": "\ud800"},
              [1, [float("inf")]]):
        assert jsontext.dumps(o) == _std(o, 2)
        assert jsontext.dumps(o, None) == _std(o, None)
    assert jsontext.loads('{"a": NaN, "b": 123456789012345678901234567890}') == \
        json.loads('{"a": NaN, "b": 123456789012345678901234567890}')
    with pytest.raises(ValueError):
        jsontext.loads("{bad")
    # negative control: "null" inside a string is not a null value (orjson writes it)
    monkeypatch.setattr(jsontext, "_std", lambda *a: pytest.fail("standard library used"))
    for o in ({"s": "null"}, {"s": "a: null,"}, ["nullx", "[null", "\nnull"]):
        assert jsontext.dumps(o) == _orjson(o, 2)
        assert jsontext.dumps(o, None) == _orjson(o, None)
    # a None is a null orjson writes too (only NaN and infinities are refused);
    # compact text cannot tell ",null]" in a string from a value, so the tree decides
    for o in ({"s": "a,null]", "f": 1e-05, "n": None}, [None, {"x": [None]}]):
        assert jsontext.dumps(o) == _orjson(o, 2)
        assert jsontext.dumps(o, None) == _orjson(o, None)


def _lazy_tree(draw_items, rng: random.Random, depth: int = 0):
    """A random JSON tree with some lists as LazyItems of records (dicts) whose
    converter may itself return lazy lists; and the same tree as plain lists."""
    k = rng.randrange(5 if depth < 3 else 2)
    if k == 0:
        v = rng.choice([1, -7, 2.5, "s\n\"", True, 18446744073709551615, np.arange(3, dtype=np.int32)])
        return v, (v.tolist() if isinstance(v, np.ndarray) else v)
    if k == 1:
        pairs = [_lazy_tree(draw_items, rng, depth + 1) for _ in range(rng.randrange(3))]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if k == 2:
        pairs = {f"k{i}": _lazy_tree(draw_items, rng, depth + 1) for i in range(rng.randrange(3))}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    n = draw_items()
    subs = [_lazy_tree(draw_items, rng, depth + 1) for _ in range(n)]
    plain = [{"i": i, "v": p[1]} for i, p in enumerate(subs)]
    return jsontext.LazyItems(list(range(n)), lambda i: {"i": i, "v": subs[i][0]}), plain


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from([1, 2, 3, 48]))
def test_lazy_record_lists_are_written_as_their_lists(seed, size):
    rng = random.Random(seed)
    sizes = [0, 1, size - 1, size, size + 1, 2 * size + 1]
    lazy, plain = _lazy_tree(lambda: rng.choice(sizes), rng)
    for indent in (2, None):
        want = _orjson(plain, indent)
        assert jsontext.dumps(lazy, indent) == want
        # a piece of a larger text (write_json): every line after the first one level deeper
        assert jsontext.dumps(lazy, indent, depth=1) == (want.replace("\n", "\n  ") if indent else want)
        assert jsontext.dumps(lazy, indent, depth=3) == (want.replace("\n", "\n      ") if indent else want)


def test_a_complex_that_is_not_a_reference_is_refused_as_before():
    lazy = jsontext.LazyItems([1, 2], lambda i: {"i": i})
    for o in ({"a": 1j}, {"a": lazy, "b": 1 + 0j}, {"a": lazy, "b": 0j}, {"a": lazy, "b": 5 + 7j}):
        with pytest.raises(TypeError):
            jsontext.dumps(o)


def test_a_lazy_list_holding_nan_is_the_standard_librarys_text():
    lazy = jsontext.LazyItems(list(range(200)), lambda i: {"x": float("nan") if i == 150 else float(i)})
    plain = [{"x": float("nan") if i == 150 else float(i)} for i in range(200)]
    text = jsontext.dumps({"a": lazy})
    assert text == _std({"a": plain}, 2) and "NaN" in text


def _tree_with(rng: random.Random, bad, depth: int = 0):
    """A random tree of dicts, lists, tuples, scalars and numpy arrays, with
    ``bad`` (a NaN, an infinity, or a finite float) somewhere when given."""
    k = rng.randrange(6 if depth < 4 else 3)
    if k == 0:
        return rng.choice([1, "s", None, True, 2.5, b"x"])
    if k == 1:
        return rng.choice([np.arange(5, dtype=np.uint32), np.array([0.5, -1.0], np.float32),
                           np.float64(2.0), np.zeros((0, 3), np.float64)])
    if k == 2:
        return [rng.randrange(9) for _ in range(rng.randrange(40))]
    if k in (3, 4):
        return [_tree_with(rng, None, depth + 1) for _ in range(rng.randrange(6))] if k == 3 \
            else {f"k{i}": _tree_with(rng, None, depth + 1) for i in range(rng.randrange(6))}
    return tuple(_tree_with(rng, None, depth + 1) for _ in range(rng.randrange(4)))


def _plant(rng: random.Random, tree, bad):
    """``tree`` with ``bad`` put in one place (a new list or dict entry, or in an array)."""
    holders = []

    def walk(o):
        if isinstance(o, (dict, list)):
            holders.append(o)
            for v in (o.values() if isinstance(o, dict) else o):
                walk(v)
    walk(tree)
    if not holders:
        return [tree, bad]
    h = rng.choice(holders)
    value = rng.choice([bad, np.array([1.0, bad]), np.float32(bad), [0, [bad]]])
    if isinstance(h, dict):
        h[f"bad{len(h)}"] = value
    else:
        h.insert(rng.randrange(len(h) + 1), value)
    return tree


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from([None, float("nan"), float("inf"), -float("inf"), 1e30]))
def test_the_bounded_tree_look_answers_as_the_whole_tree_does(seed, bad):
    """The look at the tree that spares the scan of the text for ``null``: when
    it answers (within its budget), it answers as the full walk does; when it
    cannot, the text and the tree decide, as before."""
    rng = random.Random(seed)
    tree = _tree_with(rng, None)
    if bad is not None:
        tree = _plant(rng, {"root": tree}, bad)
    want = jsontext._non_finite(tree)
    assert want == (bad is not None and bad != 1e30)  # (negative control: 1e30 is finite, in float32 too)
    for budget in (1, 8, 64, 10 ** 6):
        got = jsontext._non_finite_within(tree, budget)
        assert got in (None, want)
    assert jsontext._non_finite_within(tree, 10 ** 6) == want  # (a big budget always answers)
    raw = orjson.dumps(tree, option=orjson.OPT_SERIALIZE_NUMPY,
                       default=lambda o: o.tolist() if hasattr(o, "tolist") else list(o)) \
        if not want else b"null"
    assert jsontext._holds_non_finite(tree, raw, False) == want


def test_a_lazy_list_leaves_the_question_to_the_text():
    lazy = jsontext.LazyItems([1.0, float("nan")], lambda x: {"x": x})
    assert jsontext._non_finite_within({"a": lazy}, 10 ** 6) is None
    assert jsontext._holds_non_finite({"a": lazy}, b'{"a":[{"x":1.0},{"x":null}]}', False)
    assert jsontext.dumps({"a": jsontext.LazyItems([1.0, 2.0], lambda x: {"x": x})}, None) == \
        '{"a":[{"x":1.0},{"x":2.0}]}'


def test_a_big_array_tree_is_answered_without_the_text():
    """A few containers around big arrays (the n3joint shape): the tree answers,
    so the text is never scanned (a text holding ``null`` is not looked at)."""
    tree = {"joints": [{"keys": np.arange(100_000, dtype=np.uint32), "name": "ab"}] * 20}
    assert jsontext._non_finite_within(tree, 256) is False
    assert jsontext._holds_non_finite(tree, b"null" * (1 << 15), True) is False
    tree["joints"].append({"keys": np.array([1.0, np.inf])})
    assert jsontext._holds_non_finite(tree, b"x" * (1 << 16), True) is True  # (the tree, not the text)


def test_a_lazy_list_is_converted_one_item_at_a_time():
    """The JSON value of a record is built just before it is written and freed
    just after: the converter never has more than one result alive."""
    alive = [0]
    peak = [0]

    class Tracked(dict):
        def __del__(self):
            alive[0] -= 1

    def convert(i):
        alive[0] += 1
        peak[0] = max(peak[0], alive[0])
        return Tracked(i=i, sub=jsontext.LazyItems(list(range(3 * jsontext.LAZY_MIN)), int))
    n = 10 * jsontext.LAZY_MIN
    text = jsontext.dumps({"a": jsontext.LazyItems(list(range(n)), convert)})
    assert jsontext.loads(text) == {"a": [{"i": i, "sub": list(range(3 * jsontext.LAZY_MIN))}
                                          for i in range(n)]}
    assert peak[0] == 1
    # negative control: the list form keeps them all
    peak[0] = alive[0] = 0
    kept = [convert(i) for i in range(n)]
    assert peak[0] == n and len(kept) == n


def _corpus_sample(per_codec: int = 2, max_size: int = 400_000):
    if not CORPUS.is_dir():
        return []
    seen: dict[str, int] = {}
    out = []
    for p in sorted(CORPUS.rglob("*")):
        if not p.is_file() or not registry.known_extension(str(p)) or p.stat().st_size > max_size:
            continue
        try:
            doc = potsherd.read(str(p))
        except FormatError:
            continue
        if seen.get(doc.format, 0) >= per_codec:
            continue
        seen[doc.format] = seen.get(doc.format, 0) + 1
        out.append((p, doc))
    return out


def test_corpus_dumps_are_orjsons_text_of_the_json_form_and_load_back():
    sample = _corpus_sample()
    if not sample:
        pytest.skip(f"no corpus at {CORPUS}")
    formats = set()
    lazy = 0
    for path, doc in sample:
        for form in ("wire", "readable"):
            plain = doc.to_json(form)
            try:
                want, want_compact = _orjson(plain, 2), _orjson(plain, None)
            except orjson.JSONEncodeError:
                want, want_compact = _std(plain, 2), _std(plain, None)
            if "null" in want and ("NaN" in _std(plain, 2) or "Infinity" in _std(plain, 2)):
                want, want_compact = _std(plain, 2), _std(plain, None)
            assert doc.dumps(form) == want, f"{path.name} {form}"
            assert doc.dumps(form, None) == want_compact, f"{path.name} {form}"
            for indent, text in ((2, want), (None, want_compact)):
                buf = io.StringIO()
                api.write_json(doc, form, buf, indent=indent)
                assert buf.getvalue() == text, f"{path.name} {form} (write_json)"
            assert potsherd.from_json(want).encode() == doc.encode(), f"{path.name} {form}"
            with jsontext.native_arrays():
                lazy += "LazyItems" in repr(doc.to_json(form))
        formats.add(doc.format)
    assert len(formats) >= 5
    assert lazy  # (the lazy path is exercised by real files)


def test_write_json_to_a_utf8_file_writes_the_same_text_as_bytes(tmp_path):
    """A UTF-8 text stream gets orjson's bytes through its buffer (no text copy);
    any other stream gets the text: the same characters either way."""
    sample = _corpus_sample(per_codec=1, max_size=50_000)[:6]
    if not sample:
        pytest.skip(f"no corpus at {CORPUS}")
    for path, doc in sample:
        for form in ("wire", "readable"):
            want = doc.dumps(form)
            raw = io.BytesIO()
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
            text.write("<")             # (text written before stays before)
            api.write_json(doc, form, text)
            text.write(">")
            text.flush()
            assert raw.getvalue().decode("utf-8") == "<" + want + ">", path.name
            assert api._utf8_buffer(text) is raw
            other = io.TextIOWrapper(io.BytesIO(), encoding="utf-16")
            assert api._utf8_buffer(other) is None    # negative control: the text path
            api.write_json(doc, form, other)
            other.flush()
            assert other.buffer.getvalue().decode("utf-16") == want
