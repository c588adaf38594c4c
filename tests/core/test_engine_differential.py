"""The compiled fast path of the layout engine against the reference interpreter.

``potsherd.core.fastpath`` compiles every layout into specialised Python; the
interpreter in ``potsherd.core.layout`` stays the reference (as Construct
tests its compiled mode against the interpreted one).  For every corpus file
of every layout-driven codec: decoded documents must be identical (values,
types, dict key order, numpy dtypes and bytes, NaN bit patterns, raw string
lengths), encoded bytes identical, and the fast path must really be taken.
Mutated files (truncated, bytes flipped) must give the same document or the
same error (class, message, offset, path).
"""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from potsherd import registry
from potsherd.core import fastpath
from potsherd.core.errors import EncodeError, FormatError
from potsherd.core.layout import PRIMS, JsonCtx, Layout, Ragged, Storage
from potsherd.core.limits import DEFAULT_LIMITS
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT


def deep_diff(a, b, path="$"):
    """First difference between two document trees (None when identical)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            d = deep_diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = deep_diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, Ragged):
        return deep_diff(a.rows, b.rows, f"{path}.rows") or deep_diff(a.flat, b.flat, f"{path}.flat")
    if isinstance(a, np.ndarray):
        if (a.dtype, a.shape, a.flags.writeable) != (b.dtype, b.shape, b.flags.writeable) \
                or a.tobytes() != b.tobytes():
            return f"{path}: arrays differ ({a.dtype}{a.shape} vs {b.dtype}{b.shape})"
        return None
    if isinstance(a, float):
        if struct.pack("<d", a) != struct.pack("<d", b) or getattr(a, "bits", None) != getattr(b, "bits", None):
            return f"{path}: {a!r} != {b!r}"
        return None
    if isinstance(a, (bytes, bytearray)):
        if a != b or getattr(a, "raw_len", None) != getattr(b, "raw_len", None):
            return f"{path}: bytes differ"
        return None
    if a != b:
        return f"{path}: {a!r} != {b!r}"
    return None


def outcome(fn):
    try:
        return ("ok", fn())
    except FormatError as e:
        return ("error", (type(e).__name__, e.message, e.offset, e.path, str(e)))


def same_outcome(fast, ref, what):
    assert fast[0] == ref[0], f"{what}: fast {fast[0]} {fast[1] if fast[0] == 'error' else ''}, " \
                              f"reference {ref[0]} {ref[1] if ref[0] == 'error' else ''}"
    if fast[0] == "error":
        assert fast[1] == ref[1], what
    return fast[0] == "ok"


def same_document(fast, ref, what):
    for attr in ("format", "params", "trailing", "warnings", "meta"):
        assert getattr(fast, attr) == getattr(ref, attr), f"{what}: {attr} differs"
    d = deep_diff(fast.root, ref.root)
    assert d is None, f"{what}: {d}"


def layout_codec_files():
    """(codec, path) for every corpus file detected as a layout-driven codec."""
    out = []
    if not CORPUS.is_dir():
        return out
    for p in sorted(CORPUS.rglob("*")):
        if not p.is_file() or not registry.known_extension(str(p)):
            continue
        with open(p, "rb") as f:
            head = f.read(64)
        try:
            codec = registry.detect(head, str(p))
        except FormatError:
            continue
        if isinstance(getattr(codec, "layout", None), Layout):
            out.append((codec, p))
    return out


FILES = layout_codec_files()


def _ids():
    return [str(p.relative_to(CORPUS)) for _, p in FILES]


@pytest.fixture(scope="module")
def corpus_files():
    if not FILES:
        pytest.skip(f"no corpus of a layout codec at {CORPUS}")
    return FILES


def test_every_corpus_file_fast_equals_reference(corpus_files):
    fast_decodes = fast_encodes = 0
    for codec, path in corpus_files:
        data = path.read_bytes()
        what = str(path.relative_to(CORPUS))
        with fastpath.reference_only():
            ref = outcome(lambda: codec.decode(data))
        fast = outcome(lambda: codec.decode(data))
        if not same_outcome(fast, ref, what):
            continue
        doc_ref, doc_fast = ref[1], fast[1]
        same_document(doc_fast, doc_ref, what)
        with fastpath.reference_only():
            ref_bytes = outcome(lambda: codec.encode(doc_ref))
        fast_bytes = outcome(lambda: codec.encode(doc_fast))
        if same_outcome(fast_bytes, ref_bytes, what + " (encode)"):
            assert fast_bytes[1] == ref_bytes[1], what + ": encoded bytes differ"
        # the compiled code itself, not a fallback, handles the real file
        root = codec._root_of(doc_ref) if hasattr(codec, "_root_of") else codec.root
        compiled = fastpath.fast_layout(codec.layout)
        assert compiled is not None, f"{codec.name}: layout did not compile"
        params = {k: v for k, v in doc_ref.params.items() if k != "opaque"}
        direct = compiled.decode(root, data, params, DEFAULT_LIMITS, 0)
        assert direct is not None, f"{what}: the fast path declined a real file"
        assert deep_diff(direct[0], doc_ref.root) is None, what
        fast_decodes += 1
        assert compiled.encode(root, doc_ref.root, params, DEFAULT_LIMITS) is not None, \
            f"{what}: the fast encoder declined a real document"
        fast_encodes += 1
    assert fast_decodes > 0


def test_documents_loaded_from_json_encode_on_the_fast_path(corpus_files):
    """Documents rebuilt from JSON (both forms) have the value types the
    compiled encoder expects: it writes them itself, the reference's bytes."""
    checked = 0
    for codec, path in corpus_files:
        if path.stat().st_size > 300_000:
            continue
        data = path.read_bytes()
        doc = codec.decode(data)
        if doc.params.get("opaque"):
            continue
        root = codec.root
        params = {k: v for k, v in doc.params.items() if k != "opaque"}
        compiled = fastpath.fast_layout(codec.layout)
        for form in ("wire", "readable"):
            back = codec.from_json(json.loads(json.dumps(codec.to_json(doc, form))))
            fast = compiled.encode(root, back.root, params, DEFAULT_LIMITS)
            assert fast is not None, f"{path.name} ({form}): the fast encoder declined"
            with fastpath.reference_only():
                assert fast + bytes(back.trailing) == codec.encode(back) == data, path.name
            checked += 1
    assert checked > 0


