"""``potsherd trle``: cut and paste moveables, export textures.

    potsherd trle extract WAD --moveable ID -o out.trwad
    potsherd trle extract LEVEL.tr4 --moveable ID -o out.trwad   (TR1-TR5 levels too)
    potsherd trle extract WAD --moveable all -o folder/
    potsherd trle insert WAD in.trwad -o new.wad
    potsherd trle textures FILE -o dir/
    potsherd trle skeleton FILE [--moveable ID]
"""
from __future__ import annotations

import json
import os
import sys

from .. import api
from ..core.errors import FormatError
from ..core.fileio import atomic_write
from .inputs import limits_from_args, read_doc


from ..formats.trle.catalog import moveable_id as _moveable_id  # noqa: E402  (kept for callers)


_limits = limits_from_args


def _read(path: str, args, fmt: str | None = None):
    return read_doc(path, args, fmt)[1]


LEVEL_EXTENSIONS = (".phd", ".tr2", ".tr4", ".trc")


def _read_wad_or_level(path: str, args):
    """A wad, or a game level (by extension or detection) converted to a wad root
    (:mod:`.levelwad`), its conversion warnings printed."""
    from ..document import Document
    fmt = getattr(args, "format", None)
    is_level = (fmt or "").endswith("level") or (
        not fmt and os.path.splitext(path)[1].lower() in LEVEL_EXTENSIONS)
    if not is_level:
        return _read(path, args, "tr4wad")
    from ..formats.trle.levelwad import wad_root
    doc = _read(path, args)
    if not doc.format.endswith("level"):
        raise FormatError(f"{path}: a {doc.format} file, not a level or a wad")
    root, warnings = wad_root(doc)
    for w in warnings:
        print(f"potsherd: warning: {w}", file=sys.stderr)
    return Document("tr4wad", root, {"mesh_pad": 1})


def cmd_extract(args) -> int:
    from ..document import Document
    from ..formats.trle.moveables import extract
    wad = _read_wad_or_level(args.wad, args)
    if args.moveable.lower() == "all":
        from ..formats.trle.catalog import moveable_name
        os.makedirs(args.output, exist_ok=True)
        ids = [int(m["object_id"]) for m in wad.root["moveables"]]
        for oid in ids:
            name = f"{oid:03d}_{moveable_name(oid) or 'moveable'}.trwad"
            data = Document("trwad", extract(wad.root, oid), {"mesh_pad": 0}).encode()
            atomic_write(os.path.join(args.output, name), data)
        print(f"{args.output}: {len(ids)} moveables extracted")
        return 0
    oid = _moveable_id(args.moveable)
    doc = Document("trwad", extract(wad.root, oid), {"mesh_pad": 0})
    data = doc.encode()
    atomic_write(args.output, data)
    t = doc.root
    print(f"{args.output}: moveable {oid}, {t['mesh_count']} meshes, {t['texture_count']} textures, "
          f"{t['animation_count']} animations, {len(data)} bytes")
    return 0


def cmd_insert(args) -> int:
    from ..document import Document
    from ..formats.trle.moveables import empty_wad, insert
    if args.wad == "-":
        root = empty_wad()
    else:
        root = _read(args.wad, args, "tr4wad").root
    if args.trwad.lower().endswith((".glb", ".gltf")):
        return _insert_gltf(args, root)
    _, trwad = api.read_doc(args.trwad, limits=_limits(args), format="trwad")
    new = insert(root, trwad.root)
    data = Document("tr4wad", new, {"mesh_pad": 1}).encode()
    atomic_write(args.output, data)
    m = trwad.root["moveable"]
    print(f"{args.output}: moveable {m['object_id']} inserted, {new['moveable_count']} moveables, "
          f"{len(data)} bytes")
    for line in write_companions(args.wad, args.output, root, new, args.trwad):
        print(line)
    return 0


def _insert_gltf(args, root: dict) -> int:
    """A glTF moveable into the wad: a moveable of the same object id is replaced,
    keeping its state changes, dispatches, commands and id where the glTF has none."""
    from ..document import Document
    from ..scene.gltf_read import read_gltf
    from ..formats.trle.codecs import WAD
    scene = read_gltf(args.trwad, limits=_limits(args))
    options = {}
    if getattr(args, "object_id", None) is not None:
        options["object_id"] = _moveable_id(args.object_id)
    like = Document("tr4wad", root, {"mesh_pad": 1})
    doc = WAD.from_scene(scene, like=like, **options)
    data = doc.encode()
    atomic_write(args.output, data)
    for w in scene.warnings:
        print(f"potsherd: warning: {w}", file=sys.stderr)
    print(f"{args.output}: {args.trwad} inserted, {doc.root['moveable_count']} moveables, "
          f"{len(data)} bytes")
    for line in write_companions(args.wad, args.output, root, doc.root, args.trwad):
        print(line)
    return 0


def _sibling(path: str, ext: str) -> str | None:
    """The file beside ``path`` with its stem and extension ``ext`` (any case)."""
    from ..resolve import Listings
    hit = Listings().sibling(path, ext)
    return str(hit) if hit is not None else None


