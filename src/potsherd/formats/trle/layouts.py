"""The TR4 WAD family and WadMerger's ``.trwad`` as layout tables.

Records are written in the spec-table notation (``field<TAB>storage<TAB>
condition``) and interpreted by :mod:`potsherd.core.layout`.  Python storages
exist only for what a table cannot say:

* ``poly_shape``: the polygon shape word, which must be 8 (triangle) or 9 (quad);
* ``quad_pad``: the WAD's 2 pad bytes after a mesh with an odd number of quads;
* ``mesh_blob``: the WAD mesh blob, meshes back to back (kept raw when it does
  not parse exactly to its end);
* ``state_change_list``: the ``.trwad`` state changes, which have no count of
  their own (the count is the sum of the animations' ``state_change_count``).

See ``docs/formats/trle.md`` for the field meanings and the spec corrections applied.
"""
from __future__ import annotations

from typing import Any

from ...core.errors import (CountError, EncodeError, FormatError, JsonFormatError,
                            ValueFormatError)
from ...core.expr import Scope
from ...core.layout import JsonCtx, Layout, Storage, hex_to_bytes, PRIMS
from ...core.stream import Reader, Writer

# --------------------------------------------------------------------------
# Shared records (identical in WAD and .trwad)

STRUCTS = {
    "moveable": ('{"kind":"struct","format":"<IHHIIh","keys":"object_id mesh_count '
                 'first_mesh_pointer links_index keyframe_offset anim_index"}'),
    "texinfo": '{"kind":"struct","format":"<BBHbBbB","keys":"x y page flip_x w flip_y h"}',
    "animation": ('{"kind":"struct","format":"<IBBH4i8H","keys":"keyframe_offset frame_duration '
                  'frame_size state_id speed accel speed_lateral accel_lateral frame_start '
                  'frame_end next_anim next_frame state_change_count state_change_index '
                  'command_count command_offset"}'),
    "static": ('{"kind":"struct","format":"<IH6h6hH","keys":"object_id mesh_pointer '
               'visibility_x1 visibility_x2 visibility_y1 visibility_y2 visibility_z1 visibility_z2 '
               'collision_x1 collision_x2 collision_y1 collision_y2 collision_z1 collision_z2 flags"}'),
    "sprite": ('{"kind":"struct","format":"<BBHbBbB4h","keys":"x y page flip_x w flip_y h '
               'left top right bottom"}'),
    "sound_info": ('{"kind":"struct","format":"<HBBBBH","keys":"sample volume range chance '
                   'pitch flags"}'),
    "sprite_sequence": '{"kind":"struct","format":"<ihh","keys":"object_id negative_count first"}',
}

I16X3 = '{"kind":"array","count":3,"item":"i16"}'
I16X4 = '{"kind":"array","count":4,"item":"i16"}'

MESH_TEXT = f"""
# A mesh (docs/formats/trle.md): u16 radius + u16 flags (the spec's i32 radius), signed
# normal count selecting normals (>0), shades (<0) or nothing.
mesh
center\t{I16X3}\t"always"
radius\t"u16"\t"always"
flags\t"u16"\t"always"
vertex_count\t"u16"\t"always"
vertices\t{{"kind":"array","count":"vertex_count","item":{I16X3}}}\t"always"
normal_count\t"i16"\t"always"
normals\t{{"kind":"array","count":"normal_count","item":{I16X3}}}\t{{"gt":["normal_count",0]}}
shades\t{{"kind":"array","count":{{"minus":[0,"normal_count"]}},"item":"i16"}}\t{{"lt":["normal_count",0]}}
polygon_count\t"u16"\t"always"
polygons\t{{"kind":"array","count":"polygon_count","item":"polygon"}}\t"always"
pad\t"quad_pad"\t"mesh_pad"\t# WAD only: 2 bytes after an odd number of quads

# A polygon (docs/formats/trle.md): shape 8 = triangle (3 indices), 9 = quad (4 indices).
polygon
shape\t"poly_shape"\t"always"
vertices\t{{"kind":"array","count":{{"choose":[{{"eq":["shape",9]}},4,3]}},"item":"u16"}}\t"always"
texture\t"u16"\t"always"\t# raw texture word (index + corner/mirror bits)
attributes\t"u8"\t"always"
unknown\t"u8"\t"always"

# .trwad state change: dispatches follow each state change at once (docs/formats/trle.md)
state_change
state_id\t"u16"\t"always"
dispatch_count\t"u16"\t"always"
dispatch_index\t"u16"\t"always"
dispatches\t{{"kind":"array","count":"dispatch_count","item":{I16X4}}}\t"always"
"""

