"""glTF animations as TR4 keyframes: sampled at the game's 30 fps, rotations packed in
the engine's YXZ angle words, bounding boxes per frame, and the state machine (state
changes, commands) kept from the original wad when importing with ``like``."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....scene import decompose_matrix, quat_to_matrix, trs_to_matrix
from ....scene.xform import matrix_to_quat, quat_continuous, quat_normalize, quat_slerp
from ....scene.ops import local_matrix, parents_first, sample_nodes_trs
from .. import model
from .base import FPS, ImportRefused, MAX_GAME_FRAMES, MAX_SAMPLED_TRANSFORMS


_COMMAND_TYPES = {v: k for k, v in model.COMMAND_NAMES.items()}

#: a key of the glTF lies on the original's motion within this angle (each bone's
#: rotation; the finest TR step, 12 bits, is 0.088 degrees) ...
MOTION_DEGREES = 0.01
#: ... and this distance of the root offset (TR units)
MOTION_UNITS = 0.05

#: a keyframe's word count is a u8 (layouts/common.layout ``frame_size``): 9 words
#: of box and offset, then up to two per bone
MAX_FRAME_SIZE = 0xFF
MAX_FRAME_BONES = (MAX_FRAME_SIZE - 9) // 2
#: a bone whose shape moves this far off its rest shape (relative to its size) in an
#: animation is named in a warning
SHAPE_DRIFT = 1e-3


def _anim_base(mov: dict) -> int:
    a = mov.get("anim_index", 0)
    return int(a) if a is not None and int(a) >= 0 else 0


def euler_yxz(r: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices ``Ry·Rx·Rz`` to angles (x, y, z) in radians;
    at gimbal lock (x = +-90 degrees) z is 0."""
    sx = np.clip(-r[..., 1, 2], -1.0, 1.0)
    x = np.arcsin(sx)
    cx = np.sqrt(np.maximum(1 - sx * sx, 0))
    gimbal = cx < 1e-6
    y = np.where(gimbal, np.arctan2(np.sign(sx) * r[..., 0, 1], r[..., 0, 0]),
                 np.arctan2(r[..., 0, 2], r[..., 2, 2]))
    z = np.where(gimbal, 0.0, np.arctan2(r[..., 1, 0], r[..., 1, 1]))
    return np.stack([x, y, z], -1)


def rotation_words(angles: np.ndarray) -> list[list[int]]:
    """Per mesh the engine's rotation words: single-axis 12-bit when two of the
    three angles are 0 at 12 bits, else packed 10-bit (1024 = 360 degrees)."""
    fine = np.round(np.asarray(angles) * 4096 / (2 * math.pi)).astype(np.int64) % 4096
    coarse = np.round(np.asarray(angles) * 1024 / (2 * math.pi)).astype(np.int64) % 1024
    if not len(fine):
        return []
    # every mesh's three forms at once, then the one its non-zero fine angles choose
    nz = fine != 0
    axis = np.argmax(nz, axis=1)                    # the first non-zero one
    single = (0x4000 * (axis + 1)) | fine[np.arange(len(fine)), axis]
    p = (coarse[:, 0] << 20) | (coarse[:, 1] << 10) | coarse[:, 2]
    return [[0x4000] if k == 0 else [s] if k == 1 else [h, lo]     # (0: X only, 0)
            for k, s, h, lo in zip(nz.sum(1).tolist(), single.tolist(),
                                   ((p >> 16) & 0x3FFF).tolist(), (p & 0xFFFF).tolist())]


def mov_table(hx: dict) -> dict:
    """The moveable node's copy of the animation extras, by animation name."""
    rows = hx.get("tr4_animations")
    if not isinstance(rows, list):
        return {}
    return {r["name"]: {k: v for k, v in r.items() if k != "name"}
            for r in rows if isinstance(r, dict) and isinstance(r.get("name"), str)}


