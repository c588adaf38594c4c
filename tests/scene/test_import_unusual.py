"""Every importer on valid-but-unusual scenes: each ``from_scene`` either makes
documents that encode, decode back to the same bytes, export again and hold no
NaN/inf, or refuses with one of potsherd's own (user-facing) errors.

The scenes are small and odd: degenerate, zero-area, duplicate and unused
vertices, primitives without indices, lines and points, huge and tiny
coordinates, NaN/inf, zero/negative/non-uniform scales, empty meshes, no or many
materials, empty/duplicate/unicode/long names, skins whose joints are out of
node order or in separate subtrees, one-joint skins, single-key, zero-length and
negative-time clips, channels on nodes without meshes, morph targets, vertex
colours, two UV sets, several glTF scenes and roots.  Most go through a .glb
(what ``potsherd convert X.glb`` sees), the others reach the importer directly
(what ``convert_via_scene`` and Python users hand it).  60 examples per codec,
fixed (derandomized); ``POTSHERD_UNUSUAL_EXAMPLES=1000`` for a longer hunt.
Findings are pinned as small cases in test_import_regressions.py."""
from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from potsherd.core.errors import FormatError
from potsherd.export.gltf import glb_bytes, scene_to_gltf
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, MorphTarget, Primitive,
                            Scene, Skin, TextureRef, quat_from_axis_angle)
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import world_matrices

from export_scenes import checker_png
from import_check import TARGETS, check_import

NAMES = ["", "a", "a", "名前 ü", "ε" * 40, "x" * 300, "a b", "a/b", "..", "CON", " lead"]
SCALES = [1.0, 1.0, 1e-30, 1e-6, 1e6, 1e30, 1e36]   # (past ~1e37 see test_import_regressions)


# ---- scenes ------------------------------------------------------------------------------

def _geometry(draw, rng, scale):
    """(positions, indices or None, mode) of one odd primitive."""
    kind = draw(st.sampled_from(["random", "random", "degenerate", "zero_area", "duplicate",
                                 "unused", "no_indices", "one_triangle", "lines", "points"]))
    nv = draw(st.integers(3, 24))
    pos = rng.normal(size=(nv, 3)) * scale
    idx = rng.integers(0, nv, 3 * draw(st.integers(1, 12)))
    mode = 4
    if kind == "degenerate":                       # every triangle repeats a corner
        t = idx.reshape(-1, 3)
        t[:, 1] = t[:, 0]
    elif kind == "zero_area":                      # every vertex on one line
        pos = np.outer(rng.random(nv), [1.0, 2.0, 3.0]) * scale
    elif kind == "duplicate":
        pos = np.concatenate([pos, pos])
        idx = np.concatenate([idx, idx[::-1] + nv])
    elif kind == "unused":                         # only the first three are drawn
        idx = np.array([0, 1, 2])
    elif kind == "no_indices":
        pos = pos[: nv - nv % 3]
        idx = None
    elif kind == "one_triangle":
        pos, idx = pos[:3], np.array([0, 1, 2])
    elif kind == "lines":
        mode, idx = 1, idx[: len(idx) - len(idx) % 2]
    elif kind == "points":
        mode, idx = 0, None
    return pos.astype(np.float32), (None if idx is None else idx.astype(np.uint32)), mode


