"""Every .dxt / .gtt of the shared KO corpus: decode, byte-exact round trip,
both JSON forms, PNG of the right size; DXT pixels against Pillow's DDS reader.
Skips when ../shared/corpus/ko is absent."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

import potsherd
from potsherd.formats.ko import ntf
from potsherd.formats.ko.textures import record_rgba

from ntf_fixtures import corpus_root, dds_wrap

ROOT = corpus_root()
FILES = sorted(p for p in ROOT.rglob("*") if p.is_file() and p.suffix.lower() in (".dxt", ".gtt")) \
    if ROOT.is_dir() else []


def _id(p):
    return str(p.relative_to(ROOT))


def _records(doc):
    if doc.format == "gtt":
        return doc.root["textures"]
    return [] if "tga" in doc.root else [doc.root]


@pytest.fixture(scope="module", autouse=True)
def _need_corpus():
    if not FILES:
        pytest.skip(f"KO corpus absent ({ROOT})")


@pytest.mark.parametrize("path", FILES or [None], ids=[_id(p) for p in FILES] or ["absent"])
def test_corpus_texture(path):
    if path is None:
        pytest.skip("KO corpus absent")
    data = path.read_bytes()
    doc = potsherd.read(path)
    assert doc.format == ("gtt" if path.suffix.lower() == ".gtt" else "dxt")
    assert potsherd.write(doc) == data
    for form in ("wire", "readable"):
        back = potsherd.from_json(json.loads(json.dumps(doc.to_json(form))))
        assert potsherd.write(back) == data, form

    records = _records(doc)
    images = doc.codec.textures(doc)
    if doc.format == "gtt":
        assert len(records) == 8  # the note: 8 per file, DXT1 128x128 with mips
        assert all(r["format"] == ntf.FOURCC_DXT1 and r["mipmap"] for r in records)
    if not records:  # the renamed Targa
        assert doc.warnings == ["not an NTF record: a Targa image renamed .dxt, kept opaque"]
        assert len(images) == 1
        return
    assert len(images) == len(records)
    for rec, (_, im) in zip(records, images):
        assert im.size == (rec["width"], rec["height"]) and im.mode == "RGBA"
        png = io.BytesIO()
        im.save(png, format="PNG")
        assert Image.open(io.BytesIO(png.getvalue())).size == im.size
    # the rule holds everywhere except the one NTF7 file without its thumbnail
    if path.name == "encrypted.re_inventory02.dxt":
        assert doc.root["tail"] == b"" and len(doc.warnings) == 1
    else:
        assert doc.warnings == [] and all("tail" not in r for r in records)


DXT_FILES = [p for p in FILES if p.suffix.lower() == ".dxt"]


def test_dxt_pixels_match_pillow_dds_reader():
    """Level 0 of every DXT1/DXT3 record, wrapped in a DDS header for Pillow."""
    fourcc = {ntf.FOURCC_DXT1: b"DXT1", ntf.FOURCC_DXT3: b"DXT3", ntf.FOURCC_DXT5: b"DXT5"}
    checked = {b"DXT1": 0, b"DXT3": 0}
    for path in FILES:
        doc = potsherd.read(path)
        for rec in _records(doc):
            if rec["format"] not in fourcc:
                continue
            cc = fourcc[rec["format"]]
            level0 = ntf.plain_levels(rec)[0]
            im = Image.open(io.BytesIO(dds_wrap(cc, rec["width"], rec["height"], level0)))
            im.load()
            assert np.array_equal(record_rgba(rec), np.asarray(im.convert("RGBA"))), path
            checked[cc] += 1
    assert checked[b"DXT1"] >= 40 and checked[b"DXT3"] >= 20, checked


def test_encrypted_icon_decrypts_to_a_smooth_image():
    """The 64x64 NTF7 A4R4G4B4 icon: decrypted pixels are an image (neighbours
    alike), the ciphertext is noise.  A wrong key or restart rule fails this."""
    paths = [p for p in DXT_FILES if p.name == "encrypted.itemicon_8_9024_00_0.dxt"]
    if not paths:
        pytest.skip("encrypted icon not in the corpus")
    doc = potsherd.read(paths[0])
    rec = doc.root
    assert (rec["version"], rec["width"], rec["height"], rec["format"]) == (7, 64, 64, 26)
    plain = np.asarray(doc.codec.textures(doc)[0][1]).astype(int)
    raw = dict(rec, version=3)  # the ciphertext read as if plain
    noise = record_rgba(raw).astype(int)
    smooth = np.abs(np.diff(plain[..., :3], axis=1)).mean()
    rough = np.abs(np.diff(noise[..., :3], axis=1)).mean()
    assert smooth < 20 < rough
    # a 45x45 opaque icon in the top-left corner of a transparent 64x64 texture
    opaque = plain[..., 3] == 255
    assert opaque[:45, :45].all() and not opaque[45:].any() and not opaque[:, 45:].any()


def test_corpus_summary_counts():
    """The formats seen, as the note lists them (for this corpus selection)."""
    seen = {}
    for path in FILES:
        doc = potsherd.read(path)
        if doc.format == "dxt" and "tga" in doc.root:
            seen["tga"] = seen.get("tga", 0) + 1
            continue
        for rec in _records(doc):
            key = (doc.format, rec["version"], ntf.format_name(rec["format"]))
            seen[key] = seen.get(key, 0) + 1
    assert seen["tga"] == 1
    assert seen[("dxt", 7, "A8R8G8B8")] == 1 and seen[("dxt", 7, "A4R4G4B4")] == 1
    assert seen[("gtt", 3, "DXT1")] == 8 * len([p for p in FILES if p.suffix.lower() == ".gtt"])
    assert {k[2] for k in seen if k != "tga"} <= {"DXT1", "DXT3", "A8R8G8B8", "X8R8G8B8",
                                                  "A1R5G5B5", "A4R4G4B4"}