WAD_TEXT = f"""
# TR4 .wad v129/v130 (docs/formats/trle.md): 13 sections, all counts u32.
wad
mesh_pad\t{{"kind":"parameter","name":"mesh_pad","default":1}}\t"always"
version\t"u32"\t"always"
texture_count\t"u32"\t"always"
textures\t{{"kind":"array","count":"texture_count","item":{STRUCTS["texinfo"]}}}\t"always"
page_byte_count\t"u32"\t"always"
pages\t{{"kind":"bytes","count":"page_byte_count"}}\t"always"\t# 256x256 RGB pages
mesh_pointer_count\t"u32"\t"always"
mesh_pointers\t{{"kind":"array","count":"mesh_pointer_count","item":"u32"}}\t"always"
mesh_word_count\t"u32"\t"always"
meshes\t"mesh_blob"\t"always"
animation_count\t"u32"\t"always"
animations\t{{"kind":"array","count":"animation_count","item":{STRUCTS["animation"]}}}\t"always"
state_change_count\t"u32"\t"always"
state_changes\t{{"kind":"array","count":"state_change_count","item":{{"kind":"array","count":3,"item":"u16"}}}}\t"always"
dispatch_count\t"u32"\t"always"
dispatches\t{{"kind":"array","count":"dispatch_count","item":{I16X4}}}\t"always"
command_word_count\t"u32"\t"always"
command_words\t{{"kind":"array","count":"command_word_count","item":"i16"}}\t"always"
link_word_count\t"u32"\t"always"
link_words\t{{"kind":"array","count":"link_word_count","item":"i32"}}\t"always"
keyframe_word_count\t"u32"\t"always"
keyframe_words\t{{"kind":"array","count":"keyframe_word_count","item":"i16"}}\t"always"
moveable_count\t"u32"\t"always"
moveables\t{{"kind":"array","count":"moveable_count","item":{STRUCTS["moveable"]}}}\t"always"
static_count\t"u32"\t"always"
statics\t{{"kind":"array","count":"static_count","item":{STRUCTS["static"]}}}\t"always"
"""

TRWAD_TEXT = f"""
# WadMerger .trwad (docs/formats/trle.md): one moveable cut out of a WAD.  The spec's
# signed counts are read unsigned, so a negative count is refused as too large
# (the link count stays signed: N = 0 stores -1).
trwad
mesh_pad\t{{"kind":"parameter","name":"mesh_pad","default":0}}\t"always"
version\t"i32"\t"always"\t# 170
moveable_count\t"i32"\t"always"\t# 1; anything else is kept opaque
moveable\t{STRUCTS["moveable"]}\t{{"eq":["moveable_count",1]}}
link_word_count\t"i32"\t{{"eq":["moveable_count",1]}}\t# 4N-1 (WadMerger defect)
link_words\t{{"kind":"array","count":"link_word_count","item":"i32"}}\t{{"eq":["moveable_count",1]}}
mesh_count\t"u32"\t{{"eq":["moveable_count",1]}}
meshes\t{{"kind":"array","count":"mesh_count","item":"mesh"}}\t{{"eq":["moveable_count",1]}}
zero_words\t{{"kind":"array","count":"mesh_count","item":"i32"}}\t{{"eq":["moveable_count",1]}}
texture_count\t"u32"\t{{"eq":["moveable_count",1]}}
textures\t{{"kind":"array","count":"texture_count","item":"trwad_texture"}}\t{{"eq":["moveable_count",1]}}
animation_count\t"u32"\t{{"eq":["moveable_count",1]}}
animations\t{{"kind":"array","count":"animation_count","item":{STRUCTS["animation"]}}}\t{{"eq":["moveable_count",1]}}
command_count\t"u16"\t{{"eq":["moveable_count",1]}}\t# 16-bit here
commands\t{{"kind":"array","count":"command_count","item":{I16X4}}}\t{{"eq":["moveable_count",1]}}
keyframe_word_count\t"u32"\t{{"eq":["moveable_count",1]}}
keyframe_words\t{{"kind":"array","count":"keyframe_word_count","item":"i16"}}\t{{"eq":["moveable_count",1]}}
state_changes\t"state_change_list"\t{{"eq":["moveable_count",1]}}\t# no count: sum of the animations'
sound_count\t"i32"\t{{"eq":["moveable_count",1]}}
sound_data\t{{"kind":"tail"}}\t{{"eq":["moveable_count",1]}}\t# unresolved (docs/formats/trle.md): opaque
unsupported\t{{"kind":"tail"}}\t{{"ne":["moveable_count",1]}}

# a texture: its 8-byte texinfo, then (w+1)(h+1) BGR pixels, top row first
trwad_texture
x\t"u8"\t"always"
y\t"u8"\t"always"
page\t"u16"\t"always"
flip_x\t"i8"\t"always"
w\t"u8"\t"always"
flip_y\t"i8"\t"always"
h\t"u8"\t"always"
pixels\t{{"kind":"bytes","count":{{"product":[{{"plus":["w",1]}},{{"plus":["h",1]}},3]}}}}\t"always"
"""