def write_companions(wad_path: str, out_path: str, old: dict, new: dict,
                     source: str) -> list[str]:
    """The companion files beside a written wad, and what was done with each.

    Sounds and sprites do not change when a moveable is pasted, so ``.sfx``,
    ``.sam`` and ``.swd`` are copied; ``.was`` (one name line per object,
    moveables first) gets a line for a moveable the wad did not have, when its
    first lines name the wad's moveables as expected (else it is left out)."""
    from ..formats.trle.catalog import moveable_name
    if wad_path == "-":
        return ["companion files: none (the wad was new)"]
    from ..resolve import Confinement
    notes = []
    out_stem = os.path.splitext(out_path)[0]
    #: companions are read by the rule for referenced files: the wad's folder only
    beside = Confinement([os.path.dirname(os.path.abspath(wad_path))])
    for ext in (".sfx", ".sam", ".swd"):
        src = _sibling(wad_path, ext)
        if src is None:
            continue
        target = out_stem + os.path.splitext(src)[1]
        if os.path.abspath(target) != os.path.abspath(src):
            try:
                data = beside.read(src, os.path.basename(src))
            except FormatError as e:     # a link out of the folder, a FIFO, over the limit
                notes.append(f"{target}: not written ({e.message})")
                continue
            atomic_write(target, data)
            notes.append(f"{target}: copied unchanged")
    src = _sibling(wad_path, ".was")
    if src is None:
        return notes
    target = out_stem + os.path.splitext(src)[1]
    try:
        text = beside.read(src, os.path.basename(src))
    except FormatError as e:
        return notes + [f"{target}: not written ({e.message})"]
    newline = b"\r\n" if b"\r\n" in text else b"\n"
    lines = text.split(newline)
    old_ids = [int(m["object_id"]) for m in old["moveables"]]
    new_ids = [int(m["object_id"]) for m in new["moveables"]]
    names = [(moveable_name(i) or "").encode("latin-1") for i in old_ids]
    listed = [x.split(b":", 1)[0].strip() for x in lines[:len(names)]]
    if new_ids == old_ids:
        if os.path.abspath(target) != os.path.abspath(src):
            atomic_write(target, text)
            notes.append(f"{target}: copied unchanged (the moveable was replaced)")
        return notes
    added = [k for k, i in enumerate(new_ids) if i not in old_ids]
    if len(new_ids) != len(old_ids) + 1 or len(added) != 1 or listed != names:
        notes.append(f"{src}: not rewritten (its lines do not list this wad's moveables); "
                     "add the new moveable's name by hand")
        return notes
    k = added[0]
    name = moveable_name(new_ids[k]) or f"MOVEABLE{new_ids[k]}"
    lines.insert(k, f"{name}:{os.path.basename(source)}".encode("latin-1", "replace"))
    atomic_write(target, newline.join(lines))
    notes.append(f"{target}: line {k + 1} added for {name}")
    return notes


def cmd_textures(args) -> int:
    doc = _read(args.file, args)
    fn = doc.codec.textures
    if fn is None:
        raise FormatError(f"{doc.format} files hold no textures")
    os.makedirs(args.output, exist_ok=True)
    items = fn(doc)
    for name, img in items:
        path = os.path.join(args.output, name + ".png")
        import io
        buf = io.BytesIO()  # outputs are written atomically (core.fileio)
        img.save(buf, format="PNG")
        atomic_write(path, buf.getvalue())
    print(f"{args.output}: {len(items)} PNG files")
    return 0


def cmd_skeleton(args) -> int:
    from ..formats.trle import model
    doc = _read(args.file, args)
    if doc.format == "trwad":
        r = doc.root
        if "moveable" not in r:
            raise FormatError("this .trwad holds no single moveable")
        bones = model.skeleton(r["link_words"], r["moveable"]["mesh_count"])
    elif doc.format == "tr4wad":
        from ..formats.trle.moveables import find_moveable
        r = doc.root
        if args.moveable is None:
            raise FormatError("a wad needs --moveable ID")
        m = model.records(r["moveables"])[find_moveable(r, _moveable_id(args.moveable))]
        li = int(m["links_index"])
        bones = model.skeleton(r["link_words"][li:li + 4 * max(m["mesh_count"] - 1, 0)],
                               m["mesh_count"])
    else:
        raise FormatError(f"{doc.format} files hold no skeleton")
    json.dump(bones, sys.stdout)
    sys.stdout.write("\n")
    return 0


def add_cli(subparsers, common) -> None:
    p = subparsers.add_parser("trle", help="TRLE wad / trwad tools (extract, insert, textures)")
    sub = p.add_subparsers(dest="trle_command", metavar="TRLE_COMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    sp = sub.add_parser("extract", help="write one moveable of a wad or a game level (TR1-TR5) "
                                        "as a .trwad (WadMerger layout)")
    sp.add_argument("wad", help="a TR4 .wad, or a level (.phd .tr2 .tr4 .trc)")
    sp.add_argument("--moveable", required=True,
                    help="object id or TR4 slot name (e.g. 0, LARA); 'all': every moveable "
                         "into the folder given by -o")
    sp.add_argument("-o", "--output", required=True)
    common(sp)
    sp.set_defaults(func=cmd_extract)

    sp = sub.add_parser("insert", help="add or replace a .trwad (or glTF) moveable in a wad")
    sp.add_argument("wad", help="the wad to insert into ('-' for an empty wad)")
    sp.add_argument("trwad", help="a .trwad, or a .glb/.gltf moveable (a moveable of the same "
                                  "object id keeps its state machine unless the glTF has one)")
    sp.add_argument("--object-id", help="object id or slot name for a glTF moveable")
    sp.add_argument("-o", "--output", required=True)
    common(sp)
    sp.set_defaults(func=cmd_insert)

    sp = sub.add_parser("textures", help="texture pages / blocks as PNG files")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", required=True, help="output folder")
    common(sp)
    sp.set_defaults(func=cmd_textures)

    sp = sub.add_parser("skeleton", help="print a moveable's mesh tree as JSON")
    sp.add_argument("file")
    sp.add_argument("--moveable", help="object id or slot name (for a wad)")
    common(sp)
    sp.set_defaults(func=cmd_skeleton)
