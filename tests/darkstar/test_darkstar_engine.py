"""Darkstar on the shared engine: core tables, payloads on the compiled decoder
(same documents and errors as the reference, bounded work on nested blocks),
fields that name their line of structures.json, one JSON envelope parser,
and companion files read within the caller's limits."""
from __future__ import annotations

import json
import os
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import registry
from potsherd.core import describe, fastpath
from potsherd.core.errors import FormatError, JsonFormatError, LimitError, TruncatedError
from potsherd.core.fastpath.compiled import FastLayout
from potsherd.core.layout import Table
from potsherd.core.limits import DEFAULT_LIMITS
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.pers import LAYOUT
from potsherd.formats.darkstar.structs import SlotColumn

from dts_fixtures import mesh_bytes, pers, shape_bytes

P = struct.pack
CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
PKG = Path(potsherd.__file__).resolve().parent


def corpus_files(family: str, exts: tuple[str, ...]) -> list[Path]:
    top = CORPUS / family
    if not top.is_dir():
        pytest.skip(f"no corpus at {top}")
    return sorted(p for p in top.rglob("*") if p.suffix.lower() in exts
                  and p.read_bytes()[:4] == b"PERS")


@pytest.fixture
def counted(monkeypatch):
    """How often the compiled payload decoder took a block, and declined one."""
    calls = {"taken": 0, "declined": 0}
    orig = FastLayout.decode_within

    def spy(self, root, r, s):
        got = orig(self, root, r, s)
        calls["taken" if got is not None else "declined"] += 1
        return got

    monkeypatch.setattr(FastLayout, "decode_within", spy)
    return calls


# ----------------------------------------------------------------------------
# tables


def test_payload_tables_are_core_tables_with_text_name_slots():
    shape = LAYOUT.record("TS::Shape v8")
    tables = {f.name: f.storage for f in shape.fields if isinstance(f.storage, Table)}
    assert {"nodes", "names", "objects", "transforms"} <= set(tables)
    assert tables["names"].table_dtype == np.dtype([("name", "V24")])
    assert isinstance(tables["names"].columns["name"], SlotColumn)
    assert tables["nodes"].columns == {}           # numeric columns keep the core form
    doc = potsherd.read(shape_bytes(8), format="dts")
    names = doc.root["payload"]["names"]
    readable = doc.to_json("readable")["root"]["payload"]["names"]["name"]
    wire = doc.to_json("wire")["root"]["payload"]["names"]["name"]
    raw = [bytes(x) for x in names["name"]]
    assert readable[0] == "bounds" and readable[2] == "run"
    # a slot with bytes after its NUL keeps them: text plus the tail in hex
    assert readable[1] == {"text": "root", "tail": raw[1][5:].hex()} and raw[1][5:].strip(b"\0")
    assert wire == [bytes(x).hex() for x in names["name"]]      # negative control: hex in wire
    assert readable != wire


# ----------------------------------------------------------------------------
# the compiled decoder


def test_corpus_payloads_all_take_the_compiled_decoder(counted):
    files = corpus_files("dts", (".dts", ".dml"))
    for p in files:
        data = p.read_bytes()
        fast = registry.decode(data, path=str(p))
        with fastpath.reference_only():
            ref = registry.decode(data, path=str(p))
        assert fast.encode() == data
        assert json.dumps(fast.to_json("wire")) == json.dumps(ref.to_json("wire")), p.name
        assert fast.warnings == ref.warnings
    assert counted["taken"] >= len(files) and counted["declined"] == 0


def test_a_damaged_payload_falls_back_with_the_reference_error(counted):
    data = bytearray(shape_bytes(8))
    struct.pack_into("<i", data, 8 + 2 + 10 + 4, 1000)   # nNodes: more nodes than bytes
    with pytest.raises(FormatError) as fast:
        potsherd.read(bytes(data), format="dts")
    assert counted["declined"] >= 1                       # the compiled decoder stepped aside
    with fastpath.reference_only(), pytest.raises(FormatError) as ref:
        potsherd.read(bytes(data), format="dts")
    assert (type(fast.value), fast.value.offset, fast.value.path, str(fast.value)) == \
        (type(ref.value), ref.value.offset, ref.value.path, str(ref.value))
    assert fast.value.path == "block.payload.nodes"


