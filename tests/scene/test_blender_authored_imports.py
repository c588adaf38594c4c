"""Scenes made in Blender itself (Debian's Blender 3.4, its glTF exporter with
default settings) imported into the game formats: the faults a sweep of such
scenes found stay fixed with the real exporter's output, not only with the
synthetic scenes of the family tests.  The oracle is potsherd's renderer
posing the same glb."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import potsherd
from blender_sim import BLENDER, run_blender_script
from potsherd.export import render as rd
from potsherd.importer import import_gltf
from potsherd.scene.ops import triangle_sets

pytestmark = pytest.mark.skipif(BLENDER is None, reason="Blender not installed")

SCENES = """
import numpy; numpy.bool = bool
import bpy, math, sys, os
out = sys.argv[sys.argv.index("--") + 1]

def reset():
    bpy.ops.wm.read_factory_settings(use_empty=True)

# a grid whose shape key bulges it 1 m up and back, keyed 0 -> 1 -> 0 (LINEAR)
reset()
bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=2)
g = bpy.context.object
g.shape_key_add(name="Basis")
k = g.shape_key_add(name="bulge")
for v in k.data:
    x, y, z = v.co
    v.co = (x, y, 1 - (x * x + y * y) / 2)
for f, w in ((1, 0.0), (15, 1.0), (30, 0.0)):
    k.value = w
    k.keyframe_insert("value", frame=f)
bpy.ops.export_scene.gltf(filepath=os.path.join(out, "bulge.glb"), export_format="GLB")

# an FBX-style rig (armature scaled 0.01, bones in centimetres) with a 1.2 m
# sword skinned whole to its hand
reset()
bpy.ops.object.armature_add(location=(0, 0, 0))
arm = bpy.context.object
bpy.ops.object.mode_set(mode="EDIT")
hips = arm.data.edit_bones[0]
hips.name, hips.head, hips.tail = "hips", (0, 0, 100), (0, 0, 120)
hand = arm.data.edit_bones.new("hand")
hand.head, hand.tail, hand.parent = (0, 0, 150), (40, 0, 150), hips
bpy.ops.object.mode_set(mode="OBJECT")
arm.scale = (0.01, 0.01, 0.01)
bpy.ops.mesh.primitive_cylinder_add(radius=0.05, depth=1.2, location=(0.8, 0, 1.5),
                                    rotation=(0, math.pi / 2, 0))
sword = bpy.context.object
sword.name = "sword"
group = sword.vertex_groups.new(name="hand")
group.add(list(range(len(sword.data.vertices))), 1.0, "REPLACE")
sword.parent = arm
sword.matrix_parent_inverse = arm.matrix_world.inverted()    # it keeps its 1.2 m
sword.modifiers.new("rig", "ARMATURE").object = arm
bpy.ops.export_scene.gltf(filepath=os.path.join(out, "sword.glb"), export_format="GLB")
print("DONE")
"""


@pytest.fixture(scope="module")
def blender_scenes(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("blender")
    run_blender_script(SCENES, [out], out)
    return out


def _heights(path: Path, times: tuple) -> list:
    """The highest point the renderer poses ``path`` at, per time."""
    g = rd.Gltf(str(path))
    return [max(float(t["pos"][..., 1].max()) for t in rd.scene_triangles(g, 0, x)) for x in times]


def test_a_blender_shape_key_animation_plays_in_a_dts(blender_scenes, tmp_path):
    """Blender writes shape-key motion as LINEAR weights, sampled per frame.
    The .dts bakes the blends into mesh frames, so its exported motion rises
    and falls with the glb's (it used to jump between the flat grid and the
    full bulge)."""
    src = blender_scenes / "bulge.glb"
    import_gltf(src, tmp_path / "bulge.dts")
    doc = potsherd.read(tmp_path / "bulge.dts")
    from potsherd.export.gltf import write_glb
    write_glb(doc.codec.to_scene(doc), tmp_path / "back.glb")
    times = (0.1, 0.25, 0.4, 0.58, 0.8, 1.0)
    want, got = _heights(src, times), _heights(tmp_path / "back.glb", times)
    assert max(want) > 0.9 and min(want) < 0.5                 # the glb does move
    # within one 24 frame/s step of the motion and the 255-step vertex precision
    assert np.allclose(got, want, atol=0.1), (got, want)


def test_a_sword_skinned_to_a_centimetre_rig_keeps_its_size(blender_scenes, tmp_path):
    """The plug holds the sword at the size the glb draws it (1.2 m long,
    0.1 m thick), not in the rig's scaled hand frame (it came out 120 m)."""
    src = blender_scenes / "sword.glb"
    drawn = np.concatenate([t["pos"].reshape(-1, 3)
                            for t in rd.scene_triangles(rd.Gltf(str(src)), None, 0.0)])
    want = sorted(np.ptp(drawn, axis=0))
    assert np.allclose(want, [0.1, 0.1, 1.2], atol=0.01)      # the scene is what it says
    import_gltf(src, tmp_path / "sword.n3cplug")
    doc = potsherd.read(tmp_path / "sword.n3pmesh")
    pts = np.concatenate([t.positions for t in triangle_sets(doc.codec.to_scene(doc))])
    assert np.allclose(sorted(np.ptp(pts, axis=0)), want, atol=0.01)