def _animations(scene: Any, bones: list, parents: list, meshes: list, to_tr: np.ndarray,
                post: np.ndarray, rate: float, mov: dict, like: Any,
                rate_given: bool = False, mov_extras: dict | None = None) -> tuple:
    base_anim = _anim_base(mov)
    kf_base = int(mov.get("keyframe_offset", 0) or 0)
    like_anims = model.records(like["animations"]) if like else []
    like_cmds, like_changes = _like_lists(like)
    n = len(bones)
    order = parents_first(scene)
    node_parents = scene.parents()
    mesh_points = [np.asarray(m["vertices"], np.float64) for m in meshes]
    anims, cmds, changes, words = [], [], [], []
    sc_index = None
    cmd_offset = None
    plan = []
    table = mov_table(mov_extras) if mov_extras else {}
    for ai, anim in enumerate(scene.animations):
        ex = anim.extras if isinstance(anim.extras, dict) else {}
        if not ex and anim.name in table:     # extras dropped by another tool
            ex = table[anim.name]
        la = like_anims[ai] if ai < len(like_anims) else None
        # keyframe spacing: the frame_rate option when given, else the carried one
        # (the timing is the glTF's, never the --like moveable's)
        carried_fd = ex.get("frame_duration")
        fd = int(carried_fd) if isinstance(carried_fd, int) and not rate_given else \
            max(1, round(FPS / rate))
        fd = max(1, min(fd, 255))
        count = ex.get("keyframe_count") if fd == carried_fd else None
        if not isinstance(count, int) or count < 0:
            duration = anim.duration if anim.channels else 0.0
            if not math.isfinite(duration) or duration * FPS > MAX_GAME_FRAMES:
                raise ImportRefused(f"animation {ai} ({anim.name!r}) lasts {duration:g} s: more "
                                    f"than the {MAX_GAME_FRAMES} game frames a TR animation "
                                    "can number")
            # the last keyframe at or past the end, so the clip ends in its last pose
            # (sampling holds it); potsherd's own clips end on a keyframe exactly
            count = int(math.ceil(duration * FPS / fd - 1e-3)) + 1 if anim.channels else 0
        if count * fd > MAX_GAME_FRAMES + fd:
            raise ImportRefused(f"animation {ai}: {count} keyframes are more than a TR "
                                "animation can number")
        if count * len(scene.nodes) > MAX_SAMPLED_TRANSFORMS:
            raise ImportRefused(f"animation {ai}: {count} keyframes of {len(scene.nodes)} nodes "
                                f"exceed the {MAX_SAMPLED_TRANSFORMS} transforms sampled at once")
        plan.append((anim, ex, la, fd, count))
    starts = []
    for anim, ex, la, fd, count in plan:
        starts.append(int(ex.get("frame_start", la["frame_start"] if la else 0)))
    kf_pos = kf_base
    for ai, (anim, ex, la, fd, count) in enumerate(plan):
        times = np.arange(count, dtype=np.float64) * fd / FPS
        frame_words: list[list[int]] = []
        like_frames = _like_keyframes(like, ai, count, n) if count else None

        def pose(at: np.ndarray) -> tuple:
            return _bone_frames(scene, anim, at, bones, parents, order, node_parents,
                                to_tr, post)
        if like_frames is not None and _on_original_motion(anim, bones, pose, like_frames, fd):
            frame_words = [[w & 0xFFFF for w in f] for f in like_frames[0]]   # unchanged
        elif count:
            drift: dict = {}
            fr, rel = _bone_frames(scene, anim, times, bones, parents, order, node_parents,
                                   to_tr, post, drift)
            worst = max(drift, key=drift.get, default=None)
            if worst is not None and drift[worst] > SHAPE_DRIFT:
                scene.warnings.append(
                    f"animation {anim.name!r}: bone {scene.nodes[bones[worst]].name!r} changes "
                    f"shape as it moves (by {drift[worst]:.0%} of its size: scale keys, or a "
                    "turn under a parent's non-uniform scale), which a rigid TR bone cannot "
                    "hold; apply the scale to the meshes before exporting (Blender: Ctrl+A)")
            angles = euler_yxz(rel)
            far = float(np.abs(fr[:, 0, :3, 3]).max())
            if far > 32767:              # (keyframe offsets are 16-bit words)
                raise ImportRefused(f"animation {ai} ({anim.name!r}) moves the root bone {far:g} "
                                    "units from the origin, beyond the TR4 range (+-32767); "
                                    "pass a larger unit_scale (metres per unit)")
            offsets = np.round(fr[:, 0, :3, 3]).astype(np.int64)
            boxes = _boxes(fr, mesh_points)
            carried = ex.get("bboxes")
            if isinstance(carried, list) and len(carried) == count:
                cb = np.asarray(carried, np.int64).reshape(count, 6)
                if np.abs(cb - boxes).max(initial=0) <= 32:
                    boxes = cb
            every_rot = rotation_words(angles.reshape(-1, 3))     # (frame by frame, bone by bone)
            for f in range(count):
                rot = every_rot[f * n:(f + 1) * n]
                words_f = [*boxes[f].tolist(), *offsets[f].tolist(), *(w for r in rot for w in r)]
                if like_frames is not None:
                    lw, lq, loff = like_frames
                    mine = quat_from_rel(rel[f])
                    if loff[f].tolist() == offsets[f].tolist() and \
                            np.all(np.abs((mine * lq[f]).sum(-1)) > 1 - 1e-9):
                        words_f = [w & 0xFFFF for w in lw[f]]   # unchanged: the original words
                frame_words.append(words_f)
        need = max((len(w) for w in frame_words), default=0)
        fsz = int(ex.get("frame_size", need))
        if fsz < need or (count and fsz < 9) or fsz > MAX_FRAME_SIZE:
            fsz = need
        if not count and "frame_size" not in ex:
            fsz = 9 + 2 * n
        if fsz > MAX_FRAME_SIZE:
            raise ImportRefused(
                f"animation {ai} ({anim.name!r}): a keyframe of {n} bones takes {fsz} words, "
                f"and a TR4 animation's frame size is a byte: at most {MAX_FRAME_SIZE} words "
                f"(9, then 2 per bone turning about several axes: {MAX_FRAME_BONES} such "
                "bones); a whole wad's export that lost its extras imports moveable by "
                "moveable with --like ORIGINAL")
        for w in frame_words:
            words.extend(v - 0x10000 if v >= 0x8000 else v for v in w + [0] * (fsz - len(w)))
        fs = starts[ai]
        fe = int(ex.get("frame_end", fs + max(count - 1, 0) * fd))
        src = ex.get("source_indices", {}) if isinstance(ex.get("source_indices"), dict) else {}
        a_cmds = _commands(ex, fs, la, like_cmds, ai)
        a_changes = _changes(ex, fs, la, like_changes, ai, base_anim, starts, src)
        if sc_index is None:
            sc_index = int(src.get("state_change_index", la["state_change_index"] if la else 0))
            cmd_offset = int(src.get("command_offset", la["command_offset"] if la else 0))
        next_rel = int(ex.get("next_anim", (la["next_anim"] - base_anim) if la else ai))
        next_frame = ex.get("next_frame")
        target_start = starts[next_rel] if 0 <= next_rel < len(starts) else 0
        next_frame = int(next_frame) + target_start if next_frame is not None else \
            (int(la["next_frame"]) if la else target_start)
        rec = {"keyframe_offset": kf_pos, "frame_duration": fd, "frame_size": fsz,
               "state_id": int(ex.get("state_id", la["state_id"] if la else 0)),
               **{k: _fixed(ex, k, la) for k in ("speed", "accel", "speed_lateral",
                                                 "accel_lateral")},
               "frame_start": fs, "frame_end": fe,
               "next_anim": (next_rel + base_anim) & 0xFFFF, "next_frame": next_frame & 0xFFFF,
               "state_change_count": len(a_changes),
               "state_change_index": int(src.get("state_change_index", sc_index)),
               "command_count": len(a_cmds),
               "command_offset": int(src.get("command_offset", cmd_offset))}
        sc_index = rec["state_change_index"] + len(a_changes)
        cmd_offset = rec["command_offset"] + len(model.command_stream(a_cmds))
        kf_pos += 2 * fsz * count
        anims.append(rec)
        cmds.extend(a_cmds)
        changes.extend(a_changes)
    return anims, cmds, changes, words