SWD_TEXT = f"""
# .swd sprites (docs/formats/trle.md)
swd
version\t"u32"\t"always"
sprite_count\t"u32"\t"always"
sprites\t{{"kind":"array","count":"sprite_count","item":{STRUCTS["sprite"]}}}\t"always"
page_byte_count\t"u32"\t"always"
pages\t{{"kind":"bytes","count":"page_byte_count"}}\t"always"\t# 256x256 BGR pages
sequence_count\t"u32"\t"always"
sequences\t{{"kind":"array","count":"sequence_count","item":{STRUCTS["sprite_sequence"]}}}\t"always"
"""

SFX_TEXT = f"""
# .sfx sound map (docs/formats/trle.md): 370 entries (v129) or 2048 (v130 / NG)
sfx
map_size\t{{"kind":"parameter","name":"map_size","default":370}}\t"always"
sound_map\t{{"kind":"array","count":"map_size","item":"i16"}}\t"always"
info_count\t"u32"\t"always"
infos\t{{"kind":"array","count":"info_count","item":{STRUCTS["sound_info"]}}}\t"always"
sample_count\t"u32"\t"always"
samples\t{{"kind":"array","count":"sample_count","item":"u32"}}\t"always"
"""


# --------------------------------------------------------------------------
# Custom storages


class PolyShape(Storage):
    """The u16 polygon shape: only 8 and 9 exist; anything else desynchronises."""

    size = min_size = 2

    def decode(self, r: Reader, s: Scope) -> Any:
        p = r.pos
        v = r.unpack(PRIMS["u16"].st)[0]
        if v not in (8, 9):
            raise ValueFormatError(f"polygon shape {v} (expected 8 or 9)", offset=p,
                                   expected="8 or 9", found=v)
        return v

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if v not in (8, 9) or isinstance(v, bool):
            raise EncodeError(f"polygon shape must be 8 or 9, found {v!r}")
        PRIMS["u16"].encode(w, v, s)

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return int(v)

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if o not in (8, 9) or isinstance(o, bool):
            raise JsonFormatError("polygon shape must be 8 or 9", path=jpath)
        return o


def odd_quads(polygons: list) -> bool:
    return sum(1 for p in polygons if p["shape"] == 9) % 2 == 1


class QuadPad(Storage):
    """WAD meshes with an odd number of quads end with 2 pad bytes (kept)."""

    def _needed(self, s: Scope) -> bool:
        return odd_quads(s.frames[-1]["polygons"])

    def decode(self, r: Reader, s: Scope) -> Any:
        return r.read(2) if self._needed(s) else b""

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"pad must be bytes, found {type(v).__name__}")
        n = 2 if self._needed(s) else 0
        if len(v) != n:
            raise EncodeError(f"pad holds {len(v)} bytes, the mesh's quads need {n}")
        w.write(bytes(v))

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        return bytes(v).hex()

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        return hex_to_bytes(o, jpath)


