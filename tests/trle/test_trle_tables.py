"""The TRLE layouts as ``.layout`` tables: fixed records decode as numpy tables,
the WAD mesh blob is a core ``sized`` block (raw fallback, size regeneration),
every field knows its row, the compiled fast path takes the whole WAD, and the
JSON envelopes of every TRLE codec go through ``Codec.parse_envelope``."""
from __future__ import annotations

import json
import struct
from importlib import resources

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError, JsonFormatError
from potsherd.core.fastpath.compiled import fast_layout
from potsherd.core.layout import Unparsed
from potsherd.core.limits import DEFAULT_LIMITS
from potsherd.document import Document
from potsherd.formats.trle import model
from potsherd.formats.trle.moveables import mesh_size
from potsherd.formats.trle.layouts import SFX_LAYOUT, SWD_LAYOUT, TRWAD_LAYOUT, WAD_LAYOUT
from corpus_paths import CORPUS_ROOT
from trle_fixtures import tiny_trwad_bytes, tiny_wad_root

TUT1 = CORPUS_ROOT / "tr4wad" / "tut1" / "tut1.WAD"
needs_corpus = pytest.mark.skipif(not TUT1.is_file(), reason="shared tr4wad corpus not present")
LAYOUTS = {"wad": WAD_LAYOUT, "trwad": TRWAD_LAYOUT, "swd": SWD_LAYOUT, "sfx": SFX_LAYOUT}


def _tiny_wad_bytes() -> bytes:
    return Document("tr4wad", tiny_wad_root(), {"mesh_pad": 1}).encode()


def _first_shape_offset(root: dict) -> int:
    """Byte offset of the first polygon's shape word in a decoded WAD's file."""
    at = 4 + 4 + 8 * len(root["textures"]) + 4 + len(root["pages"])
    at += 4 + 4 * len(root["mesh_pointers"]) + 4
    m = root["meshes"][0]
    nn = int(m["normal_count"])
    return at + 12 + 6 * int(m["vertex_count"]) + 2 + (6 * nn if nn > 0 else -2 * nn) + 2


# --------------------------------------------------------------------------
# where each field is declared


def test_every_field_is_defined_at_its_row_of_a_layout_file():
    checked = 0
    for layout in LAYOUTS.values():
        for rec in layout.records.values():
            for f in rec.fields:
                place = f.defined_at
                assert place and place.startswith("potsherd/formats/trle/layouts/"), (rec.name, f.name)
                file, line = place.rsplit(":", 1)
                text = resources.files("potsherd.formats.trle").joinpath(
                    file.split("/trle/", 1)[1]).read_text(encoding="utf-8")
                assert text.splitlines()[int(line) - 1].split("\t")[0] == f.name
                checked += 1
    assert checked > 100


def test_a_hostile_count_names_its_row():
    data = bytearray(_tiny_wad_bytes())
    root = potsherd.read(bytes(data)).root
    at = 4 + 4 + 8 * len(root["textures"]) + 4 + len(root["pages"]) + 4 + 4 * len(root["mesh_pointers"])
    assert struct.unpack_from("<I", data, at)[0] == root["mesh_word_count"]
    struct.pack_into("<I", data, at, 1 << 30)  # the blob would run past the end
    with pytest.raises(FormatError) as e:
        potsherd.read(bytes(data), format="tr4wad")
    assert e.value.path == "wad.meshes"
    line = int(e.value.defined_at.rsplit(":", 1)[1])
    assert e.value.defined_at.startswith("potsherd/formats/trle/layouts/wad.layout:")
    text = resources.files("potsherd.formats.trle").joinpath("layouts/wad.layout").read_text()
    assert text.splitlines()[line - 1].startswith("meshes\t")


# --------------------------------------------------------------------------
# tables


