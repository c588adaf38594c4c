"""Darkstar import from real .glb files (read by ``potsherd.scene.gltf_read``):
every corpus shape exported (skinned and node forms) and imported with
``like`` gives back its bytes; glTF files written by Blender and assimp import
into shapes that export back with the same triangles, box and clips."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.export import render as rd
from potsherd.export.gltf import write_glb
from potsherd.formats.darkstar import DTS
from potsherd.formats.darkstar.scene import to_scene
from corpus_paths import CORPUS_ROOT

gltf_read = pytest.importorskip("potsherd.scene.gltf_read")

SHARED = CORPUS_ROOT
DTS_CORPUS = SHARED / "dts"
GLB_CORPUS = SHARED / "glb"


def _shapes():
    return [p for p in sorted(DTS_CORPUS.rglob("*")) if p.suffix.lower() == ".dts" and "non_pers" not in p.parts]


@pytest.mark.skipif(not DTS_CORPUS.is_dir(), reason="shared Darkstar corpus not present")
def test_exported_glb_imported_with_like_is_the_original(tmp_path):
    glb = tmp_path / "shape.glb"
    for path in _shapes():
        doc = potsherd.read(path)
        original = path.read_bytes()
        for skin in (None, False):
            write_glb(to_scene(doc, skin=skin), glb)
            scene = gltf_read.read_gltf(glb)
            out = DTS.from_scene(scene, like=doc)
            assert out.codec.encode(out) == original, (path, skin)


@pytest.mark.skipif(not DTS_CORPUS.is_dir(), reason="shared Darkstar corpus not present")
def test_edited_glb_is_not_passed_off_as_the_original(tmp_path):
    """Negative control of the test above: one translation key changed in the
    file gives a rebuilt shape, not the original bytes."""
    path = DTS_CORPUS / "tribesrebirth" / "entities_vol" / "larmor.dts"
    doc = potsherd.read(path)
    write_glb(to_scene(doc), tmp_path / "a.glb")
    scene = gltf_read.read_gltf(tmp_path / "a.glb")
    run = next(a for a in scene.animations if a.name == "run")
    ch = next(c for c in run.channels if c.path == "translation")
    ch.values = np.array(ch.values, np.float32)
    ch.values[-1] += 0.25
    out = DTS.from_scene(scene, like=doc)
    data = out.codec.encode(out)
    assert data != path.read_bytes()
    back = potsherd.read(data, format="dts")
    assert back.codec.encode(back) == data
    assert any("differs from the original (sequence 'run'" in w for w in scene.warnings)
    # what the default export leaves out (3 other detail levels) comes from the original;
    # the unchanged meshes keep their original blocks (only the bounds box is made anew)
    p, o = back.root["payload"], doc.root["payload"]
    assert (len(p["nodes"]), len(p["objects"]), len(p["details"]), len(p["sequences"])) == (108, 51, 4, 12)
    assert sorted(p["details"]["fSize"].tolist()) == sorted(o["details"]["fSize"].tolist())

    def block(m):
        one = potsherd.Document("dts", m, {}, b"", [])
        return one.codec.encode(one)
    originals = {block(m) for m in o["meshes"]}
    assert sum(block(m) in originals for m in p["meshes"]) == 50
    assert len(doc.trailing) == 148252 and back.trailing == doc.trailing     # the stale tail


def _corners(path: Path, anim=None, t: float = 0.0) -> np.ndarray:
    tris = rd.scene_triangles(rd.Gltf(str(path)), anim, t)
    return np.concatenate([x["pos"].reshape(-1, 3) for x in tris]) if tris else np.zeros((0, 3))


GLBS = sorted(GLB_CORPUS.glob("*.glb")) if GLB_CORPUS.is_dir() else []


@pytest.mark.skipif(not GLBS, reason="shared glb corpus not present")
@pytest.mark.parametrize("glb", GLBS, ids=[p.stem for p in GLBS])
def test_blender_and_assimp_glb_import_and_export_back(glb: Path, tmp_path):
    scene = gltf_read.read_gltf(glb)
    n_anims = len(scene.animations)
    doc = DTS.from_scene(scene)
    data = doc.codec.encode(doc)
    shape = potsherd.read(data, format="dts")
    assert shape.codec.encode(shape) == data
    out = tmp_path / "back.glb"
    back = to_scene(shape)
    write_glb(back, out)
    a, b = _corners(glb), _corners(out)
    assert len(a) == len(b) > 0
    extent = (a.max(axis=0) - a.min(axis=0)).max()
    dev = max(np.abs(a.min(axis=0) - b.min(axis=0)).max(), np.abs(a.max(axis=0) - b.max(axis=0)).max())
    assert dev <= 0.02 * extent, dev / extent
    assert len(back.animations) == n_anims


@pytest.mark.skipif(not GLBS or not DTS_CORPUS.is_dir(), reason="shared corpora not present")
def test_imported_shapes_export_glb_the_validator_accepts(tmp_path):
    from potsherd.export.validate import validate_many, validator_available
    if not validator_available():
        pytest.skip("Khronos glTF validator not installed")
    outs = []
    sources = [gltf_read.read_gltf(p) for p in GLBS]
    sources += [to_scene(potsherd.read(p)) for p in _shapes()]
    for i, scene in enumerate(sources):
        doc = DTS.from_scene(scene)
        shape = potsherd.read(doc.codec.encode(doc), format="dts")
        out = tmp_path / f"{i}.glb"
        write_glb(to_scene(shape), out)
        outs.append(out)
    assert len(outs) == len(GLBS) + 28
    reports = validate_many(outs)
    assert [(r["errors"], r["warnings"]) for r in reports] == [(0, 0)] * len(outs)
