"""Tomb Raider levels TR1-TR5: every corpus level byte-exact directly and
through both JSON forms, fully decoded; the zlib chunks, TRNG's cipher and the
refusals of damaged levels checked on small hand-made inputs."""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError
from potsherd.formats.trle import levelstore, trng
from potsherd.formats.trle.levels import CODECS, level_data, tr4_engine
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "trlevels"
LEVELS = sorted(p for p in CORPUS.glob("*") if p.suffix.lower() in
                {".phd", ".tr2", ".tr4", ".trc"}) if CORPUS.is_dir() else []
BY_NAME = {c.name: c for c in CODECS}
EXPECTED = {"tr1_TEST1.PHD": "tr1level", "tr2_TEST1.TR2": "tr2level",
            "tr3_TEST1.TR2": "tr3level", "tr4_TEST1.TR4": "tr4level",
            "tr5_TEST1.TRC": "tr5level", "lake.trc": "tr5level", "lake-enc.tr4": "tr5level"}

corpus_only = pytest.mark.skipif(not LEVELS, reason="shared trlevels corpus not present")


@corpus_only
def test_corpus_is_complete():
    assert sorted(p.name for p in LEVELS) == sorted(EXPECTED)


@corpus_only
@pytest.mark.parametrize("path", LEVELS, ids=lambda p: p.name)
def test_level_round_trip_byte_exact_and_json(path):
    data = path.read_bytes()
    doc = potsherd.read(str(path))
    assert doc.format == EXPECTED[path.name]
    assert doc.encode() == data
    assert doc.codec.opaque_bytes(doc) == 0 and doc.warnings == []
    for form in ("wire", "readable"):
        obj = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.from_json(obj).encode() == data


@corpus_only
@pytest.mark.parametrize("path", LEVELS, ids=lambda p: p.name)
def test_level_records_are_decoded(path):
    doc = potsherd.read(str(path))
    d = level_data(doc.root)
    assert isinstance(d["meshes"], list) and len(d["meshes"]) > 0
    assert len(d["rooms"]) == d["room_count"] > 0
    for room in d["rooms"]:
        body = room.get("body", room.get("data"))
        assert isinstance(body, dict)          # geometry parsed, not kept raw
    assert d["items"].dtype.names and len(d["items"]) == d["item_count"]
    # every mesh pointer lands on the start of a decoded mesh
    starts, at = set(), 0
    w = levelstore.Writer()
    rec = doc.codec.layout.record("tr1_mesh" if doc.codec.engine <= 3 else "tr4_mesh")
    from potsherd.core.expr import Scope
    for m in d["meshes"]:
        starts.add(at)
        w = levelstore.Writer()
        rec.encode(w, m, Scope({}))
        at += len(w.getvalue())
        assert at % 4 == 0
    assert set(d["mesh_pointers"].tolist()) <= starts


@corpus_only
def test_trng_oracle_pair():
    enc = (CORPUS / "lake-enc.tr4").read_bytes()
    dec = (CORPUS / "lake.trc").read_bytes()
    assert trng.decrypt(enc) == dec and trng.encrypt(dec) == enc
    doc = potsherd.read(str(CORPUS / "lake-enc.tr4"))
    assert doc.params["encrypted"] == 1 and doc.encode() == enc
    plain = potsherd.read(str(CORPUS / "lake.trc"))
    assert "encrypted" not in plain.params and plain.encode() == dec


@corpus_only
def test_edited_level_chunk_recompresses_and_reads_back():
    path = CORPUS / "tr4_TEST1.TR4"
    doc = potsherd.read(str(path))
    lvl = doc.root["level"]
    assert lvl["zlib"] is None and lvl["stored"] is not None   # not a zlib-made stream
    items = lvl["content"]["items"]
    items["position"][0, 0] += 1024
    out = doc.encode()
    assert out != path.read_bytes()
    back = potsherd.read(out, "tr4level")
    content = back.root["level"]["content"]
    assert int(content["items"]["position"][0, 0]) == int(items["position"][0, 0])
    assert back.root["level"]["zlib"] == list(levelstore.DEFAULT_ZLIB)   # found again
    assert BY_NAME["tr4level"].encode(back) == out


# ---------------------------------------------------------------- synthetic


def _chunk(raw: bytes, level: int = 6) -> bytes:
    z = zlib.compress(raw, level)
    return struct.pack("<II", len(raw), len(z)) + z


@pytest.mark.parametrize("level", [1, 4, 6, 9])
def test_zlib_settings_are_found_for_zlib_streams(level):
    raw = bytes(range(256)) * 300 + b"tomb" * 5000
    stream = zlib.compress(raw, level)
    found = levelstore.find_settings(raw, stream)
    assert found is not None and levelstore.deflate(raw, found) == stream


def test_zlib_settings_refuse_a_foreign_stream():
    raw = b"abc" * 10000
    stream = zlib.compress(raw, 6)
    foreign = stream[:2] + bytes([stream[2] ^ 0]) + stream[3:-4] + b"\x00\x00\x00\x00"
    assert levelstore.find_settings(raw, foreign) is None
    assert levelstore.find_settings(raw, b"\x00\x01") is None     # not a zlib header