def test_fixed_records_decode_as_tables_and_encode_from_lists_too():
    data = _tiny_wad_bytes()
    doc = potsherd.read(data, format="tr4wad")
    r = doc.root
    for key, dtype_size in (("textures", 8), ("animations", 40), ("moveables", 18), ("statics", 32)):
        assert isinstance(r[key], np.ndarray) and r[key].dtype.itemsize == dtype_size, key
    assert r["moveables"]["object_id"].tolist() == [47]
    # the same rows as a list of dicts encode to the same bytes (importers build those)
    as_lists = dict(r, **{k: model.records(r[k]) for k in ("textures", "animations", "moveables")})
    assert Document("tr4wad", as_lists, {"mesh_pad": 1}).encode() == data
    # a column edit reaches the bytes; the count follows an appended row
    r2 = dict(r, moveables=r["moveables"].copy())
    r2["moveables"]["object_id"][0] = 48
    out = Document("tr4wad", r2, {"mesh_pad": 1}).encode()
    assert out != data and potsherd.read(out).root["moveables"]["object_id"].tolist() == [48]
    r3 = dict(r, animations=np.append(r["animations"], r["animations"][:1]))
    back = potsherd.read(Document("tr4wad", r3, {"mesh_pad": 1}).encode()).root
    assert back["animation_count"] == len(r["animations"]) + 1
    assert back["animations"][-1].tobytes() == r["animations"][0].tobytes()


def test_table_json_is_columns_and_rows_are_accepted_back():
    doc = potsherd.read(_tiny_wad_bytes(), format="tr4wad")
    for form in ("wire", "readable"):
        j = json.loads(json.dumps(doc.to_json(form)))
        cols = j["root"]["moveables"]
        assert set(cols) == {"object_id", "mesh_count", "first_mesh_pointer", "links_index",
                             "keyframe_offset", "anim_index"}
        assert potsherd.from_json(j).encode() == doc.encode()
        j["root"]["moveables"] = model.records(doc.root["moveables"])  # one object per row
        assert potsherd.from_json(j).encode() == doc.encode()


def test_trwad_state_changes_follow_the_animation_table():
    doc = potsherd.read(tiny_trwad_bytes(), format="trwad")
    assert isinstance(doc.root["animations"], np.ndarray)
    assert int(doc.root["animations"]["state_change_count"].sum()) == len(doc.root["state_changes"]) > 0
    cut = dict(doc.root, state_changes=doc.root["state_changes"][1:])
    with pytest.raises(FormatError, match="state changes, the animations count"):
        Document("trwad", cut, dict(doc.params)).encode()


# --------------------------------------------------------------------------
# the mesh blob as a sized block


def test_mesh_blob_size_is_regenerated_from_the_meshes():
    doc = potsherd.read(_tiny_wad_bytes(), format="tr4wad")
    r = dict(doc.root)
    extra = r["meshes"][0]
    r["meshes"] = list(r["meshes"]) + [extra]
    r["mesh_word_count"] = 0  # stale: regenerated on encode
    out = Document("tr4wad", r, {"mesh_pad": 1}).encode()
    back = potsherd.read(out, format="tr4wad").root
    size = sum(mesh_size(m, True) for m in doc.root["meshes"])
    assert back["mesh_word_count"] * 2 == size + mesh_size(extra, True)
    assert len(back["meshes"]) == len(doc.root["meshes"]) + 1


