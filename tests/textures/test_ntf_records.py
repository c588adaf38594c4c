"""NTF records, .dxt and .gtt: exact bytes against records laid out by hand."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import (EncodeError, FormatError, JsonFormatError, MagicError,
                                  TruncatedError, ValueFormatError)
from potsherd.core.layout import JsonCtx, Layout
from potsherd.formats.ko import ntf
from potsherd.formats.ko.ntf import NTF_STORAGE, decode_record, encode_record, payload_plan

from ntf_fixtures import A4R4G4B4, A8R8G8B8, DXT1, DXT3, DXT5, ntf_bytes, pattern

NAME = b"C:\\art\\tex.DXT"


def roundtrip_all_ways(data: bytes, fmt: str) -> potsherd.Document:
    """Decode, re-encode, and go through both JSON forms: all must give ``data``."""
    doc = potsherd.read(data, format=fmt)
    assert potsherd.write(doc) == data
    for form in ("wire", "readable"):
        text = json.dumps(doc.to_json(form))
        assert potsherd.write(potsherd.from_json(text)) == data, form
    return doc


# ----------------------------------------------------------------------------
# the payload rule, case by case (each layout written out by hand)

CASES = [
    # id, (w, h, fmt, mip), level sizes, fallback, thumbnail
    ("dxt1-mip", (8, 8, DXT1, 1), [32, 8], 4 * 4 * 2, 0),
    ("dxt1-nomip", (8, 8, DXT1, 0), [32], 4 * 4 * 2, 0),
    ("dxt3-mip-nonsquare", (16, 8, DXT3, 1), [128, 32], 8 * 4 * 2, 0),
    ("dxt5-mip-3levels", (16, 16, DXT5, 1), [256, 64, 16], 8 * 8 * 2 + 4 * 4 * 2, 0),
    ("dxt1-mip-one-level", (16, 4, DXT1, 1), [32], 0, 0),
    ("dxt1-nomip-1024", (1024, 4, DXT1, 0), [2048], 512 * 2 * 2, 131072),
    ("argb-nomip-512-thumb", (512, 4, A8R8G8B8, 0), [8192], 0, 131072),
    ("argb-nomip-256", (256, 4, A8R8G8B8, 0), [4096], 0, 0),
    ("argb-mip-512-nothumb", (512, 8, A8R8G8B8, 1), [16384, 4096], 0, 0),
    ("a4r4g4b4-mip", (8, 8, A4R4G4B4, 1), [128, 32], 0, 0),
    ("r8g8b8-nomip", (4, 4, 20, 0), [48], 0, 0),
    ("mipmap-bool-2", (8, 8, DXT1, 2), [32, 8], 32, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_payload_rule_exact_bytes(case):
    _, (w, h, fmt, mip), sizes, fallback, thumb = case
    assert payload_plan(fmt, w, h, mip) == (sizes, fallback, thumb)
    levels = [pattern(n, i) for i, n in enumerate(sizes)]
    fb, th = pattern(fallback, 50), pattern(thumb, 51)
    data = ntf_bytes(NAME, 3, w, h, fmt, mip, b"".join(levels) + fb + th)

    doc = roundtrip_all_ways(data, "dxt")
    rec = doc.root
    assert doc.warnings == []
    assert (rec["width"], rec["height"], rec["format"], rec["mipmap"]) == (w, h, fmt, mip)
    assert rec["name"] == NAME and rec["id"] == b"NTF" and rec["version"] == 3
    assert rec["levels"] == levels
    assert rec["fallback"] == fb and rec["thumbnail"] == th and "tail" not in rec

    # the same record embedded (gtt element / gtd lightmap): identical value
    rec2, end = decode_record(data)
    assert end == len(data)
    assert rec2 == rec
    assert encode_record(rec2) == data
    # one byte more would be read as the start of the next record, not the payload
    assert decode_record(data + b"\xAA")[1] == len(data)


def test_json_forms_of_a_record():
    data = ntf_bytes(NAME, 3, 8, 8, DXT1, 1, pattern(32, 1) + pattern(8, 2) + pattern(32, 3))
    doc = potsherd.read(data, format="dxt")
    wire, readable = doc.to_json("wire")["root"], doc.to_json("readable")["root"]
    assert wire["name"] == NAME.hex()
    assert readable["name"] == NAME.decode("ascii")
    assert wire["id"] == "4e5446" and wire["version"] == 3 and wire["format"] == DXT1
    assert wire["levels"] == [pattern(32, 1).hex(), pattern(8, 2).hex()]
    assert readable["levels"] == wire["levels"] and wire["fallback"] == pattern(32, 3).hex()
    assert wire["thumbnail"] == ""


def test_korean_name_readable_and_negative_length_kept():
    korean = "가나다.dxt".encode("cp949")
    data = ntf_bytes(korean, 3, 4, 4, DXT1, 0, pattern(8, 1) + pattern(8, 2))
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.to_json("readable")["root"]["name"] == "가나다.dxt"

    data = ntf_bytes(b"", 3, 4, 4, DXT1, 0, pattern(8, 1) + pattern(8, 2), name_len=-1)
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["name"] == b"" and doc.root["name"].raw_len == -1
    assert doc.to_json("wire")["root"]["name"] == {"len": -1}


# ----------------------------------------------------------------------------
# standalone .dxt: the rest after the main levels


@pytest.mark.parametrize("extra", [b"", b"\x01" * 5, pattern(131072 + 3, 9)])
def test_dxt_tail_differs_from_rule_kept_with_warning(extra):
    level = pattern(512 * 4 * 4, 3)
    data = ntf_bytes(NAME, 3, 512, 4, A8R8G8B8, 0, level + extra)
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["levels"] == [level]
    assert doc.root["tail"] == extra
    assert "fallback" not in doc.root and "thumbnail" not in doc.root
    assert doc.warnings == [
        f"NTF payload after the main levels is {len(extra)} bytes, the writer's rule gives "
        f"131072 (fallback 0 + thumbnail 131072); kept raw as tail"]
    info = doc.info()
    assert info["tail_bytes"] == len(extra) and info["mip_count"] == 1
    assert doc.codec.opaque_bytes(doc) == len(extra)


def test_unknown_pixel_format_kept_raw():
    payload = pattern(100, 4)
    data = ntf_bytes(NAME, 3, 8, 8, 0x12345678, 0, payload)
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["levels"] == [] and doc.root["tail"] == payload
    assert doc.warnings == ["NTF pixel format unknown(0x12345678) has no known payload size: "
                            "the payload (100 bytes) is kept raw"]
    assert doc.codec.textures(doc) == []
    assert doc.warnings[-1] == ("tex: no image: no main level to decode "
                                "(format unknown(0x12345678))")
    # embedded, the size of an unknown format cannot be known: refused at the format field
    with pytest.raises(ValueFormatError) as ei:
        decode_record(data)
    assert ei.value.offset == 4 + len(NAME) + 12


def test_nonpositive_size_kept_raw_standalone_refused_embedded():
    data = ntf_bytes(NAME, 3, 0, 8, DXT1, 0, b"xyz")
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["tail"] == b"xyz"
    with pytest.raises(ValueFormatError) as ei:
        decode_record(data)
    assert ei.value.offset == 4 + len(NAME) + 4


def test_tga_renamed_dxt_is_opaque():
    # an uncompressed true-colour 2x1 Targa (18-byte header, BGR pixels)
    tga = bytes([0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 24, 0]) + b"\x00\x00\xff\xff\x00\x00"
    doc = roundtrip_all_ways(tga, "dxt")
    assert doc.root == {"tga": tga}
    assert doc.warnings == ["not an NTF record: a Targa image renamed .dxt, kept opaque"]
    assert doc.codec.opaque_bytes(doc) == len(tga)
    (name, im), = doc.codec.textures(doc)
    assert im.size == (2, 1)
    assert np.asarray(im).tolist() == [[[255, 0, 0, 255], [0, 0, 255, 255]]]


def test_not_ntf_not_tga_is_refused_at_the_id():
    data = struct.pack("<i", 3) + b"abc" + b"XTF\x03" + bytes(16)
    with pytest.raises(MagicError) as ei:
        potsherd.read(data, format="dxt")
    assert ei.value.offset == 7 and ei.value.path == "ntf.id"


# ----------------------------------------------------------------------------
# hostile input


def test_every_truncation_raises_format_error_with_offset():
    data = ntf_bytes(b"ab", 3, 8, 8, DXT1, 1, pattern(32, 1) + pattern(8, 2) + pattern(32, 3))
    gtt = data * 2
    for n in range(len(gtt)):
        if n == len(data):
            continue  # one whole record is a valid gtt
        with pytest.raises(FormatError) as ei:
            potsherd.read(gtt[:n], format="gtt")
        assert ei.value.offset is not None
    for n in range(6 + 20 + 40):  # standalone: truncation inside name, header or levels
        with pytest.raises(FormatError):
            potsherd.read(data[:n], format="dxt")


def test_truncation_offsets_and_paths():
    rec = ntf_bytes(b"ab", 3, 8, 8, DXT1, 1, pattern(72, 1))
    with pytest.raises(FormatError) as ei:  # main levels cut: reported at their start
        potsherd.read(rec[:40], format="dxt")
    assert ei.value.offset == 26 and ei.value.path == "ntf.levels"
    with pytest.raises(FormatError) as ei:  # header cut
        potsherd.read(rec[:12], format="dxt")
    assert ei.value.offset == 10 and ei.value.path == "ntf.width"
    with pytest.raises(FormatError) as ei:  # second gtt element lacks its fallback
        potsherd.read(rec + rec[:-1], format="gtt")
    assert ei.value.path == "gtt.textures[1].fallback"
    assert ei.value.offset == len(rec) + 26 + 40
    with pytest.raises(TruncatedError) as ei:  # name longer than the input
        potsherd.read(struct.pack("<i", 1 << 30) + b"x" * 30, format="dxt")
    assert ei.value.offset == 0


def test_huge_dimensions_are_refused_before_allocating():
    data = ntf_bytes(b"", 3, 1 << 30, 1 << 30, A8R8G8B8, 1, b"\0" * 64)
    with pytest.raises(FormatError) as ei:
        potsherd.read(data, format="dxt")
    assert ei.value.offset == 24 and "main levels need" in ei.value.message


# ----------------------------------------------------------------------------
# editing and JSON errors


def test_edited_level_of_wrong_size_is_refused():
    data = ntf_bytes(NAME, 3, 8, 8, DXT1, 0, pattern(64, 1))
    doc = potsherd.read(data, format="dxt")
    doc.root["levels"][0] = b"\0" * 31
    with pytest.raises(EncodeError) as ei:
        potsherd.write(doc)
    assert ei.value.path == "ntf.levels[0]"
    doc.root["levels"][0] = b"\x11" * 32
    out = potsherd.write(doc)
    assert out == data[:4 + len(NAME) + 20] + b"\x11" * 32 + data[-32:]


def test_bad_json_is_a_json_format_error():
    data = ntf_bytes(NAME, 3, 8, 8, DXT1, 0, pattern(64, 1))
    j = potsherd.read(data, format="dxt").to_json("wire")
    j["root"]["levels"] = ["zz"]
    with pytest.raises(JsonFormatError) as ei:
        potsherd.from_json(j)
    assert ei.value.path == "$.root.levels[0]"
    j["root"]["levels"] = "00"
    with pytest.raises(JsonFormatError):
        potsherd.from_json(j)
    j["root"]["extra"] = 1
    with pytest.raises(JsonFormatError):
        potsherd.from_json(j)


# ----------------------------------------------------------------------------
# .gtt


def test_gtt_sequence_exact():
    recs = [ntf_bytes(b"t%d" % i, 3, 8, 8, DXT1, 1, pattern(72, i)) for i in range(3)]
    data = b"".join(recs)
    doc = roundtrip_all_ways(data, "gtt")
    assert [r["name"] for r in doc.root["textures"]] == [b"t0", b"t1", b"t2"]
    assert doc.root["textures"][1]["levels"] == [pattern(72, 1)[:32], pattern(72, 1)[32:40]]
    info = doc.info()
    assert info["count"] == 3 and info["textures"][2]["mip_count"] == 2
    images = doc.codec.textures(doc)
    assert [n for n, _ in images] == ["t0_0", "t1_1", "t2_2"]
    assert all(im.size == (8, 8) for _, im in images)
    with pytest.raises(TruncatedError):
        potsherd.read(b"", format="gtt")


# ----------------------------------------------------------------------------
# the ntf storage inside a layout (how the gtd layout uses it)


def test_ntf_storage_in_a_layout():
    layout = Layout("terrainLightmap\n"
                    "x\t\"i16\"\t\"always\"\n"
                    "z\t\"i16\"\t\"always\"\n"
                    "texture\t\"ntf\"\t\"always\"\n"
                    "after\t\"u8\"\t\"always\"\n", {"ntf": NTF_STORAGE})
    rec = ntf_bytes(b"lm", 3, 4, 4, A4R4G4B4, 0, pattern(32, 7))
    data = struct.pack("<hh", 3, -2) + rec + b"\x09"
    value, end, _ = layout.decode("terrainLightmap", data)
    assert end == len(data) and value["after"] == 9 and value["z"] == -2
    assert value["texture"]["levels"] == [pattern(32, 7)]
    assert layout.encode("terrainLightmap", value) == data
    for form in ("wire", "readable"):
        ctx = JsonCtx(form, "cp949")
        back = layout.from_json("terrainLightmap",
                                json.loads(json.dumps(layout.to_json("terrainLightmap", value, ctx))),
                                ctx)
        assert layout.encode("terrainLightmap", back) == data
    with pytest.raises(FormatError) as ei:
        layout.decode("terrainLightmap", data[:-2])
    assert ei.value.path == "terrainLightmap.texture.levels"
    assert NTF_STORAGE.min_size == 24


# ----------------------------------------------------------------------------
# version 7


def _rc4_reference(data: bytes) -> bytes:
    """RC4 from the `cryptography` package: an independent implementation."""
    algorithms = pytest.importorskip("cryptography.hazmat.decrepit.ciphers.algorithms")
    from cryptography.hazmat.primitives.ciphers import Cipher
    import hashlib
    key = hashlib.sha1(b"owsd9012%$1as!wpow1033b%!@%12").digest()[:16]
    return Cipher(algorithms.ARC4(key), mode=None).encryptor().update(data)


def test_ntf7_keystream_matches_reference_rc4():
    zeros = bytes(5000)
    assert ntf.ntf7_keystream(5000).tobytes() == _rc4_reference(zeros)


def test_ntf7_uncompressed_restarts_per_scanline():
    w, h = 8, 4  # A4R4G4B4: 16-byte rows
    plain = np.arange(w * h, dtype="<u2") * 0x0111 | 0xF000
    rows = [plain.tobytes()[i * 16:(i + 1) * 16] for i in range(h)]
    cipher = b"".join(_rc4_reference(r) for r in rows)
    data = ntf_bytes(NAME, 7, w, h, A4R4G4B4, 0, cipher)
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["levels"] == [cipher]  # the document keeps the ciphertext
    assert doc.info()["encrypted"] is True
    assert ntf.plain_levels(doc.root) == [plain.tobytes()]
    (_, im), = doc.codec.textures(doc)
    px = np.asarray(im)
    assert px.shape == (4, 8, 4)
    v = plain.reshape(h, w).astype(int)
    assert (px[..., 3] == ((v >> 12) & 15) * 17).all()
    assert (px[..., 0] == ((v >> 8) & 15) * 17).all()


def test_ntf7_dxt_restarts_per_level():
    levels = [pattern(32, 1), pattern(8, 2)]
    cipher = [_rc4_reference(x) for x in levels]
    data = ntf_bytes(NAME, 7, 8, 8, DXT1, 1, b"".join(cipher) + pattern(32, 3))
    doc = roundtrip_all_ways(data, "dxt")
    assert doc.root["levels"] == cipher
    assert ntf.plain_levels(doc.root) == levels


def test_info_of_a_rule_following_record():
    data = ntf_bytes(NAME, 3, 8, 8, DXT1, 1, pattern(72, 1))
    info = potsherd.read(data, format="dxt").info()
    assert info == {"format": "dxt", "family": "ko", "name": NAME.decode("ascii"), "version": 3,
                    "encrypted": False, "width": 8, "height": 8, "pixel_format": "DXT1",
                    "mipmap": 1, "mip_count": 2, "main_bytes": 40, "fallback_bytes": 32,
                    "thumbnail_bytes": 0, "tail_bytes": 32, "tail_follows_rule": True}


def test_mutated_inputs_only_raise_format_errors():
    """Random byte changes in the name length and header: decoding, writing
    and image extraction either work or raise a FormatError (never an
    internal error)."""
    from potsherd.core.errors import InternalDecodeError
    seeds = [ntf_bytes(b"nm", 3, 8, 8, DXT1, 1, pattern(72, 1)),
             ntf_bytes(b"nm", 3, 8, 4, A8R8G8B8, 0, pattern(128, 2)),
             ntf_bytes(b"nm", 7, 4, 4, A4R4G4B4, 1, pattern(32, 3))]
    rng = np.random.default_rng(7)
    outcomes = {"ok": 0, "error": 0}
    for i in range(600):
        base = seeds[i % len(seeds)]
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, 26))] = int(rng.integers(0, 256))
        data = bytes(data[:int(rng.integers(len(data) - 8, len(data) + 1))])
        for fmt in ("dxt", "gtt"):
            try:
                doc = potsherd.read(data, format=fmt)
            except InternalDecodeError:
                raise
            except FormatError:
                outcomes["error"] += 1
                continue
            outcomes["ok"] += 1
            assert potsherd.write(doc) == data
            doc.codec.textures(doc)  # reports problems as warnings, never raises
    assert outcomes["ok"] > 50 and outcomes["error"] > 50, outcomes
