"""The rest pose moved onto the bind pose, keeping every clip's poses.

A glTF skeleton has two poses: the nodes' own transforms (the rest pose a
viewer shows without animation) and each skin's bind pose, the inverse of a
joint's inverse bind matrix.  Most exporters write one pose for both.  FBX
converters often do not: Kenney's Maya character rests with its arms down and
binds in a T pose, so ``world(rest) · inverseBind`` is far from identity.

A format that binds its skins at the skeleton's rest pose (Knight Online binds
at frame 0 of the joint timeline) then deforms a vertex shared by two joints
wrongly once the clip moves them apart: the mesh baked at rest is skinned back
with the rest pose's inverse, not the bind pose's.  :func:`rest_at_bind` makes
the two poses one: each skin joint rests at its bind pose, every other node
keeps its local transform, and each animation gets a one-key channel holding
the old rest value wherever it left a changed joint's channel to the rest, so
every clip plays the poses it played before.
"""
from __future__ import annotations

import numpy as np

from .model import Channel, Scene
from .ops import local_matrix, parents_first, rest_trs, world_matrices
from .xform import decompose_matrix, inverse_affine, quat_normalize, trs_to_matrix

#: rest and bind agree when their matrices differ by at most this (rotation and
#: scale; translation as a share of the skeleton's size)
TOLERANCE = 1e-5
#: a bind transform relative to its parent shears when TRS misses it by more than
#: this (inverse bind matrices are float32: their noise alone reaches 3e-6)
SHEAR_TOLERANCE = 1e-4
_PATHS = ("translation", "rotation", "scale")


def bind_worlds(scene: Scene) -> tuple[dict, list[str]]:
    """({joint node: its world matrix at bind}, notes): the first skin binding a
    joint decides; a later skin binding it elsewhere is named in the notes, and a
    joint whose inverse bind matrix is singular is left out."""
    out: dict = {}
    notes: list[str] = []
    for si, sk in enumerate(scene.skins):
        if sk.inverse_bind_matrices is None:
            continue
        ibm = np.asarray(sk.inverse_bind_matrices, np.float64).reshape(-1, 4, 4)
        inv, flat = inverse_affine(ibm[:len(sk.joints)])
        for k, j in enumerate(sk.joints[:len(ibm)]):
            if flat[k]:
                continue
            if j in out:
                if not np.allclose(out[j], inv[k], atol=TOLERANCE * max(1.0, np.abs(inv[k]).max())):
                    notes.append(f"skin {si} binds joint {scene.nodes[j].name!r} in another pose "
                                 "than an earlier skin; the first skin's bind pose is kept")
                continue
            out[j] = inv[k]
    return out, notes


def _main_root(bind: dict, parents: list) -> int:
    """The bound joint above the most bound joints (the hips of a skeleton
    whose IK controls are other roots), the shallowest of a tie."""
    below = dict.fromkeys(bind, 0)
    depth = {}
    for j in bind:
        node, d = parents[j], 0
        while node is not None:
            if node in below:
                below[node] += 1
            node, d = parents[node], d + 1
        depth[j] = d
    return min(bind, key=lambda j: (-below[j], depth[j], j))


def _close(a: np.ndarray, b: np.ndarray, size: float) -> bool:
    """Same pose: the linear parts within TOLERANCE of their scale (a skeleton
    scaled 0.01 by its FBX units is held to the same share), translations within
    TOLERANCE of the skeleton's size."""
    scale = max(float(np.abs(b[:3, :3]).max()), 1e-12)
    return bool(np.abs(a[:3, :3] - b[:3, :3]).max() <= TOLERANCE * scale
                and np.abs(a[:3, 3] - b[:3, 3]).max() <= TOLERANCE * size)


def rest_at_bind(scene: Scene) -> list[int]:
    """Move the rest pose onto the bind pose (module docstring), in place.
    Returns the nodes whose rest transform changed (none when rest and bind
    already agree, when the scene has no animation to keep, or when a joint's
    bind transform relative to its parent shears, which TRS cannot hold: then
    the scene is left as it was, with a note in ``scene.warnings``)."""
    if not scene.animations:
        return []
    bind, notes = bind_worlds(scene)
    if not bind:
        return []
    world = world_matrices(scene)
    joints = np.array(sorted(bind), np.int64)
    size = max(float(np.ptp(world[joints, :3, 3], axis=0).max()), 1e-6)
    parents = scene.parents()
    # the bind pose taken as a whole to where the skeleton's top joint rests: one
    # transform of every joint and vertex of the bind pose changes no skinning,
    # and a bind pose under an axis change (FBX's Z up) then stands as the rest does
    top = _main_root(bind, parents)
    lift = world[top] @ inverse_affine(bind[top])[0]
    bind = {j: lift @ m for j, m in bind.items()}
    if all(_close(world[j], bind[j], size) for j in bind):
        return []
    new_world = world.copy()
    changed: dict = {}
    for n in parents_first(scene):
        p = parents[n]
        parent_world = np.eye(4) if p is None else new_world[p]
        if n not in bind:
            new_world[n] = parent_world @ local_matrix(scene.nodes[n])
            continue
        new_world[n] = bind[n]
        local = inverse_affine(parent_world)[0] @ bind[n]
        if _close(local, local_matrix(scene.nodes[n]), size):
            continue
        t, r, s = decompose_matrix(local)
        if not np.allclose(trs_to_matrix(t, r, s), local,
                           atol=SHEAR_TOLERANCE * max(1.0, float(np.abs(local).max()))):
            scene.warnings.append(
                f"skeleton: joint {scene.nodes[n].name!r} is bound in a pose its parent's "
                "frame shears (non-uniform scale under a rotation); the rest pose is left as "
                "it is, so vertices shared by joints may drift when animated")
            return []
        changed[n] = {"translation": t, "rotation": quat_normalize(r), "scale": s}
    if not changed:
        return []
    scene.warnings.extend(notes)
    rests = {n: dict(zip(_PATHS, rest_trs(scene.nodes[n]))) for n in changed}
    for a in scene.animations:
        have = {(c.node, c.path) for c in a.channels}
        for n, new in changed.items():
            old = rests[n]
            for path in _PATHS:
                if (n, path) in have or np.allclose(old[path], new[path], atol=1e-9):
                    continue
                a.channels.append(Channel(node=n, path=path, times=np.zeros(1, np.float32),
                                          values=np.asarray(old[path], np.float32)[None],
                                          interpolation="LINEAR"))
    for n, new in changed.items():
        nd = scene.nodes[n]
        nd.matrix = None
        nd.translation, nd.rotation, nd.scale = new["translation"], new["rotation"], new["scale"]
    scene.warnings.append(
        f"skeleton: {len(changed)} joint(s) rest in another pose than the skin binds them in; "
        "the rest pose is the bind pose now (the clips play as before)")
    return sorted(changed)
