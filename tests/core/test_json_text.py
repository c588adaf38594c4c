"""JSON text through orjson is the standard library's text, byte for byte."""
from __future__ import annotations

import io
import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import api, registry
from potsherd.core import jsontext
from potsherd.core.errors import FormatError

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def _std(obj, indent):
    return json.dumps(obj, indent=indent, ensure_ascii=False)


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


@pytest.mark.parametrize("indent", [1, None])
def test_text_is_the_standard_librarys(indent):
    vals = _floats(30000, 7)
    obj = {"floats": vals, "edge": [1e-5, -1e-5, 9.99e-5, 1e-4, 1e16, 1e15, 1.5e300, 5e-324, -0.0, 0.0],
           "strings": ["x 1e5", "0.00001", "a, 1e-7", "a\x01\x7f\u2028é\b\f\n\t\"\\/", "01e5ff0e10"],
           "nested": [[[[[[1e-7]]]]], {}, [], {"k\"\\": [True, False, 18446744073709551615]}],
           "ints": list(range(-5, 5))}
    for o in (obj, vals[:3], 1e-5, -2.5e-7, "s", [], {}, {"a": {}}):
        assert jsontext.dumps(o, indent) == _std(o, indent)


def test_numpy_arrays_are_written_as_their_lists():
    # (arrays reach dumps in native byte order: see layout.jsonio._native)
    arrays = [np.arange(7, dtype=np.uint16), np.arange(6, dtype=np.int64).reshape(2, 3),
              np.array([1e-5, 0.25, 3e20]), np.zeros((0, 3), np.int32), np.array([True, False])]
    obj = {"a": arrays}
    assert jsontext.dumps(obj) == _std({"a": [a.tolist() for a in arrays]}, 1)


def test_what_orjson_refuses_goes_to_the_standard_library():
    for o in ({"x": float("nan")}, {"x": None}, {1: 2}, {"a": 2 ** 70}, {"s": "\ud800"}):
        assert jsontext.dumps(o) == _std(o, 1)
        assert jsontext.dumps(o, None) == _std(o, None)
    assert jsontext.loads('{"a": NaN, "b": 123456789012345678901234567890}') == \
        json.loads('{"a": NaN, "b": 123456789012345678901234567890}')
    with pytest.raises(ValueError):
        jsontext.loads("{bad")


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


def test_corpus_dumps_are_byte_identical_and_load_back():
    sample = _corpus_sample()
    if not sample:
        pytest.skip(f"no corpus at {CORPUS}")
    formats = set()
    for path, doc in sample:
        for form in ("wire", "readable"):
            want = _std(doc.to_json(form), 1)
            assert doc.dumps(form) == want, f"{path.name} {form}"
            assert doc.dumps(form, None) == _std(doc.to_json(form), None), f"{path.name} {form}"
            buf = io.StringIO()
            api.write_json(doc, form, buf, indent=1)
            assert buf.getvalue() == want, f"{path.name} {form} (write_json)"
            assert potsherd.from_json(want).encode() == doc.encode(), f"{path.name} {form}"
        formats.add(doc.format)
    assert len(formats) >= 5


def test_a_float_with_0_0000_after_a_digit_keeps_its_digits():
    # 200.00006103515625 (an f32 of the gtd corpus) was once written 206.103515625e-05
    vals = [200.00006103515625, 10.00001, -30.00002, 0.00001, -0.00003, 1.00000001]
    for indent in (1, None):
        assert jsontext.dumps(vals, indent) == _std(vals, indent)
        assert jsontext.dumps(jsontext.LargeArray(np.array(vals * 8)), indent) == _std(vals * 8, indent)


@pytest.mark.parametrize("indent", [1, None])
def test_large_arrays_written_in_bulk_are_the_standard_librarys_text(indent):
    rng = np.random.default_rng(5)
    floats = np.array(_floats(600, 3))
    arrays = [np.arange(40, dtype=np.uint32), rng.integers(-2**31, 2**31, (50, 3)),
              rng.integers(0, 2**64, (4, 5, 6), dtype=np.uint64), floats, floats[:80].reshape(-1, 2),
              np.array([1e-5, 2e-7, 1e16, 5e-324, -0.0] * 8)]
    obj = {"top": [jsontext.LargeArray(a) for a in arrays],
           "deep": {"k": [[{"x": jsontext.LargeArray(arrays[1]), "s": "\x00potsherd-array-0-1"}]]}}
    plain = {"top": [a.tolist() for a in arrays],
             "deep": {"k": [[{"x": arrays[1].tolist(), "s": "\x00potsherd-array-0-1"}]]}}
    assert jsontext.dumps(obj, indent) == _std(plain, indent)
    assert jsontext.dumps(jsontext.LargeArray(arrays[2]), indent) == _std(arrays[2].tolist(), indent)


def test_a_large_array_holding_nan_goes_to_the_standard_library():
    a = np.arange(40, dtype=np.float64)
    a[7] = np.nan
    text = jsontext.dumps({"a": jsontext.LargeArray(a)})
    assert text == _std({"a": a.tolist()}, 1) and "NaN" in text