def _mutations(data: bytes, rng: random.Random, n: int):
    cuts = sorted({len(data) * k // 7 for k in range(1, 7)} | {len(data) - 1, 5})
    for c in cuts:
        if 0 <= c < len(data):
            yield f"cut{c}", data[:c]
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4))):
            i = rng.randrange(min(len(b), 512)) if rng.random() < 0.7 else rng.randrange(len(b))
            b[i] = rng.choice((0x00, 0xFF, 0x7F, 0x80, b[i] ^ 0x01, b[i] ^ 0x40))
        yield f"flip{_}", bytes(b)


def test_mutated_files_same_document_or_same_error(corpus_files):
    """Hostile input: the fast path may only ever agree with the reference."""
    rng = random.Random(1234)
    per_codec: dict[str, int] = {}
    checked = 0
    for codec, path in corpus_files:
        size = path.stat().st_size
        if size > 200_000 or per_codec.get(codec.name, 0) >= 4:
            continue
        per_codec[codec.name] = per_codec.get(codec.name, 0) + 1
        data = path.read_bytes()
        for tag, mutated in _mutations(data, rng, 10):
            what = f"{path.relative_to(CORPUS)} {tag}"
            with fastpath.reference_only():
                ref = outcome(lambda: codec.decode(mutated))
            fast = outcome(lambda: codec.decode(mutated))
            if same_outcome(fast, ref, what):
                same_document(fast[1], ref[1], what)
                with fastpath.reference_only():
                    rb = outcome(lambda: codec.encode(ref[1]))
                fb = outcome(lambda: codec.encode(fast[1]))
                if same_outcome(fb, rb, what + " (encode)"):
                    assert fb[1] == rb[1], what
            checked += 1
    assert checked > 0


