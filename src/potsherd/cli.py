"""The ``potsherd`` command line.

Exit codes: 0 success, 1 a data error (a file that does not decode, does not
round-trip, or a document that cannot be built), 2 a usage error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Iterator

from . import __version__, registry
from .core.errors import FormatError, LimitError
from .core.fileio import atomic_write
from .core.plainjson import plain_json
from .core.limits import DEFAULT_LIMITS, Limits


class UsageError(Exception):
    pass


def parse_params(items: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"--param expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        val: Any = v
        for conv in (int, float):
            try:
                val = conv(v)
                break
            except ValueError:
                continue
        out[k.strip()] = val
    return out


def limits_from_args(args) -> Limits:
    changes = {}
    for name in ("max_depth", "max_elements", "max_inflated", "max_input"):
        v = getattr(args, name, None)
        if v is not None:
            changes[name] = v
    return DEFAULT_LIMITS.replace(**changes) if changes else DEFAULT_LIMITS


def read_doc(path: str, args):
    limits = limits_from_args(args)
    from . import containers
    if containers.split_member_path(path)[1]:  # ARCHIVE::member
        data = containers.read_input(path, limits)
        doc = registry.decode(data, format=getattr(args, "format", None), path=path,
                              limits=limits, **parse_params(getattr(args, "param", None)))
        return data, doc
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limits.max_input:  # refuse before reading it into memory
            raise LimitError(f"input of {size} bytes exceeds the limit of {limits.max_input} "
                             f"(--max-input)", offset=0)
        data = f.read(limits.max_input + 1)
    doc = registry.decode(data, format=getattr(args, "format", None), path=path,
                          limits=limits, **parse_params(getattr(args, "param", None)))
    return data, doc


def iter_inputs(paths: list[str], *, skip_unknown: bool) -> Iterator[str]:
    """Files named, and files under named folders (sorted; unknown extensions
    skipped when walking folders)."""
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    fp = os.path.join(root, name)
                    if not skip_unknown or registry.known_extension(fp):
                        yield fp
        else:
            yield p


def _print_tree(value: Any, indent: int = 0, out=None) -> None:
    out = sys.stdout if out is None else out
    pad = "  " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                print(f"{pad}{k}:", file=out)
                _print_tree(v, indent + 1, out)
            else:
                print(f"{pad}{k}: {v}", file=out)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                print(f"{pad}-", file=out)
                _print_tree(v, indent + 1, out)
            else:
                print(f"{pad}- {v}", file=out)
    else:
        print(f"{pad}{value}", file=out)




def summary(path: str, data: bytes, doc) -> dict:
    codec = doc.codec
    out = {"file": path, "family": codec.family, "format": codec.name, "bytes": len(data)}
    if doc.params:
        out["params"] = dict(doc.params)
    out.update(codec.info(doc))
    out["opaque_bytes"] = codec.opaque_bytes(doc)
    if doc.warnings:
        out["warnings"] = list(doc.warnings)
    return plain_json(out)


# ----------------------------------------------------------------------------
# commands

def cmd_formats(args) -> int:
    from . import list_formats
    rows = list_formats()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for fam in registry.FAMILIES:
        fam_rows = [r for r in rows if r["family"] == fam]
        if not fam_rows:
            continue
        print(f"{fam}:")
        for r in fam_rows:
            print(f"  {r['name']:<16} {' '.join(r['extensions']):<24} {r['description']}")
    return 0


def cmd_info(args) -> int:
    status = 0
    for path in args.files:
        try:
            data, doc = read_doc(path, args)
        except FormatError as e:
            print(f"{path}: error: {e}", file=sys.stderr)
            status = 1
            continue
        s = summary(path, data, doc)
        if args.json:
            print(json.dumps(s, ensure_ascii=False))
        else:
            _print_tree(s)
    return status


def cmd_dump(args) -> int:
    data, doc = read_doc(args.file, args)
    text = json.dumps(doc.to_json(args.form), indent=None if args.compact else 1,
                      ensure_ascii=False)
    if args.output:
        atomic_write(args.output, text.encode("utf-8"))
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_build(args) -> int:
    from . import from_json
    with open(args.document, "rb") as f:
        raw = f.read()
    doc = from_json(raw)
    data = doc.encode()
    atomic_write(args.output, data)
    print(f"{args.output}: {len(data)} bytes ({doc.format})")
    return 0


def _first_diff(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    import numpy as np
    if n:
        x = np.frombuffer(a, np.uint8, n)
        y = np.frombuffer(b, np.uint8, n)
        d = np.flatnonzero(x != y)
        if d.size:
            return int(d[0])
    return n


def cmd_roundtrip(args) -> int:
    ok = bad = 0
    for path in iter_inputs(args.files, skip_unknown=True):
        rec: dict[str, Any] = {"path": path}
        try:
            data, doc = read_doc(path, args)
            rec.update(format=doc.format, bytes=len(data))
            out = doc.encode()
            if args.via_json:
                from . import from_json
                out = from_json(json.loads(json.dumps(doc.to_json(args.via_json)))).encode()
            if out == data:
                rec["ok"] = True
            else:
                rec.update(ok=False, first_difference=_first_diff(data, out), out_bytes=len(out))
        except FormatError as e:
            rec.update(ok=False, error=e.to_dict())
        except OSError as e:
            rec.update(ok=False, error={"error": "OSError", "message": str(e)})
        if rec["ok"]:
            ok += 1
        else:
            bad += 1
        if args.json:
            print(json.dumps(rec, ensure_ascii=False))
        elif rec["ok"]:
            if not args.quiet:
                print(f"ok    {path} ({rec['format']}, {rec['bytes']} bytes)")
        elif "error" in rec:
            e = rec["error"]
            where = f" at offset {e['offset']}" if "offset" in e else ""
            print(f"FAIL  {path}: {e['message']}{where}" + (f" [{e['path']}]" if "path" in e else ""))
        else:
            print(f"DIFF  {path}: first difference at offset {rec['first_difference']}")
    if not args.json:
        print(f"{ok} byte-exact, {bad} failed")
    return 0 if bad == 0 else 1


def cmd_validate(args) -> int:
    status = 0
    for path in iter_inputs(args.files, skip_unknown=True):
        rec: dict[str, Any] = {"path": path}
        try:
            data, doc = read_doc(path, args)
            opaque = doc.codec.opaque_bytes(doc)
            rec.update(ok=True, format=doc.format, family=doc.codec.family,
                       variant=plain_json(doc.params), bytes=len(data), opaque_bytes=opaque,
                       understood=round(1 - opaque / len(data), 4) if data else 1.0,
                       warnings=list(doc.warnings))
        except FormatError as e:
            rec.update(ok=False, error=e.to_dict())
            status = 1
        if args.json:
            print(json.dumps(rec, ensure_ascii=False))
        elif rec["ok"]:
            print(f"{path}: {rec['format']} {rec['variant'] or ''} ok, "
                  f"{rec['opaque_bytes']} of {rec['bytes']} bytes opaque"
                  + "".join(f"\n  warning: {w}" for w in rec["warnings"]))
        else:
            e = rec["error"]
            print(f"{path}: INVALID {e['message']}"
                  + (f" at offset {e['offset']}" if "offset" in e else "")
                  + (f" [{e['path']}]" if "path" in e else ""))
    return status


def cmd_example(args) -> int:
    from .examples import write_examples
    for path in write_examples(args.folder):
        print(path)
    return 0


def cmd_convert(args) -> int:
    from .export import convert as conv
    return conv.run(args)


def cmd_render(args) -> int:
    """Draw a glTF to PNG headlessly (four views, back faces magenta) to check conventions."""
    import io
    import struct
    from .export import render as rend
    try:
        g = rend.Gltf(args.input)
    except (ValueError, KeyError, IndexError, TypeError, struct.error) as e:
        raise FormatError(f"{args.input}: not a readable glTF ({type(e).__name__}: {e})") from None
    animations = len(g.json.get("animations", []))
    animation = None if args.animation < 0 else args.animation
    if animation is not None and animations and animation >= animations:
        raise UsageError(f"--animation {args.animation}: {args.input} has "
                         f"{animations} animation(s)")
    if args.size < 16 or args.size > 4096:
        raise UsageError(f"--size {args.size}: use 16..4096 pixels")
    try:
        img = rend.render(args.input, animation=animation, time=args.time, size=args.size)
    except (ValueError, KeyError, IndexError, TypeError, struct.error) as e:
        raise FormatError(f"{args.input}: cannot render ({type(e).__name__}: {e})") from None
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    atomic_write(args.output, buf.getvalue())
    print(args.output)
    return 0


def cmd_textures(args) -> int:
    from .export import textures
    return textures.run(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="potsherd",
        description="Read, write and convert the 3D asset formats of classic games "
                    "(Knight Online N3, Darkstar DTS/DML, FBX, TRLE wad/trwad).")
    p.add_argument("--version", action="version", version=f"potsherd {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp, params=True):
        sp.add_argument("--format", help="codec name (overrides detection; see `formats`)")
        if params:
            sp.add_argument("--param", action="append", metavar="NAME=VALUE",
                            help="set a layout parameter (e.g. gridCell=16, fileVersion=1098)")
        sp.add_argument("--max-depth", dest="max_depth", type=int, help="nesting limit")
        sp.add_argument("--max-elements", dest="max_elements", type=int,
                        help="element-count limit per array")
        sp.add_argument("--max-inflated", dest="max_inflated", type=int,
                        help="largest inflated size of a compressed payload, in bytes")
        sp.add_argument("--max-input", dest="max_input", type=int,
                        help="largest input file accepted, in bytes")

    sp = sub.add_parser("formats", help="list supported formats")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_formats)

    sp = sub.add_parser("info", help="summarise files (format, variant, counts)")
    sp.add_argument("files", nargs="+")
    sp.add_argument("--json", action="store_true", help="one JSON object per file")
    common(sp)
    sp.set_defaults(func=cmd_info)

    sp = sub.add_parser("dump", help="decode a file to lossless JSON")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", help="write here (atomically) instead of stdout")
    sp.add_argument("--form", choices=("wire", "readable"), default="wire",
                    help="wire: floats as bit patterns, text as hex; readable: decimals and text")
    sp.add_argument("--compact", action="store_true", help="no indentation")
    common(sp)
    sp.set_defaults(func=cmd_dump)

    sp = sub.add_parser("build", help="encode a JSON document back to a file")
    sp.add_argument("document")
    sp.add_argument("-o", "--output", required=True)
    sp.set_defaults(func=cmd_build)

    sp = sub.add_parser("roundtrip", help="decode+encode files, report byte-exactness")
    sp.add_argument("files", nargs="+", help="files or folders (folders recurse)")
    sp.add_argument("--json", action="store_true", help="one JSON object per file")
    sp.add_argument("--via-json", choices=("wire", "readable"),
                    help="also pass through the JSON form")
    sp.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    common(sp)
    sp.set_defaults(func=cmd_roundtrip)

    sp = sub.add_parser("validate", help="check files; report variant, warnings, opaque bytes")
    sp.add_argument("files", nargs="+")
    sp.add_argument("--json", action="store_true")
    common(sp)
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser("example", help="write small example files made by potsherd's own encoders")
    sp.add_argument("folder", help="where to write them")
    sp.set_defaults(func=cmd_example)

    sp = sub.add_parser("convert", help="convert to glTF (.glb/.gltf) or between encodings")
    sp.add_argument("input", help="a file or a folder")
    sp.add_argument("output", help="a file or a folder")
    sp.add_argument("--to", help="target: glb, gltf, binary, ascii (default: from OUTPUT)")
    sp.add_argument("--version", dest="target_version", type=int,
                    help="FBX version of the output (7100-7700)")
    sp.add_argument("--detail", type=int, default=0, help="Darkstar detail level")
    sp.add_argument("--lod", type=int, default=0, help="Knight Online LOD")
    sp.add_argument("--data-root", help="game data folder for resolving references")
    sp.add_argument("--jobs", type=int, default=0, help="parallel jobs (0: all cores)")
    sp.add_argument("--option", action="append", metavar="NAME=VALUE",
                    help="exporter option for the family's glTF converter (e.g. "
                         "moveable=LARA, unit_scale=0.001, fx_meshes=1)")
    sp.add_argument("--validate", action="store_true",
                    help="check glTF outputs with the Khronos glTF validator (needs Node and "
                         "tools/gltf-validator installed)")
    common(sp)
    sp.set_defaults(func=cmd_convert)

    sp = sub.add_parser("render", help="draw a .glb/.gltf to PNG (front, right, top, 3/4 views; "
                                       "back faces magenta) to check conventions by eye")
    sp.add_argument("input", help="a .glb or .gltf file")
    sp.add_argument("output", help="PNG to write (atomically)")
    sp.add_argument("--time", type=float, default=0.0, help="animation time in seconds")
    sp.add_argument("--animation", type=int, default=0, help="animation index (-1: none)")
    sp.add_argument("--size", type=int, default=256, help="tile size in pixels")
    sp.set_defaults(func=cmd_render)

    sp = sub.add_parser("textures", help="extract textures to PNG")
    sp.add_argument("inputs", nargs="+", help="files or folders")
    sp.add_argument("-o", "--output", required=True, help="output folder")
    sp.add_argument("--option", action="append", metavar="NAME=VALUE",
                    help="texture option of the family (e.g. palette=FILE for Darkstar bitmaps)")
    sp.add_argument("--data-root", help="game data folder for resolving palettes")
    common(sp)
    sp.set_defaults(func=cmd_textures)

    for hook in registry.cli_hooks():
        hook(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except UsageError as e:
        print(f"potsherd: {e}", file=sys.stderr)
        return 2
    except FormatError as e:
        print(f"potsherd: error: {e}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"potsherd: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
