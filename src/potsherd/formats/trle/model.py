"""Derived views of TR4 moveable data (read-only; writers never use them).

* the mesh tree (push/pop link words) as a skeleton with offsets;
* keyframe words as per-frame bounding boxes, root offsets and rotations;
* the variable-length WAD command stream and the padded ``.trwad`` commands;
* polygon texture words as (index, flag bits);
* texture pixels as RGB images.

Rules (links, texture word, commands, keyframes and angles) are described in
``docs/formats/trle.md``.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ...core.errors import FormatError, ValueFormatError

PAGE_SIZE = 256
PAGE_BYTES = PAGE_SIZE * PAGE_SIZE * 3

#: command type -> number of parameter words in the WAD command stream
COMMAND_PARAMS = {1: 3, 2: 2, 3: 0, 4: 0, 5: 2, 6: 2}
COMMAND_NAMES = {1: "set_position", 2: "jump_velocity", 3: "empty_hands", 4: "kill",
                 5: "play_sound", 6: "flip_effect"}

# --------------------------------------------------------------------------
# Skeleton


def skeleton(link_words: Iterable[int] | np.ndarray, mesh_count: int) -> list[dict]:
    """Bones of a moveable: one per mesh, ``parent`` (-1 for mesh 0), ``offset``
    (dx, dy, dz from the parent's origin) and the raw link ``flags``.

    Only the first ``4 * (mesh_count - 1)`` words are links; the rest (the
    WadMerger junk words) are ignored.  A pop from an empty stack leaves the
    current parent unchanged, as the engine's stack underflow cannot be met."""
    words = np.asarray(link_words, dtype=np.int64).ravel()
    n = max(int(mesh_count), 0)
    need = 4 * max(n - 1, 0)
    if words.size < need:
        raise ValueFormatError(f"{n} meshes need {need} link words, {words.size} present",
                               expected=need, found=words.size)
    links = words[:need].reshape(-1, 4)
    bones = [{"parent": -1, "offset": (0, 0, 0), "flags": 0}] if n else []
    stack: list[int] = []
    current = 0
    for j in range(1, n):
        flags, dx, dy, dz = (int(x) for x in links[j - 1])
        if flags & 1 and stack:
            current = stack.pop()
        if flags & 2:
            stack.append(current)
        bones.append({"parent": current, "offset": (dx, dy, dz), "flags": flags})
        current = j
    return bones


# --------------------------------------------------------------------------
# Keyframes


def keyframe_count(keyframe_offset: int, frame_size: int, next_offset: int) -> int:
    """Keyframes of an animation: bytes up to the next animation's frames."""
    if frame_size <= 0:
        return 0
    return max(next_offset - keyframe_offset, 0) // (2 * frame_size)


def decode_keyframes(words: np.ndarray, frame_size: int, frame_count: int,
                     mesh_count: int) -> dict[str, np.ndarray]:
    """Keyframes as arrays: ``bbox`` (F, 6), ``offset`` (F, 3) and ``rotation``
    (F, mesh_count, 3) angles in radians about X, Y, Z (compose as
    ``qY * qX * qZ``).  Vectorised over frames; loops only over meshes.

    ``words`` holds the animation's keyframes from its first word."""
    words = np.asarray(words, dtype=np.int16)
    if frame_count <= 0 or frame_size <= 0:
        return {"bbox": np.zeros((0, 6), np.int16), "offset": np.zeros((0, 3), np.int16),
                "rotation": np.zeros((0, mesh_count, 3))}
    if frame_size < 9 or words.size < frame_count * frame_size:
        raise ValueFormatError(f"{frame_count} keyframes of {frame_size} words need "
                               f"{frame_count * frame_size} words, {words.size} present")
    frames = words[:frame_count * frame_size].reshape(frame_count, frame_size)
    u = frames.view(np.uint16).astype(np.int64)
    rot = np.zeros((frame_count, mesh_count, 3))
    cursor = np.full(frame_count, 9, dtype=np.int64)
    rows = np.arange(frame_count)
    full = 2 * math.pi / 1024.0
    single = 2 * math.pi / 4096.0
    for m in range(mesh_count):
        if (cursor >= frame_size).any():
            raise ValueFormatError(f"keyframe rotations of mesh {m} overflow the "
                                   f"{frame_size}-word frame")
        w0 = u[rows, cursor]
        mode = w0 >> 14
        packed = mode == 0
        if packed.any() and (cursor[packed] + 1 >= frame_size).any():
            raise ValueFormatError(f"packed rotation of mesh {m} overflows the frame")
        w1 = u[rows, np.minimum(cursor + 1, frame_size - 1)]
        p = (w0 << 16) | w1
        rot[:, m, 0] = np.where(packed, ((p >> 20) & 0x3FF) * full, 0.0)
        rot[:, m, 1] = np.where(packed, ((p >> 10) & 0x3FF) * full, 0.0)
        rot[:, m, 2] = np.where(packed, (p & 0x3FF) * full, 0.0)
        one = (w0 & 0x0FFF) * single
        rot[:, m, 0] = np.where(mode == 1, one, rot[:, m, 0])
        rot[:, m, 1] = np.where(mode == 2, one, rot[:, m, 1])
        rot[:, m, 2] = np.where(mode == 3, one, rot[:, m, 2])
        cursor = cursor + np.where(packed, 2, 1)
    return {"bbox": frames[:, :6].copy(), "offset": frames[:, 6:9].copy(), "rotation": rot}


def quaternions_yxz(rotation: np.ndarray) -> np.ndarray:
    """Euler angles (..., 3) about X, Y, Z to quaternions (..., 4) as
    (x, y, z, w) of ``qY * qX * qZ`` (the engine's ``phd_RotYXZ``)."""
    half = np.asarray(rotation, dtype=np.float64) * 0.5
    cx, sx = np.cos(half[..., 0]), np.sin(half[..., 0])
    cy, sy = np.cos(half[..., 1]), np.sin(half[..., 1])
    cz, sz = np.cos(half[..., 2]), np.sin(half[..., 2])
    # qY * qX
    yx_w, yx_x, yx_y, yx_z = cy * cx, cy * sx, sy * cx, -sy * sx
    # (qY * qX) * qZ, qZ = (0, 0, sz, cz)
    w = yx_w * cz - yx_z * sz
    x = yx_x * cz + yx_y * sz
    y = yx_y * cz - yx_x * sz
    z = yx_w * sz + yx_z * cz
    return np.stack([x, y, z, w], axis=-1)


# --------------------------------------------------------------------------
# Commands


def parse_command_stream(words: np.ndarray, offset: int, count: int) -> list[list[int]]:
    """``count`` commands from the WAD stream at word ``offset``, each padded
    to 4 words ``[type, p1, p2, p3]`` (unused parameters 0), as ``.trwad``
    stores them."""
    out = []
    pos = offset
    n = len(words)
    for i in range(count):
        if pos >= n:
            raise ValueFormatError(f"command {i} starts at word {pos}, past the "
                                   f"{n}-word command stream")
        kind = int(words[pos])
        if kind not in COMMAND_PARAMS:
            raise ValueFormatError(f"unknown animation command type {kind} at word {pos}",
                                   found=kind)
        k = COMMAND_PARAMS[kind]
        if pos + 1 + k > n:
            raise ValueFormatError(f"command {i} at word {pos} runs past the stream")
        params = [int(x) for x in words[pos + 1:pos + 1 + k]]
        out.append([kind] + params + [0] * (3 - k))
        pos += 1 + k
    return out


def command_stream(commands: Iterable[Iterable[int]]) -> list[int]:
    """Padded 4-word commands back to the WAD's variable-length stream."""
    out: list[int] = []
    for c in commands:
        c = [int(x) for x in c]
        kind = c[0]
        if kind not in COMMAND_PARAMS:
            raise ValueFormatError(f"unknown animation command type {kind}", found=kind)
        out.extend(c[:1 + COMMAND_PARAMS[kind]])
    return out


# --------------------------------------------------------------------------
# Texture words


def texture_index(shape: int, word: int) -> tuple[int, int]:
    """(texture index, flag bits) of a polygon's raw texture word.

    Triangles: index in bits 0-11, corner selection in bits 12-14, bit 15
    mirrored.  Quads: bit 15 mirrored, the index then stored negated (two's
    complement)."""
    word &= 0xFFFF
    if shape == 9:
        if word & 0x8000:
            return (0x10000 - word) & 0xFFFF, 0x8000
        return word, 0
    return word & 0x0FFF, word & 0xF000


def texture_word(shape: int, index: int, flags: int) -> int:
    """Inverse of :func:`texture_index`."""
    if shape == 9:
        if flags & 0x8000:
            if not 0 < index < 0x8000:
                raise ValueFormatError(f"a mirrored quad cannot use texture {index}")
            return 0x10000 - index
        if not 0 <= index < 0x8000:
            raise ValueFormatError(f"texture index {index} does not fit a quad")
        return index
    if not 0 <= index <= 0x0FFF:
        raise ValueFormatError(f"texture index {index} does not fit a triangle (max 4095)")
    return (flags & 0xF000) | index


# --------------------------------------------------------------------------
# Pixels


def page_array(pages: bytes) -> np.ndarray:
    """WAD texture pages as an (n, 256, 256, 3) RGB array (a view)."""
    n = len(pages) // PAGE_BYTES
    return np.frombuffer(pages, np.uint8, n * PAGE_BYTES).reshape(n, PAGE_SIZE, PAGE_SIZE, 3)


def cut_texture(pages: np.ndarray, info: dict) -> tuple[np.ndarray, bool]:
    """The (h+1, w+1, 3) RGB pixels of a texinfo from WAD pages; the flag is
    False when the rectangle leaves its page (the missing part reads black)."""
    x, y, page = int(info["x"]), int(info["y"]), int(info["page"])
    w, h = int(info["w"]) + 1, int(info["h"]) + 1  # Python ints: a table row's u8 would wrap
    out = np.zeros((h, w, 3), np.uint8)
    if page >= len(pages):
        return out, False
    part = pages[page, y:y + h, x:x + w]
    out[:part.shape[0], :part.shape[1]] = part
    return out, part.shape[:2] == (h, w)


def bgr_block(texture: dict) -> np.ndarray:
    """A ``.trwad`` texture's BGR bytes as an (h+1, w+1, 3) RGB array."""
    h, w = int(texture["h"]) + 1, int(texture["w"]) + 1
    a = np.frombuffer(bytes(texture["pixels"]), np.uint8, h * w * 3).reshape(h, w, 3)
    return a[:, :, ::-1].copy()


def rgb_to_bgr_bytes(rgb: np.ndarray) -> bytes:
    return np.ascontiguousarray(np.asarray(rgb, np.uint8)[:, :, ::-1]).tobytes()


def image(rgb: np.ndarray, transparent_magenta: bool = False) -> Any:
    """A PIL image of an RGB array (magenta made transparent when asked)."""
    from PIL import Image
    rgb = np.ascontiguousarray(rgb, np.uint8)
    if not transparent_magenta:
        return Image.fromarray(rgb, "RGB")
    alpha = np.where((rgb[..., 0] == 255) & (rgb[..., 1] == 0) & (rgb[..., 2] == 255), 0, 255)
    return Image.fromarray(np.dstack([rgb, alpha.astype(np.uint8)]), "RGBA")


def check(condition: bool, message: str) -> None:
    if not condition:
        raise FormatError(message)


def records(rows: Any) -> list[dict]:
    """The rows of a record table (a numpy structured array, as the layout's
    ``table`` storage decodes them) as plain dicts of Python numbers; a list of
    records (as code building a document writes them) is copied as it is.
    For code that edits rows one by one or needs Python arithmetic (no numpy
    wrap-around on unsigned fields)."""
    if isinstance(rows, np.ndarray) and rows.dtype.names is not None:
        names = rows.dtype.names
        return [dict(zip(names, row)) for row in rows.tolist()]
    return [dict(r) for r in rows]


def animation_ranges(root: dict) -> list[tuple[int, int]]:
    """(first, end) animation index of every moveable: up to the next moveable
    in list order that has animations, or to the end of the array."""
    movs = root["moveables"]
    total = len(root["animations"])
    out = []
    nxt = total
    for m in reversed(movs):
        a = int(m["anim_index"])
        if a < 0:
            out.append((0, 0))
            continue
        out.append((a, max(a, min(nxt, total))))
        nxt = a
    out.reverse()
    return out
