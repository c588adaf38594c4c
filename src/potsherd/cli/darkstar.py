"""``potsherd ls ARCHIVE``, ``potsherd extract ARCHIVE -o DIR`` and ``potsherd
heightmap``: the Darkstar volume and terrain commands (the codecs are in
:mod:`potsherd.formats.darkstar.world`)."""
from __future__ import annotations

import os
import sys

from ..core.errors import FormatError
from ..core.fileio import atomic_write
from ..core.limits import DEFAULT_LIMITS
from ..formats.darkstar.volumes import block_map, list_members, member_bytes
from .inputs import read_doc


def _open_archive(path: str, args):
    _, doc = read_doc(path, args)
    if not hasattr(doc.codec, "read_member"):
        raise FormatError(f"{path}: a {doc.format} file is not an archive")
    return doc


def cmd_ls(args) -> int:
    """List an archive's members: size, compression, name (control characters
    escaped; ``--json`` escapes them as JSON does)."""
    import json
    from ..api import printable
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
    from ..api import display_path, printable
    from ..containers import member_paths
    from ..core.compress import DocumentBudget
    data, doc = read_doc(args.archive, args)
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