def _minimal_shape(inner: bytes) -> bytes:
    counts = [0] * 8 + [1, 0, 0]               # one mesh
    return pers("TS::Shape", 8, P("<11i", *counts) + bytes(40) + P("<2i", 0, -1) + inner + P("<i", 0))


def test_nested_blocks_failing_deep_inside_cost_no_more_than_depth_squared(counted):
    """A broken innermost mesh under many shapes: each level's compiled attempt
    must not re-run the reference below it (that doubled the work per level)."""
    inner = mesh_bytes(3)
    inner = inner[:-6] + inner[-6:-2]  # cut the mesh short inside its own size word
    inner = inner[:4] + P("<I", len(inner) - 8) + inner[8:]
    depth = 24
    data = inner
    for _ in range(depth):
        data = _minimal_shape(data)
    t = time.process_time()
    with pytest.raises(FormatError) as fast:
        potsherd.read(data, format="dts")
    assert time.process_time() - t < 5
    assert counted["taken"] + counted["declined"] <= (depth + 1) * (depth + 2) // 2
    with fastpath.reference_only(), pytest.raises(FormatError) as ref:
        potsherd.read(data, format="dts")
    assert (fast.value.offset, fast.value.path) == (ref.value.offset, ref.value.path)
    assert fast.value.path.startswith("block.payload.meshes[0].payload.meshes[0]")


# ----------------------------------------------------------------------------
# where fields are declared


def _line(place: str) -> str:
    path, line = place.rsplit(":", 1)
    assert path.startswith("potsherd/formats/darkstar/"), place
    text = (PKG / path[len("potsherd/"):]).read_text("utf-8").splitlines()
    return text[int(line) - 1]


def test_fields_name_the_structures_line_that_declares_them():
    shape = LAYOUT.record("TS::Shape v8")
    by = {f.name: f for f in shape.fields}
    assert _line(by["nodes"].defined_at).strip().startswith('"Node"')
    assert _line(by["nNodes"].defined_at).strip().startswith('"Header"')
    assert _line(by["meshes"].defined_at).strip().startswith('{"field": "meshes"')
    node_cols = {f.name: f.defined_at for f in by["nodes"].storage.item.fields}
    assert _line(node_cols["fParent"]).strip().startswith('"Node"')
    geo = {f.name: f for f in LAYOUT.record("ITRLighting v6").fields}
    assert geo["states"].defined_at.startswith("potsherd/formats/darkstar/itr_structures.json:")
    assert _line(geo["states"].defined_at).strip().startswith('"State"')
    # version 2 declares its own Header (10 counts) on another line than v8's
    v2 = {f.name: f for f in LAYOUT.record("TS::Shape v2").fields}
    assert v2["nNodes"].defined_at != by["nNodes"].defined_at
    report = list(describe.field_report(LAYOUT, "TS::Shape v8", "objects[2].fMeshIndex"))
    assert report[0].split()[-1] == by["objects"].defined_at
    assert _line(report[1].split()[-1]).strip().startswith('"Object"')