class MeshBlob(Storage):
    """The WAD mesh blob (``2 * mesh_word_count`` bytes): a list of meshes
    parsed back to back, or the raw bytes when that does not end exactly."""

    min_size = 0

    def __init__(self) -> None:
        self.layout: Layout | None = None  # set once the layout exists

    def decode(self, r: Reader, s: Scope) -> Any:
        n = 2 * s.lookup("mesh_word_count")
        r.check_count(n, 1, "mesh blob")
        start = r.pos
        sub = Reader(r.buf, start, start + n, r.limits)
        mesh = self.layout.record("mesh")
        meshes = []
        try:
            while sub.remaining > 0:
                meshes.append(mesh.decode(sub, s))
        except FormatError as e:
            s.warnings.append(f"mesh blob does not parse as back-to-back meshes ({e}); kept raw")
            meshes = None
        r.pos = start + n
        return r.buf[start:start + n] if meshes is None else meshes

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        n = 2 * s.lookup("mesh_word_count")
        before = w.size
        if isinstance(v, (bytes, bytearray)):
            w.write(bytes(v))
        elif isinstance(v, list):
            mesh = self.layout.record("mesh")
            for i, m in enumerate(v):
                try:
                    mesh.encode(w, m, s)
                except FormatError as e:
                    raise e.prepend(f"[{i}]")
        else:
            raise EncodeError(f"meshes must be a list or raw bytes, found {type(v).__name__}")
        if w.size - before != n:
            raise EncodeError(f"meshes take {w.size - before} bytes, mesh_word_count says {n}")

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        if isinstance(v, (bytes, bytearray)):
            return {"raw": bytes(v).hex()}
        mesh = self.layout.record("mesh")
        return [mesh.to_json(m, ctx) for m in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if isinstance(o, dict) and set(o) == {"raw"}:
            return hex_to_bytes(o["raw"], jpath + ".raw")
        if not isinstance(o, list):
            raise JsonFormatError("meshes must be a list or {\"raw\": hex}", path=jpath)
        mesh = self.layout.record("mesh")
        return [mesh.from_json(m, ctx, f"{jpath}[{i}]") for i, m in enumerate(o)]

    def opaque_size(self, v: Any) -> int:
        return len(v) if isinstance(v, (bytes, bytearray)) else 0


class StateChangeList(Storage):
    """``.trwad`` state changes: as many as the animations' counts add up to."""

    min_size = 0

    def __init__(self) -> None:
        self.layout: Layout | None = None

    @staticmethod
    def expected(s: Scope) -> int:
        return sum(int(a["state_change_count"]) for a in s.lookup("animations"))

    def decode(self, r: Reader, s: Scope) -> Any:
        n = self.expected(s)
        r.check_count(n, 6, "state changes")
        item = self.layout.record("state_change")
        out = []
        for i in range(n):
            try:
                out.append(item.decode(r, s))
            except FormatError as e:
                raise e.prepend(f"[{i}]")
        return out

    def encode(self, w: Writer, v: Any, s: Scope) -> None:
        if not isinstance(v, list):
            raise EncodeError(f"state_changes must be a list, found {type(v).__name__}")
        n = self.expected(s)
        if len(v) != n:
            raise EncodeError(f"{len(v)} state changes, the animations count {n}")
        item = self.layout.record("state_change")
        for i, x in enumerate(v):
            try:
                item.encode(w, x, s)
            except FormatError as e:
                raise e.prepend(f"[{i}]")

    def to_json(self, v: Any, ctx: JsonCtx) -> Any:
        item = self.layout.record("state_change")
        return [item.to_json(x, ctx) for x in v]

    def from_json(self, o: Any, ctx: JsonCtx, jpath: str) -> Any:
        if not isinstance(o, list):
            raise JsonFormatError("state_changes must be a list", path=jpath)
        item = self.layout.record("state_change")
        return [item.from_json(x, ctx, f"{jpath}[{i}]") for i, x in enumerate(o)]


def _make_layout(text: str) -> Layout:
    blob, changes = MeshBlob(), StateChangeList()
    layout = Layout(MESH_TEXT + text, {"poly_shape": PolyShape(), "quad_pad": QuadPad(),
                                       "mesh_blob": blob, "state_change_list": changes})
    blob.layout = changes.layout = layout
    return layout


WAD_LAYOUT = _make_layout(WAD_TEXT)
TRWAD_LAYOUT = _make_layout(TRWAD_TEXT)
SWD_LAYOUT = Layout(SWD_TEXT)
SFX_LAYOUT = Layout(SFX_TEXT)

__all__ = ["WAD_LAYOUT", "TRWAD_LAYOUT", "SWD_LAYOUT", "SFX_LAYOUT", "odd_quads", "CountError"]