def test_trng_cipher_is_an_involution_pair_and_refuses_short_input():
    rng = np.random.default_rng(7)
    body = bytearray(rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())
    body[0:4] = b"TR4\x00"
    p = 10
    for n in (300, 500, 700, 900):             # four chunk headers in a row
        body[p:p + 8] = struct.pack("<II", n + 5, n)
        p += 8 + n
    plain = bytes(body)
    enc = trng.encrypt(plain)
    assert enc[:4] == b"TR4c" and enc != plain and trng.decrypt(enc) == plain
    with pytest.raises(FormatError) as e:
        trng.decrypt(enc[:600])
    assert e.value.offset is not None



def test_tr4_engine_tells_tr4_from_tr5():
    pages = _chunk(b"\x00" * 1024)
    head = b"TR4\x00" + struct.pack("<3H", 1, 0, 0) + pages * 3
    tr4 = head + _chunk(b"\x01" * 64)
    tr5 = head + b"\x00" * 32 + struct.pack("<II", 64, 64) + b"\x01" * 64
    assert tr4_engine(tr4) == "tr4" and tr4_engine(tr5) == "tr5"
    assert tr4_engine(b"TR4\x00" + b"\xff" * 20) is None


@pytest.mark.parametrize("codec", [c.name for c in CODECS])
def test_wrong_version_is_refused_with_offset(codec):
    with pytest.raises(FormatError) as e:
        BY_NAME[codec].decode(b"\x99\x00\x00\x00" + b"\x00" * 64)
    assert e.value.offset == 0


@corpus_only
@pytest.mark.parametrize("name,cut", [("tr1_TEST1.PHD", 700000), ("tr3_TEST1.TR2", 1500000),
                                      ("tr4_TEST1.TR4", 900000), ("tr5_TEST1.TRC", 2000000)])
def test_truncated_levels_are_refused_with_offset_and_path(name, cut):
    data = (CORPUS / name).read_bytes()[:cut]
    with pytest.raises(FormatError) as e:
        BY_NAME[EXPECTED[name]].decode(data)
    assert e.value.offset is not None and e.value.path


@corpus_only
def test_damaged_room_count_is_refused_before_allocating():
    data = bytearray((CORPUS / "tr2_TEST1.TR2").read_bytes())
    n = struct.unpack_from("<I", data, 4 + 768 + 1024)[0]
    at = 4 + 768 + 1024 + 4 + n * (65536 * 3) + 4
    struct.pack_into("<H", data, at, 0xFFFF)
    with pytest.raises(FormatError) as e:
        BY_NAME["tr2level"].decode(bytes(data))
    assert "rooms" in e.value.path


@corpus_only
def test_damaged_zlib_stream_is_refused_with_offset():
    data = bytearray((CORPUS / "tr4_TEST1.TR4").read_bytes())
    data[18:26] = b"\xff" * 8
    with pytest.raises(FormatError) as e:
        BY_NAME["tr4level"].decode(bytes(data))
    assert e.value.offset == 18 and "textiles32" in e.value.path


def _minimal_tr1(demo: int) -> bytes:
    """A TR1 level with every count zero, in the release or the demo order."""
    from potsherd.core.limits import DEFAULT_LIMITS
    from potsherd.formats.trle.levels import LEVEL_LAYOUT
    root, _, _ = LEVEL_LAYOUT.decode("tr1level", struct.pack("<I", 0x20) + bytes(20000),
                                     {"demo": 0}, DEFAULT_LIMITS, [])
    root.pop("extra", None)
    pal = np.arange(768, dtype=np.uint8).reshape(256, 3) % 64
    if demo:
        root.pop("palette")
        root["demo_palette"] = pal
    else:
        root["palette"] = pal
    return LEVEL_LAYOUT.encode("tr1level", root, {"demo": demo})


@pytest.mark.parametrize("demo", [0, 1])
def test_tr1_demo_order_is_detected(demo):
    data = _minimal_tr1(demo)
    doc = BY_NAME["tr1level"].decode(data)
    assert doc.params["demo"] == demo and doc.encode() == data
    key = "demo_palette" if demo else "palette"
    assert np.array_equal(np.asarray(doc.root[key]).reshape(-1), np.arange(768) % 64)
    # the palette sits after the sprite sequences in the demo, after the light map otherwise
    at = data.find(bytes(np.arange(768, dtype=np.uint8) % 64))
    assert (at < len(data) - 8192) == bool(demo)


def test_flat_faces_take_their_palette_colour_in_linear_light():
    """A TR1 flat-coloured face indexes the 6-bit palette (times 4 to 8 bits):
    display values, as the texture pages' texels; glTF's factor is linear."""
    import srgb_formula as srgb
    from potsherd.formats.trle.levelscene import _Builder
    doc = BY_NAME["tr1level"].decode(_minimal_tr1(0))
    b = _Builder(doc, 1.0)
    mat = b.scene.materials[b.flat_material(0x0705)]        # low byte: entry 5, (15, 16, 17)
    want = srgb.decode(np.array([15, 16, 17]) * 4 / 255.0)
    assert mat.base_color[:3] == pytest.approx(tuple(want), rel=1e-12)
    assert mat.base_color[0] == pytest.approx(0.0451862, abs=1e-6)   # (not 60 / 255 = 0.235)
    assert mat.extras["tr_colour_word"] == 0x0705 and mat.unlit
