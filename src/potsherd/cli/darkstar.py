"""``potsherd ls ARCHIVE``, ``potsherd extract ARCHIVE -o DIR`` and ``potsherd
heightmap``: the Darkstar volume and terrain commands (the codecs are in
:mod:`potsherd.formats.darkstar.world`)."""
from __future__ import annotations

import os
import sys

from ..core.errors import FormatError
from ..core.fileio import atomic_write
from ..formats.darkstar.volumes import list_members, member_bytes
from ..formats.darkstar.world import _safe_member_path
from .inputs import read_doc


def _open_archive(path: str, args):
    _, doc = read_doc(path, args)
    if not hasattr(doc.codec, "read_member"):
        raise FormatError(f"{path}: a {doc.format} file is not an archive")
    return doc


def cmd_ls(args) -> int:
    """List an archive's members: size, compression, name."""
    import json
    doc = _open_archive(args.archive, args)
    members = list_members(doc)
    if args.json:
        for m in members:
            print(json.dumps({"name": m.name, "size": m.size, "compression": m.compression,
                              "offset": m.block_offset}))
    else:
        for m in members:
            print(f"{m.size:10d}  {m.compression:5s}  {m.name}")
        print(f"{len(members)} members, {sum(m.size for m in members)} bytes")
    return 0


def cmd_extract(args) -> int:
    """Write members (all, or those named) into a folder, bytes as stored."""
    doc = _open_archive(args.archive, args)
    members = list_members(doc)
    wanted = {n.lower() for n in args.members}
    failed = written = 0
    for m in members:
        if wanted and m.name.lower() not in wanted:
            continue
        try:
            data = member_bytes(doc, m)
        except FormatError as e:
            print(f"FAIL  {m.name}: {e}", file=sys.stderr)
            failed += 1
            continue
        dest = _safe_member_path(args.output, m.name)
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        atomic_write(dest, data)
        written += 1
        if not args.quiet:
            print(f"ok    {dest}")
    missing = wanted - {m.name.lower() for m in members}
    for n in sorted(missing):
        print(f"FAIL  {n}: no such member", file=sys.stderr)
        failed += 1
    print(f"{written} members written, {failed} failed")
    return 0 if failed == 0 else 1


def cmd_heightmap(args) -> int:
    """Terrain heights to a 16-bit PNG, or (with --like) a PNG back into a .dtb."""
    from ..containers import read_input
    from ..formats.darkstar.terrain_heightmap import heightmap_png, import_heightmap
    if args.like:
        _, like = read_doc(args.like, args)
        png = read_input(args.input)
        out = import_heightmap(png, like).encode()
    else:
        _, doc = read_doc(args.input, args)
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
