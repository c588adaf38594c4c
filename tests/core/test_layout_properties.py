"""Property tests: random documents round-trip, random bytes never crash."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from potsherd.core.errors import FormatError
from potsherd.core.layout import JsonCtx, Layout
from potsherd.core.values import RawString, f32_from_bits

LAYOUT = Layout("""
item

Field	Storage	Condition
name	"string"	"always"
kind	"u8"	"always"
value	"f32"	{"eq":["kind",1]}
extra	{"kind":"bytes","count":2}	{"gt":["kind",1]}

doc

Field	Storage	Condition
version	"i32"	"always"
count	"i32"	"always"
items	{"kind":"array","count":"count","item":"item"}	"always"
nverts	"i32"	"always"
verts	{"kind":"array","count":{"product":["nverts",3]},"item":"f32"}	"always"
keyType	"u32"	"always"
keys	{"kind":"array","count":"nverts","item":{"kind":"array","count":{"select":["keyType",3,4]},"item":"u16"}}	"always"
wide	{"kind":"choice","condition":{"gt":["version",1]},"yes":"i32","no":"i16"}	"always"
late	"string"	"optional tail"
""")

f32 = st.integers(0, 0xFFFFFFFF).map(f32_from_bits)
raw_string = st.one_of(st.binary(max_size=12).map(RawString),
                       st.integers(-3, -1).map(lambda n: RawString(b"", n)))


@st.composite
def items(draw):
    kind = draw(st.integers(0, 3))
    it = {"name": draw(raw_string), "kind": kind}
    if kind == 1:
        it["value"] = draw(f32)
    if kind > 1:
        it["extra"] = draw(st.binary(min_size=2, max_size=2))
    return it


@st.composite
def documents(draw):
    version = draw(st.integers(0, 3))
    its = draw(st.lists(items(), max_size=5))
    n = draw(st.integers(0, 4))
    key_type = draw(st.integers(0, 1))
    verts = np.array([draw(st.integers(0, 0xFFFFFFFF)) for _ in range(3 * n)], dtype="<u4").view("<f4")
    keys = np.array(draw(st.lists(st.integers(0, 65535), min_size=n * (3 + key_type),
                                  max_size=n * (3 + key_type))), dtype="<u2").reshape(n, 3 + key_type)
    d = {"version": version, "count": len(its), "items": its, "nverts": n, "verts": verts,
         "keyType": key_type, "keys": keys,
         "wide": draw(st.integers(-2**15, 2**15 - 1))}
    if draw(st.booleans()):
        d["late"] = draw(raw_string)
    return d


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_random_documents_encode_decode_encode_identically(doc):
    data = LAYOUT.encode("doc", doc)
    back, end, _ = LAYOUT.decode("doc", data)
    assert end == len(data)
    assert LAYOUT.encode("doc", back) == data
    for form in ("wire", "readable"):
        ctx = JsonCtx(form)
        again = LAYOUT.from_json("doc", LAYOUT.to_json("doc", back, ctx), ctx)
        assert LAYOUT.encode("doc", again) == data


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_random_bytes_decode_or_raise_format_error(data):
    try:
        v, end, _ = LAYOUT.decode("doc", data)
    except FormatError as e:
        assert e.offset is None or 0 <= e.offset <= len(data)
        return
    assert LAYOUT.encode("doc", v) == data[:end]
