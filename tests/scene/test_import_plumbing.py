"""``potsherd.import_gltf`` and ``potsherd convert IN.glb OUT.EXT`` with toy codecs
registered only for the test (so the plumbing is tested without any family)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from export_scenes import skinned_cube_scene, textured_quad_scene

import potsherd
from potsherd import registry
from potsherd.cli import main
from potsherd.core.errors import EncodeError, FormatError
from potsherd.document import Document
from potsherd.export.gltf import write_glb, write_gltf
from potsherd.importer import NoImportError, OptionError, SceneImportError, import_gltf
from potsherd.registry import Codec, Option


class ToyCodec(Codec):
    """A format holding a triangle count and a few numbers, as JSON text."""

    name = "toy"
    family = "toyfam"
    extensions = (".toy",)
    import_options = (Option("scale", float, "unit scale", 1.0),
                      Option("tag", str, "a label"), Option("split", bool, "companion file"))
    calls: list = []

    def decode(self, data, **params):
        return Document(self.name, json.loads(data))

    def encode(self, doc):
        if doc.root.get("fail"):
            raise EncodeError("toy cannot encode this")
        return json.dumps(doc.root, sort_keys=True).encode()

    def from_scene(self, scene, *, like=None, out_name="", out_dir="", **options):
        self.calls.append((out_name, options, like, out_dir))
        if options.get("tag") == "boom":
            raise KeyError("a bug")
        if options.get("tag") == "bad":
            return Document(self.name, {"fail": True})
        tris = sum(len(p.indices) // 3 for m in scene.meshes for p in m.primitives)
        scene.warnings.append("toy keeps only counts")
        root = {"tris": tris, "scale": options.get("scale", 1.0), "nodes": len(scene.nodes),
                "like": like.root if like is not None else None}
        if options.get("split"):
            return [(out_name, Document(self.name, root)),
                    ("parts/extra.toy", Document(self.name, {"companion": True}))]
        if options.get("tag") == "escape":
            return [(out_name, Document(self.name, root)), ("../x.toy", Document(self.name, {}))]
        return Document(self.name, root)


class ToyNoImport(Codec):
    name = "toyro"
    family = "toyfam"
    extensions = (".toyro",)


@pytest.fixture
def toy(monkeypatch):
    registry.codecs()
    monkeypatch.setitem(registry._CODECS, "toy", ToyCodec())
    monkeypatch.setitem(registry._CODECS, "toyro", ToyNoImport())
    ToyCodec.calls.clear()
    return ToyCodec


@pytest.fixture
def glb(tmp_path):
    path = tmp_path / "cube.glb"
    write_glb(skinned_cube_scene(), path)
    return path


def test_api_import(toy, glb, tmp_path):
    out = tmp_path / "o.toy"
    summary = potsherd.import_gltf(glb, out, options={"scale": "0.5", "tag": "x"})
    assert json.loads(out.read_text()) == {"tris": 24, "scale": 0.5, "nodes": 4, "like": None}
    assert summary["format"] == "toy" and summary["warnings"] == ["toy keeps only counts"]
    assert toy.calls[0][:2] == ("o.toy", {"scale": 0.5, "tag": "x"})   # typed as declared
    assert toy.calls[0][3] == str(out.parent)                       # the folder written to
    assert summary["files"] == [(str(out), out.stat().st_size)]


def test_api_like_and_format_and_gltf_source(toy, tmp_path):
    write_gltf(textured_quad_scene(), tmp_path / "q.gltf")
    orig = tmp_path / "orig.toy"
    orig.write_text('{"kept": 1}')
    import_gltf(tmp_path / "q.gltf", tmp_path / "noext", format="toy", like=orig)
    assert json.loads((tmp_path / "noext").read_text())["like"] == {"kept": 1}


def test_api_multi_file_and_refusals(toy, glb, tmp_path):
    out = tmp_path / "o.toy"
    s = import_gltf(glb, out, options={"split": "yes"})
    assert json.loads((tmp_path / "parts" / "extra.toy").read_text()) == {"companion": True}
    assert [os.path.basename(p) for p, _ in s["files"]] == ["o.toy", "extra.toy"]
    with pytest.raises(OptionError, match="unknown option 'nope'.*valid options: scale, split, tag"):
        import_gltf(glb, out, options={"nope": 1})
    with pytest.raises(OptionError, match="expected float"):
        import_gltf(glb, out, options={"scale": "big"})
    with pytest.raises(NoImportError, match="toyro cannot be made from glTF"):
        import_gltf(glb, tmp_path / "o.toyro")
    with pytest.raises(SceneImportError, match="KeyError"):
        import_gltf(glb, tmp_path / "bug.toy", options={"tag": "boom"})
    with pytest.raises(SceneImportError, match="outside"):
        import_gltf(glb, tmp_path / "esc.toy", options={"tag": "escape"})
    with pytest.raises(EncodeError):
        import_gltf(glb, tmp_path / "bad.toy", options={"tag": "bad"})
    assert not (tmp_path / "bad.toy").exists() and not (tmp_path / "esc.toy").exists()
    assert not (tmp_path.parent / "x.toy").exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]


def test_cli_convert_glb_to_toy(toy, glb, tmp_path, capsys):
    out = tmp_path / "c.toy"
    rc = main(["convert", str(glb), str(out), "--option", "scale=2", "--option", "tag=t"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert json.loads(out.read_text())["scale"] == 2.0
    assert "potsherd: warning: toy keeps only counts" in cap.err
    assert f"{out}: " in cap.out
    rc = main(["convert", str(glb), str(tmp_path / "d.bin"), "--to", "toy"])
    assert rc == 0 and (tmp_path / "d.bin").exists()


@pytest.mark.parametrize("argv_tail,rc,msg", [
    (["--option", "nope=1"], 2, "unknown option 'nope'"),
    (["--option", "scale"], 2, "expects name=value"),
    (["--option", "scale=x"], 2, "expected float"),
    (["--to", "nosuchformat"], 2, "no format for format 'nosuchformat'"),
])
def test_cli_usage_errors(toy, glb, tmp_path, capsys, argv_tail, rc, msg):
    assert main(["convert", str(glb), str(tmp_path / "e.toy")] + argv_tail) == rc
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "e.toy").exists()


def test_cli_data_errors(toy, glb, tmp_path, capsys):
    assert main(["convert", str(glb), str(tmp_path / "e.toyro")]) == 1
    assert "toyro cannot be made from glTF" in capsys.readouterr().err
    bad = tmp_path / "bad.glb"
    bad.write_bytes(glb.read_bytes()[:40])
    assert main(["convert", str(bad), str(tmp_path / "e.toy")]) == 1
    assert "glb.length" in capsys.readouterr().err


def test_export_direction_unchanged(toy, glb, tmp_path):
    """A glb to glb 'conversion' is not an import (control for the dispatch)."""
    rc = main(["convert", str(glb), str(tmp_path / "again.glb")])
    assert rc == 1            # glTF is not a potsherd input format for export
