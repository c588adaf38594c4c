"""Skinned export of Darkstar shapes (the default for multi-node animated
shapes): one skeleton of the shape's nodes, rigid weights, the same posed
geometry as the node-animated form (``skin=0``), unique names, declared
options; Blender (where installed) shows one armature with one action per
sequence."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.export import render as rd
from potsherd.export.gltf import write_glb
from potsherd.formats.darkstar import DTS
from potsherd.formats.darkstar.scene import to_scene
from potsherd.formats.darkstar.skinning import world_matrices

from dts_fixtures import envelope, shape_doc
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "dts"
LARMOR = CORPUS / "tribesrebirth" / "entities_vol" / "larmor.dts"


def _doc(root: dict) -> potsherd.Document:
    return potsherd.read(potsherd.write(potsherd.from_json(envelope(root))), format="dts")


def _animated_v8() -> dict:
    root = shape_doc(8)
    p = root["payload"]
    p["subSequences"] = {"fSequenceIndex": [0, 0], "fnKeyframes": [2, 2], "fFirstKeyframe": [0, 0]}
    p["objects"]["fnSubSequences"] = [1]
    p["objects"]["fFirstSubSequence"] = [1]
    return root


def test_animated_multi_node_shape_is_skinned_by_default():
    doc = _doc(_animated_v8())
    s = to_scene(doc)
    rigid = to_scene(doc, skin=False)
    assert s.extras["skin"] is True and rigid.extras["skin"] is False and rigid.skins == []
    (skin,) = s.skins
    wrap = next(i for i, n in enumerate(s.nodes) if n.name == "z-up")
    # every node but the axis wrapper is a joint: the 2 shape nodes and the object node
    # the skeleton root is the top joint, not the wrapper (Blender would turn the
    # rest of unkeyed channels by the wrapper's axis change twice)
    assert skin.joints == [0, 1, 2] and skin.skeleton == 0 and s.parents()[0] == wrap
    worlds = world_matrices(s)
    np.testing.assert_allclose(skin.inverse_bind_matrices,
                               np.stack([np.linalg.inv(worlds[j]) for j in skin.joints]))
    # the object node keeps its place in the tree but no longer draws
    assert s.nodes[2].mesh is None
    holder = next(i for i, n in enumerate(s.nodes) if n.mesh is not None)
    assert holder in s.roots and s.nodes[holder].skin == 0
    (prim,) = s.meshes[s.nodes[holder].mesh].primitives
    # rigid weights, all on the object joint (index 2)
    assert prim.joints[:, 0].tolist() == [2, 2, 2] and prim.weights[:, 0].tolist() == [1.0] * 3
    assert not prim.weights[:, 1:].any()
    # positions are the rigid mesh posed by the object's world matrix
    rworld = world_matrices(rigid)
    robj = next(i for i, n in enumerate(rigid.nodes) if n.mesh is not None)
    (rprim,) = rigid.meshes[rigid.nodes[robj].mesh].primitives
    expect = rprim.positions @ rworld[robj][:3, :3].T + rworld[robj][:3, 3]
    np.testing.assert_allclose(prim.positions, expect, atol=1e-5)
    assert np.abs(prim.positions - rprim.positions).max() > 1.0      # control: it did move
    # morph targets (mesh frames) stay with the object's own mesh; the weight track follows it
    assert len(prim.targets) == 1
    (anim,) = s.animations
    w = next(c for c in anim.channels if c.path == "weights")
    assert w.node == holder


def test_static_or_single_node_shapes_stay_rigid():
    root = shape_doc(8)
    root["payload"]["subSequences"] = {"fSequenceIndex": [0, 0], "fnKeyframes": [0, 2],
                                       "fFirstKeyframe": [0, 0]}
    s = to_scene(_doc(root))          # no node keys: nothing a skeleton would move
    assert s.skins == [] and s.extras["skin"] is False
    forced = to_scene(_doc(root), skin=True)
    assert len(forced.skins) == 1


def test_export_options_are_declared_and_typed():
    assert [o.name for o in DTS.export_options] == ["detail", "bounds", "skin", "palette",
                                                    "data_root"]
    doc = _doc(_animated_v8())
    assert DTS.to_scene(doc, skin="0").skins == []       # command-line text is coerced
    assert len(DTS.to_scene(doc, skin="1").skins) == 1
    with pytest.raises(potsherd.FormatError, match="skin"):
        DTS.to_scene(doc, skin="maybe")


def test_sequence_without_keys_is_still_an_animation():
    root = _animated_v8()
    p = root["payload"]
    p["sequences"] = {k: v * 2 for k, v in p["sequences"].items()}
    p["sequences"]["fName"] = [2, 0]
    s = to_scene(_doc(root))
    assert [a.name for a in s.animations] == ["run", "bounds"]
    empty = s.animations[1]
    assert empty.extras["empty"] is True and len(empty.channels) == 1
    assert empty.channels[0].interpolation == "STEP"


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared Darkstar corpus not present")


def _shapes():
    return [p for p in sorted(CORPUS.rglob("*")) if p.suffix.lower() == ".dts" and "non_pers" not in p.parts]


@needs_corpus
def test_corpus_names_unique_and_one_animation_per_sequence():
    skinned = 0
    for path in _shapes():
        doc = potsherd.read(path)
        s = doc.codec.to_scene(doc)
        for items in (s.nodes, s.meshes, s.animations):
            names = [x.name for x in items]
            assert len(set(names)) == len(names), path
        assert len(s.animations) == len(doc.root["payload"]["sequences"]), path
        skinned += bool(s.skins)
        if s.skins:
            assert len(s.skins) == 1 and all(n.mesh is None or n.skin == 0 for n in s.nodes), path
    assert skinned == 9        # the multi-node animated shapes of the corpus


@needs_corpus
def test_skinned_larmor_poses_exactly_like_the_rigid_tree(tmp_path):
    doc = potsherd.read(LARMOR)
    a, b = tmp_path / "skin.glb", tmp_path / "rigid.glb"
    write_glb(to_scene(doc), a)
    write_glb(to_scene(doc, skin=False), b)
    ga, gb = rd.Gltf(str(a)), rd.Gltf(str(b))
    names = [x["name"] for x in ga.json["animations"]]
    run = names.index("run")

    def corners(g, anim, t):
        pos = np.concatenate([tr["pos"].reshape(-1, 3) for tr in rd.scene_triangles(g, anim, t)])
        return pos[np.lexsort(pos.T[::-1])]

    for t in (0.0, 0.21, 0.5):
        pa, pb = corners(ga, run, t), corners(gb, run, t)
        assert pa.shape == pb.shape == (350 * 3, 3)
        np.testing.assert_allclose(pa, pb, atol=1e-4)
    # control: the pose does change over the clip
    assert np.abs(corners(ga, run, 0.0) - corners(ga, run, 0.3)).max() > 0.1


BLENDER = shutil.which("blender")
PROBE = r"""
import sys, json
import numpy; numpy.bool = bool
import bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=sys.argv[-1])
arm = [o for o in bpy.data.objects if o.type == "ARMATURE"]
print("RESULT" + json.dumps({
    "armatures": len(arm), "bones": [len(a.data.bones) for a in arm],
    "actions": len(bpy.data.actions),
    "bone_actions": sorted(a.name for a in bpy.data.actions
                           if any(fc.data_path.startswith("pose.bones") for fc in a.fcurves))}))