def _bone_frames(scene: Any, anim: Any, times: np.ndarray, bones: list, parents: list,
                 order: list, node_parents: list, to_tr: np.ndarray, post: np.ndarray,
                 drift: dict | None = None) -> tuple:
    """(frames (F, n, 4, 4), rotations relative to the parent bone (F, n, 3, 3)) of
    the bones at ``times``, in TR space.  ``drift``, when given, gets per bone
    how far its shape moves off its rest shape, relative to its size (the
    meshes hold the rest scale and shear; a TR bone only turns and moves)."""
    count, n = len(times), len(bones)
    rest = np.stack([local_matrix(nd) for nd in scene.nodes])
    local = np.repeat(rest[None], count, 0)
    animated = sorted({c.node for c in anim.channels if c.path != "weights"})
    if animated:            # (every node's channels sampled together, one matrix call)
        trs = sample_nodes_trs(scene, anim, animated, times)
        local[:, animated] = trs_to_matrix(*(np.stack([trs[n][k] for n in animated], 1)
                                             for k in range(3)))
    world = np.empty_like(local)
    world_rest = np.empty_like(rest)
    for i in order:
        p = node_parents[i]
        world[:, i] = local[:, i] if p is None else world[:, p] @ local[:, i]
        world_rest[i] = rest[i] if p is None else world_rest[p] @ rest[i]
    # every bone at once (the same per-matrix operations as bone by bone)
    have = [k for k, b in enumerate(bones) if b >= 0]
    nodes = [bones[k] for k in have]
    posed = to_tr @ world[:, nodes] @ post            # (F, bones with a node, 4, 4)
    if drift is not None and have:
        at_rest = to_tr @ world_rest[nodes] @ post
        # the shape the meshes hold (the rest scale and shear), turned as keyed
        stretch0 = np.swapaxes(quat_to_matrix(decompose_matrix(at_rest)[1])[..., :3, :3], -1, -2) \
            @ at_rest[..., :3, :3]
        turn = quat_to_matrix(decompose_matrix(posed)[1])[..., :3, :3]
        off = np.linalg.norm(posed[..., :3, :3] - turn @ stretch0, axis=(-2, -1)).max(
            axis=0, initial=0.0)
        for j, k in enumerate(have):
            drift[k] = float(off[j] / max(np.linalg.norm(at_rest[j, :3, :3]), 1e-12))
    fr = np.tile(np.eye(4), (count, n, 1, 1))
    if have:
        t_, r_, _ = decompose_matrix(posed)
        block = fr[:, have]
        block[..., :3, :3] = quat_to_matrix(r_)[..., :3, :3]
        block[..., :3, 3] = t_
        fr[:, have] = block
    rel = np.empty((count, n, 3, 3))
    for k in range(n):
        rel[:, k] = fr[:, k, :3, :3] if parents[k] < 0 else \
            np.swapaxes(fr[:, parents[k], :3, :3], -1, -2) @ fr[:, k, :3, :3]
    return fr, rel