@st.composite
def scenes(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    name = lambda: draw(st.sampled_from(NAMES))  # noqa: E731
    scale = draw(st.sampled_from(SCALES))
    s = Scene(name=name())
    if draw(st.booleans()):
        s.add_image(Image(name=name(), data=checker_png(2, 2)))
    nmat = draw(st.sampled_from([0, 1, 2, 40]))
    for _ in range(nmat):
        tex = TextureRef(0, texcoord=draw(st.integers(0, 1))) \
            if s.images and draw(st.booleans()) else None
        s.add_material(Material(name=name(), base_color=tuple(rng.random(4)),
                                base_color_texture=tex,
                                alpha_mode=draw(st.sampled_from(["OPAQUE", "MASK", "BLEND"])),
                                double_sided=draw(st.booleans())))
    for _ in range(draw(st.sampled_from([1, 1, 2, 3, 0]))):
        prims = []
        ntargets = draw(st.sampled_from([0, 0, 1, 2]))
        for _ in range(draw(st.sampled_from([1, 1, 2, 0]))):       # 0: an empty mesh
            pos, idx, mode = _geometry(draw, rng, scale)
            nv = len(pos)
            p = Primitive(positions=pos, indices=idx, mode=mode)
            normals = draw(st.sampled_from(["none", "unit", "zero", "random"]))
            if normals == "unit":
                n = rng.normal(size=(nv, 3)) + 1e-3
                p.normals = (n / np.linalg.norm(n, axis=1, keepdims=True)).astype(np.float32)
            elif normals == "zero":
                p.normals = np.zeros((nv, 3), np.float32)
            elif normals == "random":
                p.normals = rng.normal(size=(nv, 3)).astype(np.float32)
            p.uvs = [(rng.random((nv, 2)) * 3 - 1).astype(np.float32)
                     for _ in range(draw(st.integers(0, 2)))]
            colors = draw(st.sampled_from(["none", "u8", "f3"]))
            if colors == "u8":
                p.colors = rng.integers(0, 256, (nv, 4)).astype(np.uint8)
            elif colors == "f3":
                p.colors = rng.random((nv, 3)).astype(np.float32)
            if nmat and draw(st.booleans()):
                p.material = draw(st.integers(0, nmat - 1))
            p.targets = [MorphTarget(name(), positions=(rng.normal(size=(nv, 3)) * scale)
                                     .astype(np.float32)) for _ in range(ntargets)]
            prims.append(p)
        s.add_mesh(Mesh(name=name(), primitives=prims,
                        weights=[0.25] * ntargets if ntargets else None))
    nnodes = draw(st.integers(1, 7))
    for ni in range(nnodes):
        parent = None if ni == 0 or draw(st.booleans()) else draw(st.integers(0, ni - 1))
        kw: dict = {}
        form = draw(st.sampled_from(["none", "trs", "zero_scale", "negative_scale",
                                     "flat_scale", "matrix"]))
        if form == "matrix":
            m = np.eye(4)
            m[:3, :3] = rng.normal(size=(3, 3))
            m[:3, 3] = rng.normal(size=3) * scale
            kw["matrix"] = m
        elif form != "none":
            kw["translation"] = rng.normal(size=3) * scale
            kw["rotation"] = quat_from_axis_angle(rng.normal(size=3) + 0.01, rng.random() * 3)
            kw["scale"] = {"trs": rng.random(3) + 0.5, "zero_scale": np.zeros(3),
                           "negative_scale": np.array([-1.0, 2.0, 0.5]),
                           "flat_scale": np.array([1.0, 0.0, 1.0])}[form]
        if s.meshes and (ni == 0 or draw(st.booleans())):
            kw["mesh"] = draw(st.integers(0, len(s.meshes) - 1))
        s.add_node(parent=parent, name=name(), **kw)
    if draw(st.booleans()):
        _add_skin(draw, rng, s, nnodes, scale)
    for _ in range(draw(st.integers(0, 2))):
        _add_animation(draw, rng, s, nnodes)
    return s


def _add_skin(draw, rng, s, nnodes, scale):
    """A skinned mesh on some of the nodes, listed in any order (one joint, joints
    in separate subtrees, the mesh's own node, nodes before their parents)."""
    joints = draw(st.lists(st.integers(0, nnodes - 1), min_size=1, max_size=nnodes,
                           unique=True))
    world = world_matrices(s)
    ibm = draw(st.sampled_from(["inverse", "identity", "none"]))
    if ibm == "inverse":
        ibms = np.stack([np.linalg.pinv(world[j]) for j in joints])
    elif ibm == "identity":
        ibms = np.tile(np.eye(4), (len(joints), 1, 1))
    else:
        ibms = None
    nv = draw(st.integers(3, 12))
    k = draw(st.sampled_from([1, 4, 8]))
    weights = rng.random((nv, k)).astype(np.float32)
    if draw(st.booleans()):
        weights[0] = 0.0                                   # an uninfluenced vertex
    p = Primitive(positions=(rng.normal(size=(nv, 3)) * scale).astype(np.float32),
                  indices=rng.integers(0, nv, 3 * draw(st.integers(1, 6))).astype(np.uint32),
                  joints=rng.integers(0, len(joints), (nv, k)).astype(np.uint16),
                  weights=weights, material=0 if s.materials else None)
    mesh = s.add_mesh(Mesh(name=draw(st.sampled_from(NAMES)), primitives=[p]))
    sk = s.add_skin(Skin(joints=joints, inverse_bind_matrices=ibms,
                         skeleton=draw(st.sampled_from([None, joints[0]])),
                         name=draw(st.sampled_from(NAMES))))
    where = draw(st.sampled_from(["root", "under_joint"]))
    s.add_node(name=draw(st.sampled_from(NAMES)), mesh=mesh, skin=sk,
               parent=joints[-1] if where == "under_joint" else None)


def _add_animation(draw, rng, s, nnodes):
    a = Animation(name=draw(st.sampled_from(NAMES)))
    for node in draw(st.lists(st.integers(0, len(s.nodes) - 1), max_size=4, unique=True)):
        n = s.nodes[node]
        if n.matrix is not None:
            continue                             # glTF animates TRS nodes only
        morphs = n.mesh is not None and s.meshes[n.mesh].weights
        path = draw(st.sampled_from(["translation", "rotation", "scale"]
                                    + (["weights"] if morphs else [])))
        interp = draw(st.sampled_from(["LINEAR", "STEP", "CUBICSPLINE"]))
        timing = draw(st.sampled_from(["single", "zero", "negative", "normal"]))
        k = 1 if timing in ("single", "zero") else draw(st.integers(2, 5))
        times = np.cumsum(rng.random(k) + 0.05)
        if timing == "zero":
            times = np.zeros(1)
        elif timing == "negative":
            times -= 2.0
        width = len(morphs) if path == "weights" else 4 if path == "rotation" else 3
        vals = rng.normal(size=(k * (3 if interp == "CUBICSPLINE" else 1), width))
        if path == "rotation":
            vals /= np.linalg.norm(vals, axis=1, keepdims=True)
        a.channels.append(Channel(node, path, times.astype(np.float32),
                                  vals.astype(np.float32), interp))
    s.add_animation(a)


# ---- how the scene reaches the importer ----------------------------------------------------

def via_glb(scene: Scene, how: str) -> Scene:
    """Write the scene as a .glb and read it back; ``nan`` and ``inf`` then put a
    non-finite value into the first POSITION or NORMAL accessor's bytes (as a
    tool that does not check would), ``scenes`` splits the roots over two glTF
    scenes (the second shown)."""
    try:
        gl, b = scene_to_gltf(scene, True)
    except FormatError:          # the writer refuses it (keys at negative times): as given
        return scene
    b = bytearray(b)
    if how in ("nan", "inf"):
        for m in gl.get("meshes", []):
            attrs = m["primitives"][0]["attributes"]
            key = "NORMAL" if "NORMAL" in attrs and how == "inf" else "POSITION"
            acc = gl["accessors"][attrs[key]]
            view = gl["bufferViews"][acc["bufferView"]]
            at = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
            b[at:at + 4] = struct.pack("<f", float(how))
            break
    if how == "scenes" and len(gl.get("scenes", [{}])[0].get("nodes", [])) > 1:
        roots = gl["scenes"][0]["nodes"]
        gl["scenes"] = [{"nodes": roots[:1]}, {"nodes": roots[1:], "name": "second"}]
        gl["scene"] = 1
    return read_gltf(glb_bytes(gl, bytes(b)))


def prepared(scene: Scene, how: str) -> Scene:
    """The scene as given, with a NaN vertex (``direct-nan``), or through a .glb."""
    if how == "direct":
        return scene
    if how == "direct-nan":
        for m in scene.meshes:
            for p in m.primitives:
                if len(p.positions):
                    p.positions = p.positions.copy()
                    p.positions[0, 0] = np.nan
                    return scene
        return scene
    return via_glb(scene, how)


HOWS = st.sampled_from(["glb", "glb", "direct", "direct", "nan", "inf", "scenes",
                        "direct-nan"])
PROFILE = settings(max_examples=int(os.environ.get("POTSHERD_UNUSUAL_EXAMPLES", "60")),
                   deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("target", TARGETS)
@PROFILE
@given(scene=scenes(), how=HOWS)
def test_unusual_scene_imports_or_refuses(target, scene, how):
    with tempfile.TemporaryDirectory() as tmp:
        check_import(target, prepared(scene, how), Path(tmp))
