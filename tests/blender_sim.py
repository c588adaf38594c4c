"""What Blender 3.4's glTF import + export (default settings) does to a scene,
done in Python so the importers' ``--like`` rules are tested without Blender
(the Blender tiers run the real thing)."""
from __future__ import annotations

import copy
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from potsherd.scene import quat_from_axis_angle
from potsherd.scene.ops import sample_channel, sample_rotation_per_component
from potsherd.scene.reorient import reorient_joints
from potsherd.scene.xform import quat_to_matrix


def blender_like(scene, seed: int = 1):
    """``scene`` as Blender's glTF import + export (default settings) gives it back."""
    rng = np.random.default_rng(seed)
    s = copy.deepcopy(scene)
    for x in [*s.nodes, *s.animations, *s.meshes, *s.materials, *s.skins]:
        x.extras = {}
    for n in s.nodes:
        n.children.sort(key=lambda c: s.nodes[c].name)
    joints = sorted({j for sk in s.skins for j in sk.joints})
    turns = {j: quat_to_matrix(quat_from_axis_angle(rng.normal(size=3), rng.uniform(0.3, 2.0)))
             for j in joints}
    if turns:                                  # (a skeleton without a skin stays empties)
        assert reorient_joints(s, turns)
    for a in s.animations:
        end = math.floor(a.duration * 24 + 1e-6) / 24
        times = np.arange(round(end * 24) + 1) / 24
        for ch in a.channels:
            if ch.path == "rotation" and ch.interpolation == "LINEAR" and len(ch.times) > 1:
                vals = sample_rotation_per_component(ch, times)
            else:
                vals = sample_channel(ch, times)
            ch.times, ch.values = times.astype(np.float32), vals.astype(np.float32)
            ch.interpolation = "LINEAR"
    # an animated object (not a bone) is written at its pose of the current frame
    for a in s.animations[:1]:
        for ch in a.channels:
            if ch.node not in joints and ch.path in ("translation", "rotation", "scale"):
                setattr(s.nodes[ch.node], ch.path, np.asarray(ch.values[0], np.float64))
    # vertices re-split and renumbered; triangles and their corners keep their order
    for m in s.meshes:
        for p in m.primitives:
            if p.indices is None:
                continue
            perm = rng.permutation(len(p.positions))
            inv = np.empty_like(perm)
            inv[perm] = np.arange(len(perm))
            for name in ("positions", "normals", "colors", "joints", "weights"):
                if getattr(p, name) is not None:
                    setattr(p, name, np.asarray(getattr(p, name))[perm])
            p.uvs = [np.asarray(u)[perm] for u in p.uvs]
            for t in p.targets:
                t.positions = None if t.positions is None else np.asarray(t.positions)[perm]
                t.normals = None if t.normals is None else np.asarray(t.normals)[perm]
            p.indices = inv[np.asarray(p.indices, np.int64)].astype(np.uint32)
    # a skeleton gets an armature object above it (an unskinned scene gets none)
    roots = [r for r in s.roots if r in joints or any(j in _subtree(s, r) for j in joints)]
    if roots:
        arm = s.add_node(name="Armature")
        s.nodes[arm].children = roots
        s.roots = [r for r in s.roots if r not in roots]
    return s


def _subtree(s, n):
    out, stack = set(), [n]
    while stack:
        v = stack.pop()
        out.add(v)
        stack.extend(s.nodes[v].children)
    return out


def renumber_nodes(scene, order: list) -> None:
    """Put the node list in ``order`` (old indices), every reference following, as
    Blender writes its nodes in an order of its own; skins lose their skeleton."""
    new = {old: k for k, old in enumerate(order)}
    scene.nodes = [scene.nodes[i] for i in order]
    for n in scene.nodes:
        n.children = [new[c] for c in n.children]
    scene.roots = [new[r] for r in scene.roots]
    for sk in scene.skins:
        sk.joints = [new[j] for j in sk.joints]
        sk.skeleton = None
    for a in scene.animations:
        for c in a.channels:
            c.node = new[c.node]


