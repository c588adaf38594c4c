"""Whether two scenes draw and play the same: the ``--like`` test of importers
whose format cannot be rebuilt from glTF alone.

An importer given the original exports it to a scene and asks
:func:`scene_difference` whether the imported scene shows the same thing; if
so, the original's bytes are the faithful answer.  The test is about what a
viewer shows, not how the file lays it out, so a glb that went through
Blender with its default settings still matches:

- triangles are compared per mesh node and material (by name), corner by
  corner in their order, at rest and posed at the imported clips' key times;
  vertex order, splitting and welding do not matter, nor do the node order,
  an identity armature object above the skeleton, or a joint whose frame was
  turned (the skin deforms the same);
- a clip resampled at another rate matches when its keys lie on the original's
  motion, interpolated as glTF does (slerp) or as Blender does (per component),
  and it ends at most one of its own key intervals early;
- materials by name, base colour and decoded texture pixels.
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from .model import Scene
from .ops import (node_rotation_per_component, sample_channel, sample_node_trs,
                  triangle_sets, world_matrices)
from .xform import trs_to_matrix

#: posed positions agree within this fraction of the model's size
POSITION_TOLERANCE = 1e-4
#: at most this many key times of each clip are posed and compared
POSES_PER_CLIP = 16


def _groups(scene: Scene, world: np.ndarray | None = None) -> dict:
    """{material name: [(positions, uv0) per mesh node]} of every drawn triangle,
    corners in order.  Nodes are not matched by name: Blender may name a
    skinned mesh's object after its mesh."""
    chunks: dict = {}
    for s in triangle_sets(scene, world=world):
        mat = scene.materials[s.material].name if s.material is not None and \
            0 <= s.material < len(scene.materials) else None
        uv = np.asarray(s.uvs[0], np.float64)[s.indices] if s.uvs else \
            np.zeros((len(s.indices), 2))
        pos = np.asarray(s.positions, np.float64)[s.indices]
        chunks.setdefault((mat, s.node), []).append((pos, uv))
    out: dict = {}
    for (mat, _), parts in chunks.items():
        out.setdefault(mat, []).append((np.concatenate([p for p, _ in parts]),
                                        np.concatenate([u for _, u in parts])))
    return out


def _nlerp_sample(scene: Scene, animation: Any, node: int, times: np.ndarray) -> tuple:
    t, r, s = sample_node_trs(scene, animation, node, times)
    per_component = node_rotation_per_component(animation, node, times)
    return t, r if per_component is None else per_component, s


def _worlds(scene: Scene, animation: Any, times: np.ndarray, nlerp: bool = False) -> np.ndarray:
    """(T, N, 4, 4) world matrices at ``times``."""
    sample = _nlerp_sample if nlerp else sample_node_trs
    local = np.empty((len(times), len(scene.nodes), 4, 4))
    for n in range(len(scene.nodes)):
        nd = scene.nodes[n]
        if nd.matrix is not None and not any(c.node == n for c in animation.channels):
            local[:, n] = np.asarray(nd.matrix, np.float64)
            continue
        local[:, n] = trs_to_matrix(*sample(scene, animation, n, times))
    return np.stack([world_matrices(scene, local[k]) for k in range(len(times))])


def paired_by_name(a: list, b: list) -> list | None:
    """Items of ``a`` paired with those of ``b`` (clips, say): by name when both
    lists name the same set once each (Blender may reorder them), else in
    order; None when the counts differ."""
    if len(a) != len(b):
        return None
    na, nb = [x.name for x in a], [x.name for x in b]
    if len(set(na)) == len(na) and set(na) == set(nb):
        by = {x.name: x for x in b}
        return [(x, by[x.name]) for x in a]
    return list(zip(a, b))


def _pixels(scene: Scene, material: Any) -> Any:
    ref = material.base_color_texture if material is not None else None
    if ref is None or not 0 <= ref.image < len(scene.images):
        return None
    data = scene.images[ref.image].data
    if data is None:
        return scene.images[ref.image].uri
    try:
        from PIL import Image
        with Image.open(io.BytesIO(data)) as im:
            return np.asarray(im.convert("RGBA"))
    except Exception:            # (undecodable: compared as bytes)
        return bytes(data)


def _same_pixels(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b))
    return (a is None and b is None) or (not isinstance(a, np.ndarray) and a == b)


def _material_difference(new: Scene, old: Scene) -> str | None:
    by = {m.name: m for m in old.materials}
    for m in new.materials:
        o = by.get(m.name)
        if o is None:
            continue                      # (an unused material: the triangles decide)
        if m.alpha_mode != o.alpha_mode or not np.allclose(m.base_color, o.base_color,
                                                           atol=1e-4):
            return f"material {m.name!r}"
        if not _same_pixels(_pixels(new, m), _pixels(old, o)):
            return f"material {m.name!r} texture"
    return None


