"""Every real TR4 wad-family file of the shared corpus, and every moveable of
every corpus wad cut to a .trwad and pasted back."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.document import Document
from potsherd.formats.trle import model
from potsherd.formats.trle.catalog import moveable_name
from potsherd.formats.trle.codecs import animation_ranges
from potsherd.formats.trle.moveables import (empty_wad, extract, insert, mesh_offsets,
                                             view_from_trwad, view_from_wad)
from corpus_paths import CORPUS_ROOT

# tests/trle/<file> -> repo root is parents[2]; shared/ sits beside the repo
CORPUS = CORPUS_ROOT / "tr4wad"
if not CORPUS.is_dir():
    pytest.skip("shared tr4wad corpus not present", allow_module_level=True)

FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix.lower() in
               {".wad", ".was", ".swd", ".sam", ".sfx"})
WADS = [p for p in FILES if p.suffix.lower() == ".wad"]
TUT1 = CORPUS / "tut1" / "tut1.WAD"
POYU = CORPUS / "poyu" / "TR4 color.wad"

_CACHE: dict = {}


def wad(path: Path):
    if path not in _CACHE:
        _CACHE[path] = potsherd.read(str(path))
    return _CACHE[path]


def test_corpus_is_complete():
    assert len(FILES) == 10 and len(WADS) == 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trip_byte_exact(path):
    data = path.read_bytes()
    doc = potsherd.read(str(path))
    assert doc.encode() == data
    assert doc.codec.opaque_bytes(doc) == len(doc.trailing)
    for form in ("wire", "readable"):
        obj = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.from_json(obj).encode() == data


def test_wad_structure_tut1():
    r = wad(TUT1).root
    assert r["version"] == 129
    assert (r["texture_count"], r["page_byte_count"] // model.PAGE_BYTES) == (1581, 11)
    assert (r["moveable_count"], r["static_count"], r["animation_count"]) == (109, 11, 731)
    assert isinstance(r["meshes"], list) and len(r["meshes"]) == 301
    # the Core-written link array is exact: sum of 4 * (N - 1)
    assert r["link_word_count"] == sum(4 * (m["mesh_count"] - 1) for m in r["moveables"]
                                       if m["mesh_count"])
    offsets = mesh_offsets(r["meshes"])
    assert set(r["mesh_pointers"].tolist()) == set(offsets)
    assert wad(TUT1).warnings == []


def test_wad_structure_poyu_has_the_wadmerger_link_defect():
    r = wad(POYU).root
    assert r["link_word_count"] == 200
    assert sum(4 * (m["mesh_count"] - 1) for m in r["moveables"]) == 188
    assert [m["links_index"] for m in r["moveables"]] == [0, 59, 118, 177]  # 4N-1 apart


def test_info_names_moveables_from_the_catalog():
    info = wad(TUT1).info()
    names = [m["name"] for m in info["moveables"]]
    was = (CORPUS / "tut1" / "tut1.WAS").read_bytes().decode("latin-1").split("\n")
    assert names == [line.split(":")[0] for line in was[:len(names)]]
    assert info["moveables"][0] == {"id": 0, "name": "LARA", "meshes": 15, "animations": 445}
    assert moveable_name(47) == "MUMMY"


def test_companion_files():
    swd = potsherd.read(str(CORPUS / "tut1" / "tut1.SWD"))
    assert swd.info()["sprites"] == 37
    assert [(s["object_id"], -s["negative_count"]) for s in swd.root["sequences"]] == [(460, 4),
                                                                                       (463, 33)]
    sfx = potsherd.read(str(CORPUS / "poyu" / "TR4 color.sfx"))
    assert sfx.params["map_size"] == 370 and sfx.trailing == bytes(12)
    sam = potsherd.read(str(CORPUS / "tut1" / "tut1.sam"))
    assert sam.info()["files"][:2] == ["foot01.wav", "foot02.wav"]


def test_wad_textures_are_rgb_pages():
    doc = wad(POYU)
    items = doc.codec.textures(doc)
    assert [n for n, _ in items] == ["page000", "page001"]
    img = items[0][1]
    assert img.size == (256, 256) and img.mode == "RGB"
    assert img.tobytes() == bytes(doc.root["pages"][:model.PAGE_BYTES])


# --------------------------------------------------------------------------
# cut and paste


@pytest.mark.parametrize("path", WADS, ids=lambda p: p.name)
def test_every_moveable_extracts_round_trips_and_reinserts(path):
    src = wad(path).root
    empty = empty_wad()
    for m in src["moveables"]:
        oid = m["object_id"]
        t = extract(src, oid)
        data = Document("trwad", t, {"mesh_pad": 0}).encode()
        doc = potsherd.read(data)
        assert doc.format == "trwad" and doc.warnings == [], oid
        assert doc.encode() == data
        # WadMerger layout: 4N-1 link words starting at links_index
        n = m["mesh_count"]
        li = m["links_index"]
        links = np.asarray(src["link_words"])[li:li + 4 * n - 1]
        assert doc.root["link_word_count"] == 4 * n - 1
        assert doc.root["link_words"][:len(links)].tolist() == links.tolist()
        assert not doc.root["zero_words"].any()
        view = view_from_trwad(doc.root)
        # paste into an empty wad: the same moveable, value by value
        new = insert(empty, doc.root)
        assert view_from_wad(new, oid) == view, oid
        # paste back into its own wad (replacing itself)
        again = insert(src, doc.root)
        assert view_from_wad(again, oid) == view, oid
        assert [x["object_id"] for x in again["moveables"]] == \
               [x["object_id"] for x in src["moveables"]]


def test_reinserted_moveable_matches_the_source_directly():
    """Checks not routed through ``extract``: raw meshes, keyframe words,
    animation fields and texture pixels of the pasted moveable."""
    src = wad(TUT1).root
    oid = 47
    t = extract(src, oid)
    new_data = Document("tr4wad", insert(wad(POYU).root, t), {"mesh_pad": 1}).encode()
    new = potsherd.read(new_data, format="tr4wad").root
    assert potsherd.read(new_data).encode() == new_data
    sm = next(m for m in src["moveables"] if m["object_id"] == oid)
    nm = next(m for m in new["moveables"] if m["object_id"] == oid)
    soff, noff = mesh_offsets(src["meshes"]), mesh_offsets(new["meshes"])
    spages, npages = model.page_array(bytes(src["pages"])), model.page_array(bytes(new["pages"]))
    for j in range(sm["mesh_count"]):
        a = src["meshes"][soff[int(src["mesh_pointers"][sm["first_mesh_pointer"] + j])]]
        b = new["meshes"][noff[int(new["mesh_pointers"][nm["first_mesh_pointer"] + j])]]
        assert np.array_equal(a["vertices"], b["vertices"])
        assert np.array_equal(a["normals"], b["normals"])
        assert (a["radius"], a["flags"], a["pad"]) == (b["radius"], b["flags"], b["pad"])
        for pa, pb in zip(a["polygons"], b["polygons"], strict=True):
            assert np.array_equal(pa["vertices"], pb["vertices"])
            ia, fa = model.texture_index(pa["shape"], pa["texture"])
            ib, fb = model.texture_index(pb["shape"], pb["texture"])
            assert fa == fb
            ta, tb = src["textures"][ia], new["textures"][ib]
            assert (ta["w"], ta["h"], ta["flip_x"], ta["flip_y"]) == \
                   (tb["w"], tb["h"], tb["flip_x"], tb["flip_y"])
            assert np.array_equal(model.cut_texture(spages, ta)[0], model.cut_texture(npages, tb)[0])
    (a0, a1), (b0, b1) = animation_ranges(src)[list(src["moveables"]["object_id"]).index(oid)], \
        animation_ranges(new)[list(new["moveables"]["object_id"]).index(oid)]
    assert a1 - a0 == b1 - b0 == 21
    skw, nkw = src["keyframe_words"], new["keyframe_words"]
    end_s = src["animations"][a1]["keyframe_offset"]
    end_n = new["animations"][b1]["keyframe_offset"] if b1 < len(new["animations"]) else 2 * len(nkw)
    assert np.array_equal(skw[sm["keyframe_offset"] // 2:end_s // 2],
                          nkw[nm["keyframe_offset"] // 2:end_n // 2])
    for sa, na in zip(src["animations"][a0:a1], new["animations"][b0:b1]):
        for k in ("frame_duration", "frame_size", "state_id", "speed", "accel", "frame_start",
                  "frame_end", "next_frame", "state_change_count", "command_count"):
            assert sa[k] == na[k]
        assert sa["next_anim"] - a0 == na["next_anim"] - b0
        assert sa["keyframe_offset"] - sm["keyframe_offset"] == \
               na["keyframe_offset"] - nm["keyframe_offset"]
        ssc = src["state_changes"][sa["state_change_index"]:][:sa["state_change_count"]]
        nsc = new["state_changes"][na["state_change_index"]:][:na["state_change_count"]]
        assert ssc[:, 0].tolist() == nsc[:, 0].tolist()
        for x, y in zip(ssc, nsc):
            ds = src["dispatches"][x[2]:x[2] + x[1]].astype(int)
            dn = new["dispatches"][y[2]:y[2] + y[1]].astype(int)
            assert ds[:, [0, 1, 3]].tolist() == dn[:, [0, 1, 3]].tolist()
            assert (ds[:, 2] - a0).tolist() == (dn[:, 2] - b0).tolist()
        cs = model.parse_command_stream(src["command_words"], sa["command_offset"],
                                        sa["command_count"])
        cn = model.parse_command_stream(new["command_words"], na["command_offset"],
                                        na["command_count"])
        assert cs == cn


@pytest.mark.parametrize("oid", [0, 30, 47, 386])
def test_replacing_keeps_every_other_moveable(oid):
    src = wad(TUT1).root
    new = insert(src, extract(src, oid))
    data = Document("tr4wad", new, {"mesh_pad": 1}).encode()
    back = potsherd.read(data, format="tr4wad").root
    for m in src["moveables"][::7]:
        assert view_from_wad(back, m["object_id"], True) == view_from_wad(src, m["object_id"], True)


def test_cross_wad_insert_keeps_the_target_moveables():
    src, dst = wad(TUT1).root, wad(POYU).root
    new = dst
    for oid in (0, 8, 30, 106):  # Lara first; 8 and 30 replace poyu's own
        new = insert(new, extract(src, oid))
    assert [m["object_id"] for m in new["moveables"]] == [0, 8, 9, 10, 30, 106]
    for oid in (9, 10):
        assert view_from_wad(new, oid) == view_from_wad(dst, oid)
    for oid in (0, 8, 30, 106):
        assert view_from_wad(new, oid) == view_from_wad(src, oid)


def test_extracted_lara_matches_known_values():
    t = extract(wad(TUT1).root, 0)
    data = Document("trwad", t, {"mesh_pad": 0}).encode()
    assert (t["mesh_count"], t["texture_count"], t["animation_count"]) == (15, 16, 445)
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(
        Document("trwad", potsherd.read(data).root, {"mesh_pad": 0}).encode()).hexdigest()
    bones = model.skeleton(t["link_words"], 15)
    assert [b["parent"] for b in bones][:4] == [-1, 0, 1, 2]
    a = t["animations"][0]
    frames = model.keyframe_count(a["keyframe_offset"], a["frame_size"],
                                  t["animations"][1]["keyframe_offset"])
    kf = model.decode_keyframes(t["keyframe_words"], a["frame_size"], frames, 15)
    assert kf["rotation"].shape == (frames, 15, 3)
    assert np.all((kf["rotation"] >= 0) & (kf["rotation"] < 2 * np.pi))


def _without_source_indices(t: dict) -> bytes:
    """A .trwad's bytes with the fields that number the source wad zeroed
    (they change when a moveable is pasted elsewhere)."""
    t = dict(t)
    t["moveable"] = {**t["moveable"], "first_mesh_pointer": 0, "links_index": 0,
                     "keyframe_offset": 0, "anim_index": 0}
    t["animations"] = [{**a, "keyframe_offset": a["keyframe_offset"]
                        - t["animations"][0]["keyframe_offset"],
                        "state_change_index": 0, "command_offset": 0} for a in t["animations"]]
    t["state_changes"] = [{**s, "dispatch_index": 0} for s in t["state_changes"]]
    t["link_words"] = np.asarray(t["link_words"])[:4 * max(t["mesh_count"] - 1, 0)]
    t["link_word_count"] = len(t["link_words"])
    return Document("trwad", t, {"mesh_pad": 0}).encode()


@pytest.mark.parametrize("path", WADS, ids=lambda p: p.name)
def test_extract_insert_extract_is_lossless(path):
    """Pasting a moveable back into its own wad and cutting it again gives the same
    texture list (count, texinfos, pixels) and polygon texture words: textures with
    equal pixels are no longer merged (tut1 MUMMY went from 89 textures / 97,212
    bytes to 88 / 97,156; five other tut1 moveables lost 1 to 4)."""
    src = wad(path).root
    merged_before = 0
    for m in src["moveables"]:
        oid = m["object_id"]
        t = extract(src, oid)
        keys = [(x["flip_x"], x["flip_y"], x["w"], x["h"], bytes(x["pixels"]))
                for x in t["textures"]]
        merged_before += len(keys) - len(set(keys))
        again = extract(insert(src, t), oid)
        assert again["textures"] == t["textures"], oid
        assert _without_source_indices(again) == _without_source_indices(t), oid
        assert len(Document("trwad", again, {"mesh_pad": 0}).encode()) == \
            len(Document("trwad", t, {"mesh_pad": 0}).encode())
        if path == TUT1 and oid == 47:
            assert len(again["textures"]) == 89
            assert len(Document("trwad", again, {"mesh_pad": 0}).encode()) == 97_212
    # control: the corpus does hold moveables with equal-pixel textures to merge
    assert merged_before == (17 if path == TUT1 else 0)
