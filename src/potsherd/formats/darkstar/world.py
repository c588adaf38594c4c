"""The Darkstar world codecs (bitmaps, palettes, volumes, interiors) and their
commands: ``potsherd ls ARCHIVE`` and ``potsherd extract ARCHIVE -o DIR``.

Interiors: ``.dis`` (``ITRs`` shape: states, levels of detail naming their
``.dig`` geometry and ``.dil`` lighting files) is a layout-table record
(``layouts/world.layout``); ``.dig`` (``ITRGeometry``) and ``.dil``
(``ITRLighting``) are PERS blocks described in ``itr_structures.json`` and read
by the same PERS machinery as shapes.
"""
from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

from ...core.errors import FormatError
from ...core.fileio import atomic_write
from ...core.limits import DEFAULT_LIMITS
from ...core.layout import Layout
from ...registry import LayoutCodec, Option
from .codecs import DarkstarCodec
from .phoenix import BMP, PBA, CODECS as PHOENIX_CODECS
from .textures import bitmap_textures
from .volumes import VOL, block_map, list_members, member_bytes


def _world_layout() -> Layout:
    path = resources.files(__package__).joinpath("layouts/world.layout")
    return Layout(path.read_text("utf-8"), source=str(path))


WORLD_LAYOUT = _world_layout()

INTERIOR_OPTIONS = (
    Option("state", int, "interior state to export", 0),
    Option("palette", str, "palette file for the textures (.ppl/.pal; default: for each "
                           "bitmap the PL98 sub-palette its PiDX names)", ""),
    Option("lighting", bool, "apply the .dil light maps as vertex colours", True),
    Option("ambient", float, "ambient light added to the light maps (the engine adds the "
                             "mission's at run time)", 0.4),
    Option("lod", int, "level of detail of the state (0 = finest)", 0),
    Option("data_root", str, "game data folder (or volumes) searched for the geometry, "
           "lighting, material list, bitmaps and palettes"),
)


class InteriorShapeCodec(LayoutCodec):
    """``.dis``: exports to glTF with its geometry, lighting and textures."""

    export_options = INTERIOR_OPTIONS

    def to_scene(self, doc, **options: Any):
        from .interiors import to_scene
        return to_scene(doc, **options)

    def info(self, doc) -> dict:
        from .interiors import dis_names
        names = dis_names(doc)
        return {"format": self.name, "family": self.family, "states": len(doc.root["states"]),
                "lods": len(doc.root["lods"]), "geometry": names["geometry"],
                "lighting": names["lighting"], "materialList": names["materialList"]}


DIS = InteriorShapeCodec("dis", WORLD_LAYOUT, "dis", family="darkstar", extensions=(".dis",),
                         magic=b"ITRs", description="Darkstar interior shape (ITRs: states, "
                         "LODs naming .dig/.dil files)")
class InteriorPartCodec(DarkstarCodec):
    """A PERS file recognised by its class name (so a .dig/.dil read without its
    name is still told apart from a shape)."""

    def __init__(self, name: str, extensions: tuple[str, ...], description: str,
                 *class_names: bytes) -> None:
        super().__init__(name, extensions, description,
                         tuple(c.decode("ascii") for c in class_names))
        self.class_names = class_names

    def sniff(self, data: bytes) -> bool:
        if not data.startswith(b"PERS") or len(data) < 10:
            return False
        n = int.from_bytes(data[8:10], "little")
        return data[10:10 + n] in self.class_names


DIG = InteriorPartCodec("dig", (".dig",), "Darkstar interior geometry (PERS ITRGeometry v4, v7: "
                    "BSP, surfaces, points, planes)", b"ITRGeometry")
DIL = InteriorPartCodec("dil", (".dil",), "Darkstar interior lighting (PERS ITRLighting v4, v6-v7, "
                    "ITRMissionLighting v7: light states, light maps)", b"ITRLighting",
                        b"ITRMissionLighting")

# bitmaps and bitmap arrays extract their images to PNG through the palette machinery
BMP.textures = PBA.textures = bitmap_textures

WORLD_CODECS = [*PHOENIX_CODECS, VOL, DIS, DIG, DIL]


# ----------------------------------------------------------------------------
# commands


def _open_archive(path: str, args):
    from ...api import read_doc_args
    _, doc = read_doc_args(path, args)
    if not hasattr(doc.codec, "read_member"):
        raise FormatError(f"{path}: a {doc.format} file is not an archive")
    return doc


def cmd_ls(args) -> int:
    """List an archive's members: size, compression, name (control characters
    escaped; ``--json`` escapes them as JSON does)."""
    import json
    from ...api import printable
    doc = _open_archive(args.archive, args)
    members = list_members(doc)
    if args.json:
        for m in members:
            print(json.dumps({"name": m.name, "size": m.size, "compression": m.compression,
                              "offset": m.block_offset}))
    else:
        for m in members:
            print(f"{m.size:10d}  {printable(m.compression):5s}  {printable(m.name)}")
        print(f"{len(members)} members, {sum(m.size for m in members)} bytes")
    return 0