"""


def _blender_import(glb: Path, tmp_path: Path) -> dict:
    """Blender's own glTF importer on ``glb`` (numpy of this interpreter lent to
    Blender's Python when the system one lacks it)."""
    import numpy
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    lend = tmp_path / "lend"
    lend.mkdir(exist_ok=True)
    np_dir = Path(numpy.__file__).parent
    for part in (np_dir, np_dir.parent / "numpy.libs"):
        if part.exists() and not (lend / part.name).exists():
            (lend / part.name).symlink_to(part)
    env = {**os.environ, "PYTHONPATH": str(lend)}
    out = subprocess.run([BLENDER, "-b", "--factory-startup", "--python", str(script), "--", str(glb)],
                         capture_output=True, text=True, timeout=300, env=env)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    return json.loads(line[len("RESULT"):])


@needs_corpus
@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
def test_blender_shows_one_armature_with_one_action_per_sequence(tmp_path):
    doc = potsherd.read(LARMOR)
    s = to_scene(doc)
    glb = tmp_path / "larmor.glb"
    write_glb(s, glb)
    got = _blender_import(glb, tmp_path)
    joints = len(s.skins[0].joints)
    assert got["armatures"] == 1 and got["bones"] == [joints]
    assert len(got["bone_actions"]) == 12 == len(doc.root["payload"]["sequences"])
    assert {a.rsplit("_", 1)[0] for a in got["bone_actions"]} == {a.name for a in s.animations}
    # control: the node-animated form gives Blender no armature and one action per node per clip
    rigid = tmp_path / "rigid.glb"
    write_glb(to_scene(doc, skin=False), rigid)
    got = _blender_import(rigid, tmp_path)
    assert got["armatures"] == 0 and got["actions"] > 100