BLENDER = shutil.which("blender")

BLENDER_SCRIPT = """
import numpy; numpy.bool = bool
import bpy, sys
args = sys.argv[sys.argv.index('--') + 1:]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=args[0])
bpy.ops.export_scene.gltf(filepath=args[1], export_format='GLB')
print("DONE")
"""


#: a rig authored in Blender as a modder would: three connected bones up z, a
#: subdivided cylinder whose vertices blend two bones each, and a 24 frame/s
#: action (Blender's default rate) turning the upper two bones in a zigzag
AUTHOR_RIG_SCRIPT = """
import numpy; numpy.bool = bool
import bpy, sys, math
out = sys.argv[sys.argv.index('--') + 1]
bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene
scene.render.fps = 24
arm_data = bpy.data.armatures.new("Rig")
arm = bpy.data.objects.new("Rig", arm_data)
scene.collection.objects.link(arm)
bpy.context.view_layer.objects.active = arm
bpy.ops.object.mode_set(mode='EDIT')
prev = None
for i, name in enumerate(["root", "mid", "tip"]):
    b = arm_data.edit_bones.new(name)
    b.head = (0, 0, i)
    b.tail = (0, 0, i + 1)
    if prev:
        b.parent = prev
        b.use_connect = True
    prev = b
bpy.ops.object.mode_set(mode='OBJECT')
bpy.ops.mesh.primitive_cylinder_add(vertices=8, radius=0.3, depth=3, location=(0, 0, 1.5))
body = bpy.context.active_object
body.name = "body"
mod = body.modifiers.new("sub", 'SUBSURF')
mod.levels = 2
mod.subdivision_type = 'SIMPLE'
bpy.ops.object.modifier_apply(modifier="sub")
groups = {n: body.vertex_groups.new(name=n) for n in ("root", "mid", "tip")}
for v in body.data.vertices:
    z = v.co.z + 1.5
    for k, n in enumerate(("root", "mid", "tip")):
        w = max(0.0, 1.0 - abs(z - (k + 0.5)))
        if w > 0:
            groups[n].add([v.index], w, 'REPLACE')
body.parent = arm
body.modifiers.new("arm", 'ARMATURE').object = arm
bpy.context.view_layer.objects.active = arm
bpy.ops.object.mode_set(mode='POSE')
arm.animation_data_create()
arm.animation_data.action = bpy.data.actions.new("wave")
for f, ang in ((1, 0), (7, 35), (13, -25), (19, 40), (25, 0)):
    for name, k in (("mid", 1.0), ("tip", -0.7)):
        pb = arm.pose.bones[name]
        pb.rotation_mode = 'XYZ'
        pb.rotation_euler = (math.radians(ang * k), 0, math.radians(ang * 0.3))
        pb.keyframe_insert("rotation_euler", frame=f)
bpy.ops.object.mode_set(mode='OBJECT')
scene.frame_start, scene.frame_end = 1, 25
bpy.ops.export_scene.gltf(filepath=out, export_format='GLB')
print("DONE")
"""


def run_blender(src: Path, dst: Path, tmp_path: Path) -> None:
    """Blender opens ``src`` and saves it as ``dst`` (default export settings)."""
    run_blender_script(BLENDER_SCRIPT, [src, dst], tmp_path)


def run_blender_script(text: str, args: list, tmp_path: Path) -> None:
    """Run a Blender Python script (``args`` after ``--``); it prints DONE when done."""
    script = tmp_path / "blender_script.py"
    script.write_text(text)
    # Debian's Blender finds its numpy only with the system Python first on PATH
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([BLENDER, "-b", "--python", str(script), "--", *map(str, args)],
                         capture_output=True, text=True, timeout=600, env=env)
    if "No module named 'numpy'" in run.stdout + run.stderr:
        pytest.skip("Blender's Python has no numpy")
    assert "DONE" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