@needs_corpus
def test_a_mutated_corpus_wad_keeps_its_mesh_blob_raw_and_round_trips():
    data = TUT1.read_bytes()
    good = potsherd.read(data, format="tr4wad")
    assert isinstance(good.root["meshes"], list) and not isinstance(good.root["meshes"], Unparsed)
    at = _first_shape_offset(good.root)
    assert struct.unpack_from("<H", data, at)[0] == good.root["meshes"][0]["polygons"][0]["shape"]
    bad = bytearray(data)
    struct.pack_into("<H", bad, at, 7)  # neither triangle (8) nor quad (9)
    bad = bytes(bad)
    doc = potsherd.read(bad, format="tr4wad")
    assert isinstance(doc.root["meshes"], Unparsed)
    start = _blob_start(good.root)
    assert bytes(doc.root["meshes"]) == bad[start:start + 2 * good.root["mesh_word_count"]]
    assert any("polygon shape 7" in w and "kept raw" in w for w in doc.warnings)
    assert doc.codec.opaque_bytes(doc) == 2 * good.root["mesh_word_count"]
    assert doc.encode() == bad
    for form in ("wire", "readable"):
        j = json.loads(json.dumps(doc.to_json(form)))
        assert j["root"]["meshes"] == {"raw": bytes(doc.root["meshes"]).hex()}
        again = potsherd.from_json(j)
        assert isinstance(again.root["meshes"], Unparsed) and again.encode() == bad
    # the rest of the file still decodes: the tables are those of the good file
    assert doc.root["moveables"].tobytes() == good.root["moveables"].tobytes()
    with pytest.raises(FormatError, match="mesh blob did not parse"):
        doc.codec.to_scene(doc)


def _blob_start(root: dict) -> int:
    return 4 + 4 + 8 * len(root["textures"]) + 4 + len(root["pages"]) + 4 + 4 * len(root["mesh_pointers"]) + 4


# --------------------------------------------------------------------------
# the compiled fast path


@pytest.mark.parametrize("which", ["wad", "trwad"])
def test_wad_and_trwad_decode_on_the_fast_path(which):
    if which == "wad":
        data, layout, params = _tiny_wad_bytes(), WAD_LAYOUT, {"mesh_pad": 1}
    else:
        data, layout, params = tiny_trwad_bytes(), TRWAD_LAYOUT, {"mesh_pad": 0}
    fast = fast_layout(layout).decode(which, data, params, DEFAULT_LIMITS, 0)
    assert isinstance(fast, tuple), "the compiled fast path declined"
    value, end, _, warnings = fast
    assert end == len(data) and warnings == []
    ref, ref_end, _ = layout.decode(which, data, params, reference=True)
    assert ref_end == end
    assert layout.encode(which, value, params) == layout.encode(which, ref, params) == data
    # negative control: a truncated input is refused on the fast path too
    assert not fast_layout(layout).decode(which, data[:-3], params, DEFAULT_LIMITS, 0)


def test_wad_meshes_are_decoded_by_generated_code_not_the_interpreter(monkeypatch):
    """The old Python mesh-blob storage ran the interpreter's mesh record inside the
    fast path; the sized block is compiled, so the interpreter's mesh is never asked."""
    data = _tiny_wad_bytes()
    calls = []
    mesh = WAD_LAYOUT.records["mesh"]
    real = type(mesh).decode
    monkeypatch.setattr(mesh, "decode", lambda r, s: calls.append(1) or real(mesh, r, s))
    fast = fast_layout(WAD_LAYOUT).decode("wad", data, {"mesh_pad": 1}, DEFAULT_LIMITS, 0)
    assert isinstance(fast, tuple) and len(fast[0]["meshes"]) == 2
    assert calls == []
    # control: the reference does go through it
    WAD_LAYOUT.decode("wad", data, {"mesh_pad": 1}, reference=True)
    assert len(calls) == 2


@needs_corpus
def test_corpus_wad_decodes_on_the_fast_path():
    data = TUT1.read_bytes()
    fast = fast_layout(WAD_LAYOUT).decode("wad", data, {"mesh_pad": 1}, DEFAULT_LIMITS, 0)
    assert isinstance(fast, tuple) and fast[1] == len(data)
    assert isinstance(fast[0]["meshes"], list) and isinstance(fast[0]["animations"], np.ndarray)


# --------------------------------------------------------------------------
# JSON envelopes