def _on_original_motion(anim: Any, bones: list, pose: Any, like_frames: tuple,
                        fd: int) -> bool:
    """Whether every key of ``anim`` lies on the original animation's motion
    (``like_frames``: its words, rotations, root offsets): the bones' rotations
    and the root's offset at each key time of the glTF are the original's
    keyframes interpolated there, by slerp (glTF) or by per-component lerp of
    the hemisphere-continuous quaternions (Blender's F-curves), within
    ``MOTION_DEGREES`` and ``MOTION_UNITS``.  Keys at other times than the
    original's (Blender samples at 24 fps) are the same motion; the glTF may
    end up to one 24 fps frame before or after the original's last keyframe."""
    _, lq, loff = like_frames
    count = len(lq)
    nodes = {b for b in bones if b >= 0}
    keys = [np.asarray(c.times, np.float64) for c in anim.channels
            if c.node in nodes and c.path in ("translation", "rotation") and len(c.times)]
    times = np.unique(np.concatenate(keys)) if keys else np.zeros(1)
    end = (count - 1) * fd / FPS
    if times[0] < -1e-4 or abs(times[-1] - end) > 1.0 / 24.0 + 1e-4:
        return False
    fr, rel = pose(times)
    mine = matrix_to_quat(rel)
    q = np.stack([quat_continuous(lq[:, j]) for j in range(lq.shape[1])], 1)
    pos = np.clip(times * FPS / fd, 0, count - 1)
    k = np.minimum(np.floor(pos).astype(np.int64), max(count - 2, 0))
    s = (pos - k)[:, None]
    k1 = np.minimum(k + 1, count - 1)
    slerp = quat_slerp(q[k], q[k1], s)
    nlerp = quat_normalize((1 - s[..., None]) * q[k] + s[..., None] * q[k1])
    cos = math.cos(math.radians(MOTION_DEGREES) / 2)
    close = np.maximum(np.abs((mine * slerp).sum(-1)), np.abs((mine * nlerp).sum(-1)))
    offsets = (1 - s) * loff[k] + s * loff[k1]
    return bool((close >= cos).all()) and \
        bool(np.abs(fr[:, 0, :3, 3] - offsets).max() <= MOTION_UNITS)


