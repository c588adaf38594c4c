"""Synthetic TRLE fixtures built by the project's own encoder.

``tiny_trwad_root`` is a hand-made moveable with the WadMerger quirks applied
(4N-1 link words with 3 junk words, J zero words, per-texture BGR pixels,
padded commands, interleaved state changes, absolute source indices).  It is
synthetic: no real ``.trwad`` was available (notes/trle.md).
"""
from __future__ import annotations

import numpy as np

import potsherd
from potsherd.document import Document

I16 = np.int16


def _packed(x: int, y: int, z: int) -> list[int]:
    p = (x << 20) | (y << 10) | z
    return [(p >> 16) & 0xFFFF, p & 0xFFFF]


def keyframe(bbox, offset, packed_xyz, y_single) -> list[int]:
    """A 12-word keyframe: bbox, offset, mesh 0 packed, mesh 1 Y only."""
    words = list(bbox) + list(offset) + _packed(*packed_xyz) + [0x8000 | y_single]
    return [w - 0x10000 if w >= 0x8000 else w for w in words]


def tiny_trwad_root(odd_quads: bool = True) -> dict:
    quad = {"shape": 9, "vertices": np.array([0, 1, 2, 3], np.uint16), "texture": 0,
            "attributes": 1, "unknown": 0}
    mirrored_quad = {"shape": 9, "vertices": np.array([3, 2, 1, 0], np.uint16),
                     "texture": 0x10000 - 1, "attributes": 0, "unknown": 0}
    tri = {"shape": 8, "vertices": np.array([0, 1, 2], np.uint16), "texture": 0xA000 | 1,
           "attributes": 2 | (5 << 2), "unknown": 0}
    polys0 = [quad, tri] if odd_quads else [quad, mirrored_quad, tri]
    mesh0 = {"center": np.array([1, -2, 3], I16), "radius": 300, "flags": 1, "vertex_count": 4,
             "vertices": np.array([[0, 0, 0], [256, 0, 0], [256, -256, 0], [0, -256, 0]], I16),
             "normal_count": 4,
             "normals": np.array([[0, 0, 16384]] * 4, I16), "polygon_count": len(polys0),
             "polygons": polys0}
    mesh1 = {"center": np.array([0, 0, 0], I16), "radius": 50, "flags": 0, "vertex_count": 3,
             "vertices": np.array([[0, 0, 0], [64, 0, 0], [0, 64, 0]], I16),
             "normal_count": -3, "shades": np.array([0, 4096, 8191], I16), "polygon_count": 1,
             "polygons": [{"shape": 8, "vertices": np.array([2, 1, 0], np.uint16),
                           "texture": 0, "attributes": 0, "unknown": 0}]}
    tex0 = {"x": 0, "y": 0, "page": 3, "flip_x": -1, "w": 1, "flip_y": -1, "h": 1,
            "pixels": bytes([0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 0, 255])}  # BGR: red green blue magenta
    tex1 = {"x": 8, "y": 16, "page": 4, "flip_x": 0, "w": 0, "flip_y": 0, "h": 2,
            "pixels": bytes([10, 20, 30, 40, 50, 60, 70, 80, 90])}
    frames0 = (keyframe([-10, 10, -20, 0, -5, 5], [0, -100, 0], (256, 0, 0), 1024)
               + keyframe([-10, 10, -20, 0, -5, 5], [0, -110, 5], (0, 512, 1023), 2048))
    frames1 = keyframe([-1, 1, -2, 0, -3, 3], [1, 2, 3], (0, 0, 0), 0)
    anim = dict(frame_duration=2, frame_size=12, speed=0x10000, accel=-5, speed_lateral=0,
                accel_lateral=7, command_offset=900)
    animations = [
        {**anim, "keyframe_offset": 5000, "state_id": 2, "frame_start": 0, "frame_end": 2,
         "next_anim": 51, "next_frame": 3, "state_change_count": 1, "state_change_index": 70,
         "command_count": 2},
        {**anim, "keyframe_offset": 5000 + 2 * 24, "state_id": 3, "frame_start": 3,
         "frame_end": 3, "next_anim": 50, "next_frame": 0, "state_change_count": 0,
         "state_change_index": 71, "command_count": 1},
    ]
    return {
        "version": 170, "moveable_count": 1,
        "moveable": {"object_id": 47, "mesh_count": 2, "first_mesh_pointer": 296,
                     "links_index": 1108, "keyframe_offset": 5000, "anim_index": 50},
        "link_word_count": 7,
        "link_words": np.array([2, 10, -20, 30, 1900574, 786832, 2146160], np.int32),
        "mesh_count": 2, "meshes": [mesh0, mesh1], "zero_words": np.zeros(2, np.int32),
        "texture_count": 2, "textures": [tex0, tex1],
        "animation_count": 2, "animations": animations,
        "command_count": 3,
        "commands": np.array([[5, 1, 0x4000 | 12, 0], [3, 0, 0, 0], [1, 10, -20, 30]], I16),
        "keyframe_word_count": 36,
        "keyframe_words": np.array(frames0 + frames1, I16),
        "state_changes": [{"state_id": 4, "dispatch_count": 2, "dispatch_index": 300,
                           "dispatches": np.array([[0, 1, 51, 3], [1, 2, 50, 0]], I16)}],
        "sound_count": 0, "sound_data": b"",
    }


def tiny_trwad_bytes(odd_quads: bool = True, mesh_pad: int = 0) -> bytes:
    root = tiny_trwad_root(odd_quads)
    if mesh_pad:  # the WAD's pad after an odd number of quads
        for m in root["meshes"]:
            quads = sum(1 for p in m["polygons"] if p["shape"] == 9)
            m["pad"] = b"\0\0" if quads % 2 else b""
    return potsherd.write(Document("trwad", root, {"mesh_pad": mesh_pad}))


def tiny_wad_root() -> dict:
    """An empty wad with the tiny moveable inserted."""
    from potsherd.formats.trle.moveables import empty_wad, insert
    return insert(empty_wad(), potsherd.read(tiny_trwad_bytes(), format="trwad").root)