def test_inputs_the_fast_path_proves_short_fail_on_the_reference(corpus_files):
    """``False`` from the compiled decoder (the input ends before bytes that must
    be read) lets variant trials skip the reference run; it must never be said of
    an input the reference decodes."""
    rng = random.Random(99)
    per_codec: dict[str, int] = {}
    proven = 0
    for codec, path in corpus_files:
        size = path.stat().st_size
        if size > 200_000 or per_codec.get(codec.name, 0) >= 3:
            continue
        per_codec[codec.name] = per_codec.get(codec.name, 0) + 1
        compiled = fastpath.fast_layout(codec.layout)
        data = path.read_bytes()
        for tag, mutated in _mutations(data, rng, 6):
            for variant in getattr(codec, "variants", [{}]):
                if compiled.decode(codec.root, mutated, dict(variant), DEFAULT_LIMITS, 0) is not False:
                    continue
                proven += 1
                with pytest.raises(FormatError):
                    codec.layout.decode(codec.root, mutated, dict(variant), reference=True)
        # negative control: the unmutated file is never proven short in its own variant
        doc = codec.decode(data)
        params = {k: v for k, v in doc.params.items() if k != "opaque"}
        if not doc.params.get("opaque"):
            assert compiled.decode(codec.root, data, params, DEFAULT_LIMITS, 0) is not False, path.name
    assert proven > 0