def test_an_error_names_the_declaring_line():
    data = bytearray(shape_bytes(8))
    struct.pack_into("<i", data, 8 + 2 + 10 + 4, 1000)
    with pytest.raises(FormatError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert _line(ei.value.defined_at).strip().startswith('"Node"')
    assert ei.value.path == "block.payload.nodes"


# ----------------------------------------------------------------------------
# JSON envelope


def _one_per_format() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for family in ("dts", "darkstar-world"):
        top = CORPUS / family
        if not top.is_dir():
            continue
        for p in sorted(top.rglob("*")):
            if not p.is_file() or p.suffix == ".txt":
                continue
            try:
                doc = registry.decode(p.read_bytes(), path=str(p))
            except FormatError:
                continue
            out.setdefault(doc.format, p)
    if not out:
        pytest.skip("no Darkstar corpus")
    return out


def test_every_darkstar_codec_keeps_params_meta_and_trailing_through_json(monkeypatch):
    files = _one_per_format()
    assert {"dts", "dml", "dig", "dil", "dis", "pbmp"} <= set(files)
    for fmt, p in files.items():
        doc = registry.decode(p.read_bytes(), path=str(p))
        for form in ("wire", "readable"):
            j = json.loads(json.dumps(doc.to_json(form)))
            j.update(params={"probe": 7}, meta={"note": "kept"}, trailing="beef")
            back = registry.from_json(j)
            assert back.params == {"probe": 7} and back.meta == {"note": "kept"}, fmt
            assert back.encode() == p.read_bytes() + b"\xbe\xef", fmt
            bad = dict(j, trailing="zz")           # negative controls: refused, not dropped
            with pytest.raises(JsonFormatError) as ei:
                registry.from_json(bad)
            assert ei.value.path == "$.trailing", fmt
            with pytest.raises(JsonFormatError) as ei:
                registry.from_json(dict(j, meta=[1]))
            assert ei.value.path == "$.meta", fmt
    # they all read the envelope through the one parser
    seen = []

    def spy(self, obj):
        seen.append(self.name)
        raise JsonFormatError("spy", path="$.spy")

    monkeypatch.setattr(registry.Codec, "parse_envelope", spy)
    for fmt, p in files.items():
        doc = registry.decode(p.read_bytes(), path=str(p))
        with pytest.raises(JsonFormatError, match="spy"):
            registry.from_json(doc.to_json("wire"))
    assert sorted(seen) == sorted(files)


# ----------------------------------------------------------------------------
# companion files within the caller's limits


@pytest.fixture
def tree(tmp_path):
    game = tmp_path / "game.vol"
    game.mkdir()
    for name, data in we.interior_files():
        (game / name).write_bytes(data)
    return game


def test_interior_companions_are_read_within_the_interiors_limits(tree):
    from potsherd.export.gltf import document_scene
    sizes = {p.name: p.stat().st_size for p in tree.iterdir()}
    assert sizes["cube.dis"] < 200 < sizes["cube-0.dig"] < 1000 < sizes["world.ppl"]
    loose = document_scene(potsherd.read(tree / "cube.dis"), {})     # control: all found
    assert any(m.base_color_texture is not None for m in loose.materials)
    tight = DEFAULT_LIMITS.replace(max_input=200)
    with pytest.raises(FormatError, match="geometry files"):
        document_scene(potsherd.read(tree / "cube.dis", limits=tight), {})
    mid = DEFAULT_LIMITS.replace(max_input=1000)        # geometry fits, the palette does not
    scene = document_scene(potsherd.read(tree / "cube.dis", limits=mid), {})
    # the palette is skipped (said), so the bitmaps are drawn with the neutral grey ramp
    assert {i.extras["palette"] for i in scene.images} == {"grey ramp"}
    assert any("exceeds the limit of 1000" in w for w in scene.warnings), scene.warnings


def test_layout_command_finds_a_field_from_an_errors_path(capsys):
    from potsherd.cli import main
    data = bytearray(shape_bytes(8))
    struct.pack_into("<i", data, 8 + 2 + 10 + 4, 1000)
    with pytest.raises(FormatError) as ei:
        potsherd.read(bytes(data), format="dts")
    assert main(["layout", "dts", "--field", ei.value.path + "[3].fParent"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "TS::Shape v8"
    assert out[1].split()[0] == "nodes" and out[1].split()[-1] == ei.value.defined_at
    assert out[2].split()[0] == "fParent" and _line(out[2].split()[-1]).strip().startswith('"Node"')
    # a record named in the path, and a mesh inside a shape's block
    assert main(["layout", "dts", "--field", "TS::Shape v7.objects.fMeshIndex"]) == 0
    v7 = capsys.readouterr().out.splitlines()
    assert v7[0] == "TS::Shape v7" and v7[2].split()[-1] != out[2].split()[-1]
    v7_object = {f.name: f for f in LAYOUT.record("TS::Shape v7").fields}["objects"]
    assert v7[2].split()[-1] == v7_object.defined_at          # v7's own Object line
    assert main(["layout", "dts", "--field", "block.payload.meshes[0].payload.verts.x"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("TS::CelAnimMesh v")
    assert main(["layout", "dts", "--field", "block.payload.nope"]) != 0      # negative control