def quat_from_rel(r: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations as (n, 4) quaternions of their quantised TR angles."""
    angles = euler_yxz(r)
    words = rotation_words(angles)
    out = np.zeros((len(words), 3))
    for k, w in enumerate(words):
        if len(w) == 2:
            p = (w[0] << 16) | w[1]
            out[k] = [((p >> 20) & 0x3FF) * 2 * math.pi / 1024, ((p >> 10) & 0x3FF) * 2 * math.pi
                      / 1024, (p & 0x3FF) * 2 * math.pi / 1024]
        else:
            out[k, (w[0] >> 14) - 1] = (w[0] & 0xFFF) * 2 * math.pi / 4096
    return model.quaternions_yxz(out)


def _like_keyframes(like: Any, ai: int, count: int, n: int) -> tuple | None:
    """The original animation's keyframe words (padding included), decoded
    rotations and offsets, when it has ``count`` keyframes of ``n`` meshes."""
    if not like or ai >= len(like["animations"]) or int(like["moveable"]["mesh_count"]) != n:
        return None
    anims = model.records(like["animations"])
    a = anims[ai]
    base = int(like["moveable"]["keyframe_offset"])
    total = 2 * len(like["keyframe_words"])
    start = int(a["keyframe_offset"]) - base
    end = (int(anims[ai + 1]["keyframe_offset"]) - base) if ai + 1 < len(anims) else total
    fsz = int(a["frame_size"])
    if start < 0 or start % 2 or model.keyframe_count(start, fsz, end) != count or not count:
        return None
    words = np.asarray(like["keyframe_words"], np.int16)[start // 2:]
    try:
        kf = model.decode_keyframes(words, fsz, count, n)
    except FormatError:
        return None
    lw = words[:count * fsz].reshape(count, fsz).astype(np.int64).tolist()
    return lw, model.quaternions_yxz(kf["rotation"]), kf["offset"].astype(np.int64)


def _boxes(frames: np.ndarray, points: list) -> np.ndarray:
    """(F, 6) min/max x, y, z of the posed meshes, rounded outward."""
    count = frames.shape[0]
    lo = np.full((count, 3), np.inf)
    hi = np.full((count, 3), -np.inf)
    for k, p in enumerate(points):
        if not len(p):
            continue
        # one coordinate at a time over (frame, vertex): the einsum over all three
        # at once was most of the import's animation time
        pt = np.ascontiguousarray(np.asarray(p, np.float64).reshape(-1, 3).T)
        m = frames[:, k]
        for i in range(3):
            c = (m[:, i, 0, None] * pt[0] + m[:, i, 1, None] * pt[1]
                 + m[:, i, 2, None] * pt[2]) + m[:, i, 3, None]
            lo[:, i] = np.minimum(lo[:, i], c.min(1))
            hi[:, i] = np.maximum(hi[:, i], c.max(1))
    lo = np.where(np.isfinite(lo), np.floor(lo), 0)
    hi = np.where(np.isfinite(hi), np.ceil(hi), 0)
    return np.clip(np.stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1], lo[:, 2], hi[:, 2]], 1),
                   -32768, 32767).astype(np.int64)


def _fixed(ex: dict, key: str, la: Any) -> int:
    if key in ex:
        return int(round(float(ex[key]) * 65536.0))
    return int(la[key]) if la else 0


def _like_lists(like: Any) -> tuple[list, list]:
    """Per like animation its commands and state changes."""
    if not like:
        return [], []
    cmds = np.asarray(like["commands"]).tolist()
    changes = list(like["state_changes"])
    out_c, out_s = [], []
    ci = si = 0
    for a in like["animations"]:
        nc, ns = int(a["command_count"]), int(a["state_change_count"])
        out_c.append(cmds[ci:ci + nc])
        out_s.append(changes[si:si + ns])
        ci += nc
        si += ns
    return out_c, out_s


def _commands(ex: dict, fs: int, la: Any, like_cmds: list, ai: int) -> list[list[int]]:
    if not isinstance(ex.get("commands"), list):
        return [list(c) for c in like_cmds[ai]] if ai < len(like_cmds) else []
    out = []
    for c in ex["commands"]:
        kind = c.get("type")
        kind = _COMMAND_TYPES.get(kind, kind)
        if not isinstance(kind, int) or kind not in model.COMMAND_PARAMS:
            raise ImportRefused(f"animation command type {c.get('type')!r} is unknown")
        words = [kind, 0, 0, 0]
        if kind == 1:
            words[1:4] = [int(x) for x in c["position"]]
        elif kind == 2:
            words[1:3] = [int(x) for x in c["velocity"]]
        elif kind in (5, 6):
            words[1] = int(c["frame"]) + fs
            words[2] = (int(c["id"]) & 0x3FFF) | ((int(c.get("condition", 0)) & 3) << 14)
        pad = c.get("padding")
        if isinstance(pad, list):
            used = 1 + model.COMMAND_PARAMS[kind]
            words[used:4] = [int(x) for x in pad][:4 - used]
        out.append([w - 0x10000 if w >= 0x8000 else w for w in words])
    return out


def _changes(ex: dict, fs: int, la: Any, like_changes: list, ai: int, base: int,
             starts: list, src: dict) -> list[dict]:
    if not isinstance(ex.get("state_changes"), list):
        return [dict(s) for s in like_changes[ai]] if ai < len(like_changes) else []
    dispatch_index = src.get("dispatch_index") if isinstance(src.get("dispatch_index"), list) \
        else []
    out = []
    next_disp = 0
    for k, s in enumerate(ex["state_changes"]):
        rows = []
        for d in s.get("dispatches", []):
            rel = int(d["next_anim"])
            target = starts[rel] if 0 <= rel < len(starts) else 0
            rows.append([int(d["low"]) + fs, int(d["high"]) + fs, (rel + base) & 0xFFFF,
                         int(d["next_frame"]) + target])
        arr = np.asarray(rows, np.int64).reshape(-1, 4)
        arr = ((arr + 0x8000) & 0xFFFF) - 0x8000
        di = int(dispatch_index[k]) if k < len(dispatch_index) else next_disp
        out.append({"state_id": int(s["state_id"]), "dispatch_count": len(rows),
                    "dispatch_index": di, "dispatches": arr.astype(np.int16)})
        next_disp = di + len(rows)
    return out
