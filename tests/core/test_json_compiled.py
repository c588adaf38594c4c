"""The generated record -> JSON functions give what the per-field conversion
gives, value for value, in both forms (inline scalars, fixed runs, fallbacks)."""
from __future__ import annotations

import numpy as np
import pytest

from potsherd.core.layout import JsonCtx, Layout
from potsherd.core.layout.records import Record
from potsherd.core.values import F32NaN, RawString

LAYOUT = Layout({
    "root": [("version", "u16", "always"), ("scale", "f32", "always"), ("name", "string", "always"),
             ("pos", "vec3", "always"), ("box", "rect", "always"),
             ("extra", "f64", {"gt": ["version", 1]}),
             ("kind", "u8", {"eq": ["version", 1]}), ("kind", "u16", {"ne": ["version", 1]}),
             ("n", "u8", "always"), ("kids", {"kind": "array", "count": "n", "item": "node"}, "always"),
             ("raw", {"kind": "bytes", "count": 2}, "always"),
             ("vals", {"kind": "array", "count": 3, "item": "i16"}, "always")],
    # all fixed numbers: the wire form converts it with one pack/unpack
    "node": [("w", "f32", "always"), ("id", "i32", "always"), ("q", "quat", "always")],
    "tree": [("label", "string", "always"), ("m", "u8", "always"),
             ("children", {"kind": "array", "count": "m", "item": "tree"}, "always")],
})

NAN = F32NaN(0x7FC00123)
CASES = [
    {"version": 2, "scale": 1.5, "name": RawString(b"abc"), "pos": [1.0, -2.0, 3.25], "box": [1, 2, 3, 4],
     "extra": 2.5, "kind": 300, "n": 2,
     "kids": [{"w": 0.5, "id": -7, "q": [0.0, 0.0, 0.0, 1.0]},
              {"w": NAN, "id": np.int32(3), "q": [NAN, 1.0, float("inf"), 0.0]}],
     "raw": b"\x01\x02", "vals": np.array([1, -2, 3], np.int16)},
    # edits: numpy scalars, an empty string with a raw length, inf, a missing field,
    # a group of the wrong length, a value that is not an int
    {"version": np.uint16(1), "scale": float("inf"), "name": RawString(b"", -1), "pos": [1, 2, 3],
     "box": [np.int64(5), 6, 7, 8], "kind": True, "n": 1,
     "kids": [{"w": np.float32(0.1), "id": 1, "q": [1.0, 2.0, 3.0]}], "raw": bytearray(b"\xff\x00"),
     "vals": [1, 2, 3], "unknown": 5},
    {"version": 3, "scale": -0.0, "name": b"", "pos": np.array([1.0, 2.0, 3.0], np.float32), "box": [0] * 4,
     "n": 0, "kids": [{"id": 2, "w": -1e30, "q": [0.0] * 4}], "raw": b"", "vals": np.zeros(3, np.int16)},
]


def by_field(monkeypatch, rec, v, ctx):
    """The reference: every record (nested ones too) converted field by field."""
    with monkeypatch.context() as m:
        m.setattr(Record, "to_json", Record.to_json_by_field)
        return rec.to_json(v, ctx)