def _groups_differ(a: dict, b: dict, tol: float, *, positions: bool = True,
                   uv: bool = True) -> str | None:
    """Each node's triangles of each material in ``a`` has its counterpart in ``b``."""
    if a.keys() != b.keys():
        return "materials of the meshes"
    for mat, chunks in a.items():
        free = list(b[mat])
        if len(free) != len(chunks):
            return f"meshes of material {mat!r}"
        for pa, ua in chunks:
            k = next((k for k, (pb, ub) in enumerate(free) if pa.shape == pb.shape
                      and (not positions or np.allclose(pa, pb, rtol=0, atol=tol))
                      and (not uv or np.allclose(ua, ub, rtol=0, atol=1e-5))), None)
            if k is None:
                return f"triangles of material {mat!r}"
            free.pop(k)
    return None


def _pose_times(animation: Any) -> np.ndarray:
    t = np.unique(np.concatenate([np.asarray(c.times, np.float64) for c in animation.channels]
                                 or [np.zeros(1)]))
    if len(t) > POSES_PER_CLIP:
        t = t[np.unique(np.linspace(0, len(t) - 1, POSES_PER_CLIP).round().astype(int))]
    return t


def scene_difference(new: Scene, old: Scene) -> str | None:
    """None when ``new`` draws and plays what ``old`` does (see the module
    docstring), else what differs first, in a few words."""
    rest_new, rest_old = _groups(new), _groups(old)
    pts = np.concatenate([p for chunks in rest_old.values() for p, _ in chunks]
                         or [np.zeros((1, 3))])
    tol = POSITION_TOLERANCE * max(float(np.ptp(pts, axis=0).max()), 1e-6)
    # an animated scene's rest pose is not what a viewer plays (and Blender writes
    # the pose of its current frame there): the clips' poses below decide positions
    animated = bool(new.animations or old.animations)
    why = _groups_differ(rest_new, rest_old, tol, positions=not animated, uv=True)
    if why:
        return why
    why = _material_difference(new, old)
    if why:
        return why
    pairs = paired_by_name(new.animations, old.animations)
    if pairs is None:
        return "animations"
    # joints by name: their world positions (a turned joint frame does not move them)
    joints_new = {new.nodes[j].name: j for sk in new.skins for j in sk.joints}
    shared = [(joints_new[old.nodes[j].name], j) for j in dict.fromkeys(
        j for sk in old.skins for j in sk.joints) if old.nodes[j].name in joints_new]
    for a, b in pairs:
        times = _pose_times(a)
        step = float(np.diff(times).max()) if len(times) > 1 else 0.0
        if not -1e-4 <= b.duration - a.duration <= step + 1e-4:
            return f"animation {a.name!r} length"
        wa = _worlds(new, a, times)
        ia, ib = np.array([x for x, _ in shared], int), np.array([y for _, y in shared], int)
        reasons = []
        for nlerp in (False, True):
            wb = _worlds(old, b, times, nlerp)
            if shared and not np.allclose(wa[:, ia, :3, 3], wb[:, ib, :3, 3], rtol=0, atol=tol):
                reasons.append(f"animation {a.name!r} joint positions")
                continue
            for k in range(len(times)):
                why = _groups_differ(_groups(new, wa[k]), _groups(old, wb[k]), tol, uv=False)
                if why:
                    reasons.append(f"animation {a.name!r} at {times[k]:.3f} s: {why}")
                    break
            else:
                break
        else:
            return reasons[0]
        why = _weights_difference(new, a, old, b, times)
        if why:
            return why
    return None


def _weights_difference(new: Scene, a: Any, old: Scene, b: Any, times: np.ndarray) -> str | None:
    """Morph weight keys, node by node (name), sampled at ``times``."""
    def tracks(scene: Scene, animation: Any) -> dict:
        return {scene.nodes[c.node].name: c for c in animation.channels
                if c.path == "weights" and 0 <= c.node < len(scene.nodes) and len(c.times)}
    ta, tb = tracks(new, a), tracks(old, b)
    if ta.keys() != tb.keys():
        return f"animation {a.name!r} morph weights"
    for name, ch in ta.items():
        va, vb = sample_channel(ch, times), sample_channel(tb[name], times)
        if va.shape != vb.shape or not np.allclose(va, vb, atol=1e-4):
            return f"animation {a.name!r} morph weights of {name!r}"
    return None