def test_variant_trials_report_the_reference_error_when_none_decodes(corpus_files):
    """Skipping proven-short variants changes nothing a caller sees: a file cut
    short gives the same error as the reference alone."""
    checked = 0
    for codec, path in corpus_files:
        if len(getattr(codec, "variants", [])) < 2 or path.stat().st_size > 200_000:
            continue
        data = path.read_bytes()[: path.stat().st_size // 2]
        with fastpath.reference_only():
            ref = outcome(lambda: codec.decode(data))
        fast = outcome(lambda: codec.decode(data))
        if same_outcome(fast, ref, path.name):
            same_document(fast[1], ref[1], path.name)
        checked += 1
        if checked >= 12:
            break
    assert checked > 0


# ----------------------------------------------------------------------------
# synthetic layouts: kinds the corpus layouts use rarely


SYNTH = """
point

Field	Storage	Condition
x	"f32"	"always"
flags	"u16be"	"always"
tag	{"kind":"bytes","count":2}	"always"
pos	"vec3"	"always"

node

Field	Storage	Condition
kind	"u8"	"always"
n	"i32"	"always"
small	{"kind":"choice","condition":{"gt":["kind",1]},"yes":"i16","no":"u32"}	"always"
name	{"kind":"string","prefix":"u8"}	{"ne":["kind",3]}
points	{"kind":"array","count":"n","item":"point"}	"always"
grid	{"kind":"array","count":{"max":["n",0]},"item":{"kind":"array","count":{"select":["kind",1,2,3]},"item":"u16"}}	"always"
packed	{"kind":"struct","format":"<2hf3s?","keys":"a b c d e"}	{"and":[{"ge":["kind",1]},{"lt":["kind",4]}]}
rows	{"kind":"array","count":{"divide":["n",2]},"item":{"kind":"struct","format":">hf","keys":"u v"}}	"always"
scale	{"kind":"parameter","name":"scale","default":2}	"always"
extra	{"kind":"array","count":{"product":["scale",{"mask":["n",3]}]},"item":"f64"}	"always"
children	{"kind":"array","count":{"choose":[{"eq":["kind",2]},1,0]},"item":"node"}	"always"
rest	{"kind":"tail"}	"optional tail"
"""


def _synth_bytes(rng: random.Random, kind: int, n: int, depth: int = 0) -> bytes:
    out = bytearray(struct.pack("<Bi", kind, n))
    out += struct.pack("<h", rng.randrange(-300, 300)) if kind > 1 else struct.pack("<I", rng.randrange(1 << 32))
    if kind != 3:
        name = bytes(rng.randrange(32, 127) for _ in range(rng.randrange(5)))
        out += bytes([len(name)]) + name
    for _ in range(n):
        x = rng.choice([1.5, -0.0, float("inf")]) if rng.random() < 0.8 else None
        out += struct.pack("<f", x) if x is not None else struct.pack("<I", 0x7F800001 + rng.randrange(99))
        out += struct.pack(">H", rng.randrange(65536)) + bytes([rng.randrange(256), 0])
        out += struct.pack("<3f", 1.0, 2.0, 3.0) if rng.random() < 0.9 else struct.pack("<I2f", 0xFFC00123, 1, 2)
    k = {1: 2, 2: 3}.get(kind, 0)
    out += struct.pack(f"<{max(n, 0) * k}H", *[rng.randrange(65536) for _ in range(max(n, 0) * k)])
    if 1 <= kind < 4:
        out += struct.pack("<2hf3s?", 1, -2, 0.25, b"ab\x00", True)
    for _ in range(max(n, 0) // 2):
        out += struct.pack(">hf", rng.randrange(-9, 9), 0.5)
    out += struct.pack(f"<{2 * (n & 3)}d", *([1.25] * (2 * (n & 3))))
    if kind == 2 and depth < 3:
        out += _synth_bytes(rng, rng.choice((0, 1, 2, 3)), rng.randrange(4), depth + 1)
    return bytes(out)


def test_synthetic_layout_fast_equals_reference():
    layout = Layout(SYNTH)
    rng = random.Random(7)
    seen = {"ok": 0, "error": 0}
    for i in range(300):
        data = _synth_bytes(rng, rng.choice((0, 1, 2, 3, 4)), rng.randrange(-1, 6))
        if i % 3 == 0:
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(3)))
        variants = [data]
        if data:
            b = bytearray(data)
            b[rng.randrange(len(b))] ^= 0xFF
            variants += [bytes(b), data[: rng.randrange(len(data))]]
        for d in variants:
            ref = outcome(lambda: layout.decode("node", d, reference=True))
            fast = outcome(lambda: layout.decode("node", d))
            same_outcome(fast, ref, f"case {i}")
            seen[ref[0]] += 1
            if ref[0] == "ok":
                (vr, er, pr), (vf, ef, pf) = ref[1], fast[1]
                assert (er, pr) == (ef, pf)
                assert deep_diff(vf, vr) is None, f"case {i}: {deep_diff(vf, vr)}"
                eb = outcome(lambda: layout.encode("node", vr, pr, reference=True))
                fb = outcome(lambda: layout.encode("node", vr, pr))
                if same_outcome(fb, eb, f"case {i} encode"):
                    assert fb[1] == eb[1] == d[:er]
    assert seen["ok"] > 100 and seen["error"] > 50
    # the fast path compiled this layout (not a silent fallback to the interpreter)
    assert fastpath.fast_layout(layout) is not None


def test_edited_documents_encode_like_the_reference():
    """Counts regenerated, wrong types refused with the reference's error."""
    layout = Layout(SYNTH)
    data = _synth_bytes(random.Random(3), 1, 4)
    v, end, p = layout.decode("node", data)
    assert end == len(data)
    v["points"] = v["points"][:2]
    v["grid"] = v["grid"][:2]
    v["rows"] = v["rows"][:1]
    v["extra"] = np.array([1.0, 2.0, 3.0, 4.0])  # product(scale=2, n & 3 = 2)
    fast = outcome(lambda: layout.encode("node", v, p))
    ref = outcome(lambda: layout.encode("node", v, p, reference=True))
    assert same_outcome(fast, ref, "edited")
    assert fast[1] == ref[1]
    for bad in ({"x": True}, {"flags": 1.0}, {"tag": b"abc"}, {"pos": [1, 2]}):
        w = {**v, "points": [{**v["points"][0], **bad}] + v["points"][1:]}
        fast = outcome(lambda: layout.encode("node", w, p))
        ref = outcome(lambda: layout.encode("node", w, p, reference=True))
        same_outcome(fast, ref, f"bad {bad}")
    w = dict(v)
    w["unknown"] = 1
    fast = outcome(lambda: layout.encode("node", w, p))
    ref = outcome(lambda: layout.encode("node", w, p, reference=True))
    same_outcome(fast, ref, "unknown field")
    assert fast[0] == "error"