def cmd_extract(args) -> int:
    """Write members (all, or those named) into a folder, bytes as stored.

    Names are made safe and unique first (:func:`potsherd.containers.member_paths`;
    every change is reported); what is written in total is bounded by
    ``Limits.document_budget`` of the archive's size (index entries may all
    name one block), raised with ``--max-inflated``; a member that cannot be
    written is reported and the others still are."""
    from ...api import display_path, printable, read_doc_args
    from ...containers import member_paths
    from ...core.compress import DocumentBudget
    data, doc = read_doc_args(args.archive, args)
    if not hasattr(doc.codec, "read_member"):
        raise FormatError(f"{args.archive}: a {doc.format} file is not an archive")
    members = list_members(doc)
    wanted = {n.lower() for n in args.members}
    chosen = [m for m in members if not wanted or m.name.lower() in wanted]
    places = member_paths([m.name for m in chosen])
    blocks = block_map(doc)                      # once: extraction linear in the members
    budget = DocumentBudget((doc.limits or DEFAULT_LIMITS).document_budget(len(data)))
    failed = written = renamed = 0
    for n, (m, (parts, why)) in enumerate(zip(chosen, places)):
        dest = os.path.join(args.output, *parts)
        try:
            budget.charge(max(m.size, 0), m.block_offset, "the members")
        except FormatError as e:
            left = len(chosen) - n
            print(f"FAIL  {left} member(s) from '{printable(m.name)}' on not written: "
                  f"{printable(e.message)}", file=sys.stderr)
            failed += left
            break
        try:
            payload = member_bytes(doc, m, blocks)
        except FormatError as e:
            print(f"FAIL  {printable(m.name)}: {printable(e)}", file=sys.stderr)
            failed += 1
            continue
        try:
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            atomic_write(dest, payload)
        except OSError as e:      # a file where a folder must go, a full disk: the next one
            print(f"FAIL  {printable(m.name)}: {display_path(dest)}: "
                  f"{printable(e.strerror or e)}", file=sys.stderr)
            failed += 1
            continue
        written += 1
        if why is not None:
            renamed += 1
            print(f"renamed  '{printable(m.name)}' -> {display_path(os.path.join(*parts))} "
                  f"({why})", file=sys.stderr)
        if not args.quiet:
            print(f"ok    {display_path(dest)}")
    missing = wanted - {m.name.lower() for m in members}
    for name in sorted(missing):
        print(f"FAIL  {printable(name)}: no such member", file=sys.stderr)
        failed += 1
    print(f"{written} members written" + (f" ({renamed} renamed)" if renamed else "")
          + f", {failed} failed")
    return 0 if failed == 0 else 1


def cmd_heightmap(args) -> int:
    """Terrain heights to a 16-bit PNG, or (with --like) a PNG back into a .dtb."""
    from ...api import read_doc_args
    from ...containers import read_input
    from .terrain_heightmap import heightmap_png, import_heightmap
    if args.like:
        _, like = read_doc_args(args.like, args)
        png = read_input(args.input)
        out = import_heightmap(png, like).encode()
    else:
        _, doc = read_doc_args(args.input, args)
        if doc.format != "dtb":
            raise FormatError(f"{args.input}: a {doc.format} file is not a terrain block (.dtb)")
        out = heightmap_png(doc)
    atomic_write(args.output, out)
    print(f"{args.output}: {len(out)} bytes")
    return 0


def add_cli(subparsers, common) -> None:
    sp = subparsers.add_parser("ls", help="list the members of an archive (.vol)")
    sp.add_argument("archive")
    sp.add_argument("--json", action="store_true", help="one JSON object per member")
    common(sp)
    sp.set_defaults(func=cmd_ls)

    sp = subparsers.add_parser("extract", help="extract archive members (.vol) into a folder")
    sp.add_argument("archive")
    sp.add_argument("members", nargs="*", help="member names (default: all)")
    sp.add_argument("-o", "--output", required=True, help="output folder")
    sp.add_argument("-q", "--quiet", action="store_true")
    common(sp)
    sp.set_defaults(func=cmd_extract)

    sp = subparsers.add_parser("heightmap", help="terrain block (.dtb) heights to a 16-bit PNG, "
                               "or a PNG back into a .dtb with --like")
    sp.add_argument("input", help="a .dtb (or X.ted::X#0.dtb) to export, or a PNG to import")
    sp.add_argument("-o", "--output", required=True, help="PNG or .dtb to write")
    sp.add_argument("--like", help="the original .dtb whose other fields the import keeps")
    common(sp)
    sp.set_defaults(func=cmd_heightmap)
