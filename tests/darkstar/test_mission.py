"""Missions: the object tree read with typed access, whitespace, comments and
non-UTF-8 bytes kept byte for byte, edits written back, odd text kept, and
every corpus mission round-tripped."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

import potsherd
from potsherd.core.errors import FormatError
from potsherd.formats.darkstar import mission as M
from potsherd.formats.darkstar.terrain_examples import MISSION_TEXT

from corpus_paths import CORPUS_ROOT

MISSIONS = CORPUS_ROOT / "tribes" / "base" / "missions"


def decode(data: bytes, name: str = "x.mis"):
    return potsherd._registry.decode(data, path=name)


def test_objects_and_typed_values():
    doc = decode(MISSION_TEXT)
    assert doc.format == "mis" and doc.encode() == MISSION_TEXT
    objs = list(M.objects(doc.root))
    assert [(o.cls, o.name) for o in objs] == [
        ("SimGroup", "MissionGroup"), ("SimVolume", "Volume"), ("SimTerrain", "Terrain"),
        ("InteriorShape", "tower"), ("StaticShape", "gen"), ("Marker", "DropPoint1")]
    tower = objs[3]
    assert tower.groups == ("MissionGroup",)
    assert tower.position == (10.0, 20.0, 30.0) and tower.rotation == (0.0, 0.0, 1.5708)
    assert tower.file_name == "cube.dis"
    assert objs[4].datablock == "Generator" and objs[4].rotation == (0.0, -0.0, 0.0)
    assert M.globals_(doc.root) == {"$missionName": "Example"}
    assert doc.codec.opaque_bytes(doc) == 0


def test_edit_keeps_everything_else():
    doc = decode(MISSION_TEXT)
    tower = [o for o in M.objects(doc.root) if o.name == "tower"][0]
    M.set_field(tower.node, "position", "7 8 9")
    M.set_field(tower.node, "note", 'say "hi"')
    out = doc.encode()
    assert out.replace(b'"7 8 9"', b'"10 20 30"').replace(
        b'\r\n\t\tnote = "say \\"hi\\"";', b"") == MISSION_TEXT
    again = [o for o in M.objects(decode(out).root) if o.name == "tower"][0]
    assert again.position == (7.0, 8.0, 9.0) and again.fields["note"] == 'say "hi"'


@pytest.mark.parametrize("text", [
    b"", b"   \n", b"// only a comment",
    b'instant SimGroup "a";\n',                          # no body
    b'instant InteriorShape {\n fileName = "x.dis";\n};',  # unnamed
    b'instant SimGroup "a" {\n  instant Marker "m" {',      # file ends inside objects
    b'}};\nrandom text without semicolon\nexec(x);',
    b'instant A "\xe9t\xe9" { k = "caf\xe9\\"x"; };',        # latin-1 bytes, escapes
    b'instant A "x" { k = bare; k2="v"  ;\t};  }',
])
def test_odd_text_is_kept_byte_for_byte(text):
    doc = decode(text)
    assert doc.encode() == text
    assert potsherd.from_json(json.dumps(doc.to_json("readable"))).encode() == text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([b"instant ", b"A", b' "n"', b" {", b"};", b"}", b";", b" = ",
                                 b'"v"', b"\n", b"// c\n", b"\t", b"\xff", b"k", b"[1]", b'\\"']),
                max_size=60))
def test_any_text_round_trips(parts):
    text = b"".join(parts)
    doc = decode(text)
    assert doc.encode() == text


def test_deep_nesting_is_refused_not_crashing():
    text = b'instant G "g" {' * 400
    with pytest.raises(FormatError):
        decode(text)


def test_malformed_json_tree_is_refused():
    doc = decode(MISSION_TEXT)
    obj = doc.to_json("wire")
    obj["root"]["items"][1]["kind"] = "bogus"
    with pytest.raises(FormatError):
        potsherd.from_json(json.dumps(obj))


FILES = sorted(p for p in MISSIONS.iterdir() if p.suffix.lower() == ".mis") \
    if MISSIONS.is_dir() else []


@pytest.mark.corpus
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_missions_round_trip(path):
    data = path.read_bytes()
    doc = potsherd.read(path)
    assert doc.format == "mis" and doc.encode() == data
    assert doc.codec.opaque_bytes(doc) <= len(data) // 100
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.dumps(doc.to_json(form))).encode() == data
    objs = list(M.objects(doc.root))
    # every 'instant' keyword of the file is an object of the tree
    assert len(objs) == data.count(b"instant ")
    interiors = [o for o in objs if o.cls == "InteriorShape"]
    assert interiors and all(o.position and o.file_name.endswith(".dis") for o in interiors)
