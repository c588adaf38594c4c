"""Knight Online record formats against the real client files of the corpus.

Every file of the record extensions under ``../shared/corpus/ko`` must decode,
keep no unexplained bytes (the known opaque / trailing cases of the format note
are asserted exactly), and round-trip byte for byte; the JSON forms must
rebuild the file too.  Skips when the corpus folder is absent.
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import potsherd
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "ko"
EXTENSIONS = {".n3pmesh", ".n3cskins", ".n3cpart", ".n3cplug", ".n3cplug_cloak", ".n3shape",
              ".n3chr", ".n3joint", ".n3anim", ".n3sky", ".fxb", ".gtd", ".opd", ".uif",
              ".n3fxplug", ".n3skin", ".n3imesh"}

#: files the note explains: path -> (kind, bytes kept raw)
KNOWN_RAW = {
    # note row 15 / section 9: the Hero Online opd parses under neither variant
    "data/Zones/moradon_hero.opd": "opaque",
    # note row 8: a 2010-era bundle of version 5: its body after the version is raw
    "data/fx/12xx_new_2010_moradon_gg_all5.fxb": "fxb-body",
    # note row 4: eight 0xFFFFFFFF words after the animation name leave 12 bytes
    "data/ChrSelect/upc_el_rf_bone.n3chr": "trailing",
}

#: every file goes through both JSON forms (the 3.5 MB karus_start_new.opd,
#: 90,000 cell records, in under 2 s a form) except one duplicate
JSON_SKIP = {# byte-identical to data/Zones/moradon.opd (same sha256 in SOURCES.txt)
             "variants/a38e88d3fe/data/Zones/moradon_1298.opd"}


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)


FILES = corpus_files()
IDS = [p.relative_to(CORPUS).as_posix() for p in FILES]


def _skip_if_absent() -> None:
    if not FILES:
        pytest.skip("KO corpus not present at ../shared/corpus/ko")


_DOCS: dict[Path, potsherd.Document] = {}


def read(p: Path) -> potsherd.Document:
    doc = _DOCS.get(p)
    if doc is None:
        doc = _DOCS[p] = potsherd.read(p)
    return doc


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_decodes_and_round_trips_exactly(path: Path):
    data = path.read_bytes()
    doc = read(path)
    assert doc.encode() == data
    rel = path.relative_to(CORPUS).as_posix()
    kind = KNOWN_RAW.get(rel)
    codec = doc.codec
    if kind is None:
        assert doc.warnings == []
        assert doc.trailing == b""
        assert codec.opaque_bytes(doc) == 0
        assert "opaque" not in doc.params
    elif kind == "opaque":
        assert doc.params == {"opaque": 1} and doc.root == {"body": data}
        assert "Hero Online" in doc.warnings[0]
    elif kind == "fxb-body":
        assert doc.root["version"] == 5 and doc.root["body"] == data[4:]
        assert codec.opaque_bytes(doc) == len(data) - 4
    else:
        assert doc.trailing == b"\xff" * 12 and doc.root["fxPlug"].raw_len == -1
        assert codec.opaque_bytes(doc) == 12
    info = doc.info()
    json.dumps(info)  # JSON-able
    assert info["format"] == codec.name


@pytest.mark.parametrize("form", ["wire", "readable"])
@pytest.mark.parametrize("path", [p for p, i in zip(FILES, IDS) if i not in JSON_SKIP],
                         ids=[i for i in IDS if i not in JSON_SKIP])
def test_json_forms_rebuild_the_file(path: Path, form: str):
    data = path.read_bytes()
    doc = read(path)
    doc.source = str(path)
    text = json.dumps(doc.to_json(form), ensure_ascii=False)
    assert potsherd.from_json(text).encode() == data


def test_every_extension_is_covered():
    _skip_if_absent()
    counts = collections.Counter(p.suffix.lower() for p in FILES)
    assert counts == {".fxb": 29, ".gtd": 6, ".n3anim": 15, ".n3chr": 16, ".n3cpart": 30,
                      ".n3cplug": 12, ".n3cskins": 30, ".n3joint": 29, ".n3pmesh": 21,
                      ".n3shape": 24, ".n3sky": 5, ".opd": 6, ".uif": 24}


def test_variant_decisions_match_the_note():
    _skip_if_absent()
    seen = collections.Counter()
    for p in FILES:
        doc, ext = read(p), p.suffix.lower()
        r = doc.root
        if ext == ".n3joint":
            seen[f"joint{doc.params['jointKeys']}"] += 1
        elif ext == ".gtd":
            seen["gtd h{gtdHeader} r{legacyRivers} p{legacyPonds}".format(**doc.params)] += 1
        elif ext == ".opd" and "opaque" not in doc.params:
            seen[f"opd h{doc.params['opdHeader']}"] += 1
        elif ext == ".n3shape":
            seen[f"shape{sum(k in r for k in ('belong', 'eventID', 'eventType', 'npcID', 'npcStatus'))}"] += 1
        elif ext == ".n3cplug":
            seen[f"vmesh {r.get('useVMesh')}"] += 1
        elif ext == ".n3chr":
            seen[f"fxPlug {'fxPlug' in r}"] += 1
        elif ext == ".fxb" and "slots" in r:
            seen["extension"] += sum("extension" in s for s in r["slots"])
    assert seen == {"joint3": 12, "joint4": 17,  # row 5
                    "gtd h1 r0 p0": 3, "gtd h0 r0 p0": 2, "gtd h0 r0 p1": 1,  # rows 9-11
                    "opd h1": 3, "opd h0": 2,  # row 15
                    "shape1": 7, "shape5": 17,  # row 3
                    "vmesh None": 8, "vmesh 0": 1, "vmesh 1": 3,  # row 2
                    "fxPlug True": 6, "fxPlug False": 10,  # section 6.6
                    "extension": 32}  # row 6: 1-byte extension of v6 parts


def test_uif_version_words_and_taiwan_text():
    _skip_if_absent()
    words = collections.Counter()

    def walk(n):
        words[n["versionWord"]] += 1
        for c in n["children"]:
            walk(c["node"])
    for p in FILES:
        if p.suffix.lower() == ".uif":
            walk(read(p).root["root"])
    assert words == {0: 802, 1: 1053}
    tw = CORPUS / "variants/065896165e/data/UI/el_saleboard_tw.uif"
    doc = potsherd.read(tw)
    j = doc.to_json("readable")
    assert j["meta"]["text_encoding"] == "cp950"
    assert "細明體" in json.dumps(j, ensure_ascii=False)


def test_character_references_resolve_in_the_corpus():
    """The five complete models: every part, plug, joint and animation named
    by the character exists (case-insensitively) under data/."""
    _skip_if_absent()
    index = {p.relative_to(CORPUS / "data").as_posix().lower() for p in (CORPUS / "data").rglob("*")}
    doc = potsherd.read(CORPUS / "data/Intro/intro.n3chr")
    info = doc.info()
    refs = [info["joint"], info["animation"], *info["parts"], *info["plugs"]]
    assert len(refs) == 22
    for ref in refs:
        assert ref.replace("\\", "/").lower() in index, ref


def test_pmesh_full_detail_reaches_the_maximum_counts():
    """Note 10.5: replaying every collapse ends exactly at the stored maxima."""
    _skip_if_absent()
    for p in FILES:
        if p.suffix.lower() == ".n3pmesh":
            doc = read(p)
            info = doc.info()
            assert info["fullDetail"] == {"vertices": info["vertices"], "faces": info["faces"]}, p
