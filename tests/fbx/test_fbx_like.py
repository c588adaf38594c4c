"""glTF into FBX with ``like``: a scene that draws and plays what the original
exports to gives back the original's bytes (an unedited round trip, through
Blender too); an edited one is written anew, and says so."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from blender_sim import blender_like, run_blender
from corpus_paths import CORPUS_ROOT

import potsherd
from potsherd.export.gltf import write_glb
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import triangle_sets

CORPUS = CORPUS_ROOT / "fbx"
FILES = sorted(p for p in CORPUS.glob("*") if p.suffix.lower() == ".fbx") if CORPUS.is_dir() \
    else []


def exported(path: Path, tmp_path: Path):
    doc = potsherd.read(path)
    try:
        scene = doc.codec.to_scene(doc, source_path=str(path))
    except potsherd.FormatError:
        return doc, None
    write_glb(scene, tmp_path / "x.glb")
    return doc, read_gltf(tmp_path / "x.glb")


def imported(scene, like):
    return potsherd.registry.get_codec(like.format).from_scene(scene, like=like,
                                                               out_name="back.fbx")


@pytest.mark.skipif(not FILES, reason="shared fbx corpus not present")
def test_every_corpus_fbx_comes_back_from_its_glb(tmp_path):
    exact, skipped = [], []
    for path in FILES:
        doc, scene = exported(path, tmp_path)
        if scene is None:
            skipped.append(path.name)
            continue
        out = imported(scene, doc)
        assert out.encode() == path.read_bytes(), (path.name, scene.warnings)
        exact.append(path.name)
    assert len(exact) >= len(FILES) - 2 and len(exact) > 20, skipped


@pytest.mark.skipif(not FILES, reason="shared fbx corpus not present")
@pytest.mark.parametrize("name", ["ufbx__maya_cube_7400_binary.fbx",
                                  "ufbx__maya_kenney_character_7700_binary.fbx",
                                  "ufbx__max2009_cube_anim_5800_ascii.fbx", "assimp__spider.fbx"])
def test_blender_like_changes_still_give_the_original(name, tmp_path):
    path = CORPUS / name
    doc, scene = exported(path, tmp_path)
    assert imported(blender_like(scene), doc).encode() == path.read_bytes()


@pytest.mark.skipif(not FILES, reason="shared fbx corpus not present")
def test_an_edited_mesh_is_written_anew_with_the_edit(tmp_path):
    path = CORPUS / "ufbx__maya_cube_7400_binary.fbx"
    doc, scene = exported(path, tmp_path)
    scene = blender_like(scene)
    p = scene.meshes[0].primitives[0]
    p.positions = p.positions.copy()
    top = p.positions[:, 1] > p.positions[:, 1].mean()
    p.positions[top, 1] += np.float32(0.5)                  # pull the top face up
    want = np.concatenate([s.positions[:, 1] for s in triangle_sets(scene)]).max()
    out = imported(scene, doc)
    data = out.encode()
    assert data != path.read_bytes()
    assert any("differs from the original (triangles" in w for w in scene.warnings)
    back = potsherd.read(data, format=out.format)
    back_scene = back.codec.to_scene(back)
    ys = np.concatenate([s.positions[:, 1] for s in triangle_sets(back_scene)])
    src = np.concatenate([s.positions[:, 1] for s in triangle_sets(exported(path, tmp_path)[1])])
    assert np.isclose(ys.max(), want, atol=1e-6) and want > src.max() + 1e-3


BLENDER = shutil.which("blender")


@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
@pytest.mark.skipif(not FILES, reason="shared fbx corpus not present")
@pytest.mark.parametrize("name", ["ufbx__maya_cube_7400_binary.fbx",
                                  "ufbx__maya_kenney_character_7700_binary.fbx"])
def test_real_blender_round_trip_gives_the_original(name, tmp_path):
    path = CORPUS / name
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    run_blender(tmp_path / "x.glb", tmp_path / "b.glb", tmp_path)
    assert imported(read_gltf(tmp_path / "b.glb"), doc).encode() == path.read_bytes()