@pytest.mark.parametrize("form", ["wire", "readable"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_generated_conversion_is_the_per_field_conversion(form, case, monkeypatch):
    ctx = JsonCtx(form, "latin-1")
    rec = LAYOUT.record("root")
    got = rec.to_json(CASES[case], ctx)
    want = by_field(monkeypatch, rec, CASES[case], ctx)
    assert repr(got) == repr(want)  # (repr: types and NaN-bearing dicts compared exactly)
    assert "unknown" not in got


def test_wire_values_are_bit_patterns_and_nan_bits_are_kept():
    got = LAYOUT.record("root").to_json(CASES[0], JsonCtx("wire"))
    assert got["scale"] == 0x3FC00000 and got["pos"] == [0x3F800000, 0xC0000000, 0x40500000]
    assert got["kids"][1] == {"w": 0x7FC00123, "id": 3, "q": [0x7FC00123, 0x3F800000, 0x7F800000, 0]}
    assert got["kind"] == 300 and got["name"] == "616263" and got["raw"] == "0102"
    readable = LAYOUT.record("root").to_json(CASES[0], JsonCtx("readable"))
    assert readable["kids"][1]["w"] == {"bits": 0x7FC00123} and readable["scale"] == 1.5


def test_recursive_records_and_recompiled_fields(monkeypatch):
    tree = {"label": RawString(b"a"), "m": 1,
            "children": [{"label": RawString(b"b"), "m": 1, "children": [{"label": RawString(b""), "m": 0,
                                                                             "children": []}]}]}
    rec = LAYOUT.record("tree")
    for form in ("wire", "readable"):
        ctx = JsonCtx(form, "latin-1")
        assert rec.to_json(tree, ctx) == by_field(monkeypatch, rec, tree, ctx)
    assert rec.to_json(tree, JsonCtx("wire"))["children"][0]["children"][0] == {"label": "", "m": 0,
                                                                                "children": []}
    # fields compiled again (a layout edited in place): the generated function follows
    rec.fields = [f for f in rec.fields if f.name != "m"]
    assert "m" not in rec.to_json(tree, JsonCtx("wire"))


def test_a_value_that_is_not_a_number_fails_as_before():
    bad = dict(CASES[0], kids=[{"w": "x", "id": 1, "q": [0.0] * 4}])
    rec = LAYOUT.record("root")
    with pytest.raises(Exception) as generated:
        rec.to_json(bad, JsonCtx("wire"))
    with pytest.raises(Exception) as by_field:
        rec.to_json_by_field(bad, JsonCtx("wire"))
    assert type(generated.value) is type(by_field.value)


def test_wire_float_arrays_load_from_bit_patterns_in_one_conversion():
    from potsherd.core.errors import JsonFormatError
    from potsherd.core.layout.jsonio import _np_from_json
    ctx, f4 = JsonCtx("wire"), np.dtype("<f4")
    got = _np_from_json([[0x3F800000, 0x7FC00123], [0, 0x80000000]], f4, (2,), ctx, "$")
    assert got.dtype == f4 and got.view("<u4").tolist() == [[0x3F800000, 0x7FC00123], [0, 0x80000000]]
    assert _np_from_json([], f4, (3,), ctx, "$").shape == (0, 3)
    for bad, words in (([1.5, 2], "integers"), ([True, False], "integers"), ([-1], "out of range"),
                       ([0x100000000], "out of range"), ([[1, 2], [3]], "bad numeric array")):
        with pytest.raises(JsonFormatError, match=words):
            _np_from_json(bad, f4, (), ctx, "$")


def test_each_form_and_encoding_keeps_its_function():
    # (alternating text encodings, as a folder of cp949 and _tw cp950 UI files
    # does, once cleared every other one and generated the code again per file)
    rec = LAYOUT.record("tree")
    tree = {"label": RawString(b"a"), "m": 0, "children": []}
    keys = [("wire", "cp949"), ("wire", "cp950"), ("readable", "cp949")]
    from potsherd.core.layout.jsoncompile import json_key

    def functions():
        return [rec._json_fns[json_key(JsonCtx(form, enc))][1] for form, enc in keys]
    for form, enc in keys:
        rec.to_json(tree, JsonCtx(form, enc))
    first = functions()
    for form, enc in keys * 2:
        rec.to_json(tree, JsonCtx(form, enc))
    assert functions() == first and len(set(map(id, first))) == 3


def test_empty_strings_convert_inline_and_keep_stored_lengths():
    rec = LAYOUT.record("tree")
    ctx = JsonCtx("wire")
    calls = []
    from potsherd.core.layout.storages import String
    fn = rec.to_json({"label": RawString(b""), "m": 0, "children": []}, ctx)
    assert fn["label"] == ""
    for f in rec.fields:
        if isinstance(f.storage, String):
            real = f.storage.to_json
            f.storage.to_json = lambda v, c, real=real: calls.append(v) or real(v, c)
    try:
        rec._json_fns.clear()
        assert rec.to_json({"label": RawString(b""), "m": 0, "children": []}, ctx)["label"] == ""
        assert rec.to_json({"label": b"", "m": 0, "children": []}, ctx)["label"] == ""
        assert calls == []  # (inline: no storage call for an empty string)
        assert rec.to_json({"label": RawString(b"", -1), "m": 0, "children": []}, ctx)["label"] == \
            {"len": -1}
        assert calls == [RawString(b"", -1)]
    finally:
        for f in rec.fields:
            f.storage.__dict__.pop("to_json", None)
        rec._json_fns.clear()
