"""The shape's transforms, keyframes and sub-sequences (import, encoding step).

Nodes' default transforms come first in the transform table, then the
keyframe transforms; a transform stored before is shared (the same stored
quaternion, float32 translation and, before v8, float32 scale), as the
Starsiege exporter shares them between keys and with the defaults.  The
stored quaternion is the conjugate of the glTF rotation (the engine applies it
to row vectors), packed as Quat16 the way the engine does (``trunc(q *
32767)``) in v7/v8.

Everything is gathered as arrays, in table order, and shared in one pass
(:func:`~potsherd.scene.geometry.weld` keeps first-appearance order, so the
indices are those a key-by-key lookup gives).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ....scene import decompose_matrix, quat_normalize
from ....scene.geometry import weld

QUAT16 = 32767.0
#: keyframe flag words stock shapes use on node and mesh-frame keys:
#: visible + affects frame (v8 u16; v3-v7 the same bits at 31..28)
KEY_FLAGS = {8: 0x9000, 7: 0x90000000}
VIS_BITS = {8: (0x8000, 0x4000), 7: (0x80000000, 0x40000000)}


def stored_quat(q_gltf: np.ndarray, version: int) -> np.ndarray:
    """glTF rotations (..., 4) as the shape stores them."""
    q = quat_normalize(q_gltf) * np.array([-1.0, -1.0, -1.0, 1.0])
    # the engine's packing: a C cast, truncation toward zero (stock files show it: their
    # Quat16 norms fall short of 32767 by 0.74 on average, as truncation predicts, 0 for rounding)
    return np.trunc(q * QUAT16).astype(np.int64) if version >= 7 else q.astype(np.float32)


@dataclass
class Keys:
    """The tables' contents: transforms (rotation as stored, translation and
    scale float64), each node's default transform, the keyframes (position,
    value, flag word), the sub-sequences ``(sequence, keys, first key)`` and
    each node's and object's sub-sequence indices."""
    rotation: np.ndarray
    translation: np.ndarray
    scale: np.ndarray
    default_tf: np.ndarray
    key_position: np.ndarray
    key_value: np.ndarray
    key_flags: np.ndarray
    subs: list = field(default_factory=list)
    node_subs: dict = field(default_factory=dict)
    obj_subs: dict = field(default_factory=dict)


def _cat(parts: list, dtype, width: int = 0) -> np.ndarray:
    if parts:
        return np.concatenate(parts).astype(dtype, copy=False)
    return np.zeros((0, width) if width else 0, dtype)


def transforms_and_keys(nodes: list, objects: list, seqs: list, node_src: dict, obj_src: dict,
                        prepend_root: bool, version: int, warnings: list) -> Keys:
    """Sub-sequences per node, then per object; keyframes in that order."""
    if nodes:
        tv_d, q_d, sv_d = decompose_matrix(np.stack([n.local for n in nodes]))
    else:
        tv_d, q_d, sv_d = np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 3))
    if version >= 8:
        big = np.abs(sv_d - 1).max(axis=1) > 1e-4 if len(sv_d) else np.zeros(0, bool)
        for i in np.flatnonzero(big).tolist():
            warnings.append(f"node {nodes[i].name!r}: scale {np.round(sv_d[i], 4).tolist()} "
                            "dropped (v8 transforms have none)")
    # the rotations stored in one call over all of them (row by row, the same values)
    q_parts, t_parts, s_parts = [np.asarray(q_d, np.float64).reshape(-1, 4)], [tv_d], [sv_d]
    pos_parts, val_parts, flag_parts = [], [], []
    subs: list = []
    node_subs: dict = {i: [] for i in range(len(nodes))}
    obj_subs: dict = {i: [] for i in range(len(objects))}
    flags = KEY_FLAGS[8 if version >= 8 else 7]
    vis_on, vis_affects = VIS_BITS[8 if version >= 8 else 7]
    n_keys = 0
    for i in range(len(nodes)):
        src = node_src.get(i, i)
        mi = src - 1 if prepend_root else src
        for s, seq in enumerate(seqs):
            k = seq.node_keys.get(mi)
            if k is None:
                continue
            times, q, tv, sv = k
            dur = seq.duration if seq.duration > 0 else 1.0
            pos_parts.append(np.asarray(times, np.float64) / dur)
            q_parts.append(np.asarray(q, np.float64).reshape(-1, 4))
            t_parts.append(np.asarray(tv, np.float64).reshape(-1, 3))
            s_parts.append(np.asarray(sv, np.float64).reshape(-1, 3))
            node_subs[i].append(len(subs))
            subs.append((s, len(times), n_keys))
            n_keys += len(times)
    node_key_count = n_keys
    for oi in range(len(objects)):
        for s, seq in enumerate(seqs):
            k = seq.object_keys.get(obj_src.get(oi, oi))
            if k is None:
                continue
            times, frame, visible = k
            dur = seq.duration if seq.duration > 0 else 1.0
            nk = len(times)
            pos_parts.append(np.asarray(times, np.float64) / dur)
            val_parts.append(np.asarray(frame, np.int64).reshape(-1) if frame is not None
                             else np.zeros(nk, np.int64))
            f = np.full(nk, flags, np.int64)
            if visible is not None:
                base = (flags & ~vis_on) | vis_affects
                f = np.where(np.asarray(visible, bool).reshape(-1), base | vis_on, base)
            flag_parts.append(f.astype(np.int64))
            obj_subs[oi].append(len(subs))
            subs.append((s, nk, n_keys))
            n_keys += nk
    q_all = stored_quat(np.concatenate(q_parts), version)
    t_all = np.concatenate(t_parts)
    s_all = np.concatenate(s_parts)
    by = [q_all, t_all.astype(np.float32)] + ([s_all.astype(np.float32)] if version < 8 else [])
    first, remap = weld(*by) if len(q_all) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    n_def = len(nodes)
    values = _cat([remap[n_def:]] + val_parts, np.int64)
    flag_words = _cat([np.full(node_key_count, flags, np.int64)] + flag_parts, np.int64)
    return Keys(q_all[first], t_all[first], s_all[first], remap[:n_def],
                _cat(pos_parts, np.float64), values, flag_words, subs, node_subs, obj_subs)