def test_custom_storage_is_delegated():
    class Twice(Storage):
        size = min_size = 2

        def decode(self, r, s):
            return r.read(2)[:1] * 2

        def encode(self, w, v, s):
            w.write(v[:1] + b"\x01")

        def to_json(self, v, ctx):
            return v.hex()

        def from_json(self, o, ctx, jpath):
            return bytes.fromhex(o)

    layout = Layout("r\n\na\t\"u8\"\t\"always\"\nt\t\"twice\"\t\"always\"\n", {"twice": Twice()})
    v, end, _ = layout.decode("r", b"\x05\x07\x01")
    assert v == {"a": 5, "t": b"\x07\x07"} and end == 3
    assert layout.encode("r", v) == b"\x05\x07\x01"
    assert layout.to_json("r", v, JsonCtx()) == {"a": 5, "t": "0707"}


class Shape(Storage):
    """A u16 that must be 8 or 9, packed inline by the fast path (``packs_as``)."""
    size = min_size = 2
    packs_as = (PRIMS["u16"], frozenset((8, 9)))

    def decode(self, r, s):
        return r.unpack(PRIMS["u16"].st)[0]

    def encode(self, w, v, s):
        if v.__class__ is not int or v not in (8, 9):
            raise EncodeError(f"shape must be 8 or 9, found {v!r}")
        w.pack(PRIMS["u16"].st, v)

    def to_json(self, v, ctx):
        return v

    def from_json(self, o, ctx, jpath):
        return o


COUNTED = """
mesh
n	"u16"	"always"
polys	{"kind":"array","count":"n","item":"poly"}	"always"

poly
shape	"shape"	"always"
corners	{"kind":"array","count":{"choose":[{"eq":["shape",9]},4,3]},"item":"u16"}	"always"
texture	"u16"	"always"
weight	"f32"	"always"
"""


def test_records_counted_by_their_own_fields_encode_like_the_reference():
    """Fixed fields after an array counted by the record's own scalar (a TR
    polygon) are packed in one loop, without a generated call per record; any
    unusual value gives the reference's bytes or error."""
    layout = Layout(COUNTED, {"shape": Shape()})
    rng = np.random.default_rng(5)
    polys = [{"shape": s, "corners": rng.integers(0, 999, 4 if s == 9 else 3).astype(np.uint16),
              "texture": int(rng.integers(0, 65535)), "weight": float(rng.random())}
             for s in rng.choice([8, 9], 40).tolist()]
    v = {"n": len(polys), "polys": polys}
    fast = layout.encode("mesh", v)
    assert fast == layout.encode("mesh", v, reference=True)
    assert layout.decode("mesh", fast)[1] == len(fast)
    assert "def W1_poly" not in fastpath.fast_layout(layout).source
    for bad in ({"shape": 7}, {"shape": True}, {"corners": np.zeros(5, np.uint16)},
                {"corners": np.zeros(3, np.int32)}, {"corners": [1, 2, 3]}, {"texture": 1.0},
                {"weight": "x"}, {"extra": 1}):
        w = {**v, "polys": polys[:3] + [{**polys[3], **bad}]}
        w["n"] = 4
        fast = outcome(lambda: layout.encode("mesh", w))
        ref = outcome(lambda: layout.encode("mesh", w, reference=True))
        same_outcome(fast, ref, f"bad {bad}")