@pytest.mark.parametrize("fmt", ["tr4was", "tr4sam"])
def test_text_list_envelope_is_checked_like_every_codec(fmt):
    doc = potsherd.read(b"LARA\r\nPISTOLS_ANIM\r\n", format=fmt)
    j = doc.to_json("readable")
    assert potsherd.from_json(j).encode() == doc.encode()
    with pytest.raises(JsonFormatError) as e:
        potsherd.from_json(dict(j, form="pretty"))
    assert e.value.path == "$.form"
    with pytest.raises(JsonFormatError) as e:
        potsherd.from_json(dict(j, meta="latin-1"))
    assert e.value.path == "$.meta"
    with pytest.raises(JsonFormatError) as e:
        potsherd.from_json(dict(j, trailing="00"))  # would be lost: refused
    assert e.value.path == "$.trailing"
    kept = potsherd.from_json(dict(j, meta={"note": "x"}))
    assert kept.meta == {"note": "x"}


def _small_documents() -> dict:
    swd = {"version": 129, "sprite_count": 1,
           "sprites": [{"x": 1, "y": 2, "page": 0, "flip_x": -1, "w": 3, "flip_y": 0, "h": 4,
                        "left": -5, "top": 6, "right": 7, "bottom": -8}],
           "page_byte_count": 0, "pages": b"", "sequence_count": 1,
           "sequences": [{"object_id": 460, "negative_count": -1, "first": 0}]}
    sfx = {"sound_map": np.full(370, -1, np.int16), "info_count": 1,
           "infos": [{"sample": 3, "volume": 200, "range": 8, "chance": 0, "pitch": 0, "flags": 0}],
           "sample_count": 2, "samples": np.array([0, 1], np.uint32)}
    return {"tr4wad": _tiny_wad_bytes(), "trwad": tiny_trwad_bytes(),
            "tr4swd": Document("tr4swd", swd, {}).encode(),
            "tr4sfx": Document("tr4sfx", sfx, {"map_size": 370}).encode()}


@pytest.mark.parametrize("fmt", ["tr4wad", "trwad", "tr4swd", "tr4sfx"])
def test_layout_codec_envelopes_are_checked_and_kept(fmt):
    data = _small_documents()[fmt]
    doc = potsherd.read(data, format=fmt)
    j = json.loads(json.dumps(doc.to_json("readable")))
    assert potsherd.from_json(j).encode() == data
    for key, bad in (("form", "pretty"), ("meta", "latin-1"), ("params", [1]), ("trailing", "0g")):
        with pytest.raises(JsonFormatError) as e:
            potsherd.from_json(dict(j, **{key: bad}))
        assert e.value.path == f"$.{key}", key
    kept = potsherd.from_json(dict(j, trailing="abcd", meta={"note": "x"}))
    assert kept.meta == {"note": "x"} and kept.encode() == data + b"\xab\xcd"


def test_trwad_polygon_checks_on_columns_match_the_per_polygon_forms():
    """trwad_warnings reads a mesh's polygons as columns: the first polygon past
    the vertices and every texture index as the one-polygon forms give them."""
    from potsherd.formats.trle.codecs import _first_polygon_beyond, _texture_indices
    rng = np.random.default_rng(1)
    for trial in range(300):
        nv = int(rng.integers(1, 60))
        polys = []
        for s in rng.choice([8, 9], int(rng.integers(1, 12))).tolist():
            v = rng.integers(0, 64, 4 if s == 9 else 3).astype(np.uint16)
            polys.append({"shape": s, "vertices": v if rng.random() < .8 else v.tolist(),
                          "texture": int(rng.integers(-70000, 70000))})
        first = next((j for j, p in enumerate(polys) if max(np.asarray(p["vertices"]).tolist()) >= nv),
                     None)
        assert _first_polygon_beyond(polys, nv) == first, trial
        assert _texture_indices(polys).tolist() == \
            [model.texture_index(p["shape"], p["texture"])[0] for p in polys], trial
