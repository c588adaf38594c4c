"""The ``potsherd`` command line.

Exit codes: 0 success, 1 a data error (a file that does not decode, does not
round-trip, or a document that cannot be built), 2 a usage error.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from typing import Any, Iterator

# Before numpy loads: potsherd's arrays are small (4x4 matrices, vertex lists),
# so OpenBLAS threads only cost start-up (~40 ms of CPU per process) and compete
# with --jobs worker processes.  A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .. import __version__, api, families, registry  # noqa: E402
from ..api import UsageError, display_path, parse_params  # noqa: E402
from ..core.errors import FormatError, LimitError  # noqa: E402
from ..core.plainjson import plain_json  # noqa: E402
from ..core.wording import tally  # noqa: E402

__all__ = ["main", "build_parser", "UsageError", "parse_params", "read_doc", "iter_inputs"]


from .inputs import limits_from_args, read_doc  # noqa: E402


def iter_inputs(paths: list[str], *, skip_unknown: bool) -> Iterator[str]:
    """Readable files named or under named folders (what walks skip is dropped
    silently here; commands that report it use :func:`api.walk_inputs`)."""
    want = registry.known_extension if skip_unknown else None
    for entry in api.walk_inputs(paths, want):
        if entry.ok:
            yield entry.path


def _walk(paths: list[str], skipped: collections.Counter) -> Iterator[api.Entry]:
    """Walk inputs for ``roundtrip``/``validate``: files and failures are yielded to
    the command, what is passed over is counted by reason in ``skipped`` (special
    files and links are also listed on stderr one by one; files whose name no codec
    claims are only counted: a game folder holds many)."""
    for entry in api.walk_inputs(paths, registry.known_extension, report_unwanted=True):
        if entry.skipped is not None:
            skipped[entry.skipped] += 1
            if entry.skipped != api.UNKNOWN_NAME:
                print(f"skip  {api.display_path(entry.path)}: {entry.skipped}", file=sys.stderr)
            continue
        yield entry


def _walk_summary(done: str, checked: int, skipped: collections.Counter, paths: list[str]) -> int:
    """Print a folder command's last line (what it did, and what it skipped by reason);
    1 when nothing at all was checked, so an empty or foreign folder is not a success."""
    print(done + (f"; {tally(skipped)}" if skipped else ""))
    if not checked:
        print(_error_line(" ".join(paths), "no file of a format potsherd reads"), file=sys.stderr)
        return 1
    return 0


def _os_error(e: OSError) -> dict:
    return {"error": type(e).__name__, "message": e.strerror or str(e)}


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
    out = {"file": display_path(path), "family": codec.family, "format": codec.name,
           "bytes": len(data)}
    if doc.params:
        out["params"] = dict(doc.params)
    out.update(codec.info(doc))
    out["opaque_bytes"] = codec.opaque_bytes(doc)
    if doc.warnings:
        out["warnings"] = list(doc.warnings)
    return plain_json(out)


def _error_line(path: str, reason: Any) -> str:
    return f"potsherd: error: {display_path(path)}: {api.printable(reason)}"


# ----------------------------------------------------------------------------
# commands

FEATURES = ("read", "write", "json", "export", "import")


def cmd_formats(args) -> int:
    """Each format with what its codec declares (read from the manifest: listing
    formats imports no family)."""
    rows = registry.format_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    # the built-in families, then those only plugins add
    for fam in dict.fromkeys([*registry.FAMILIES, *(r["family"] for r in rows)]):
        fam_rows = [r for r in rows if r["family"] == fam]
        if not fam_rows:
            continue
        print(f"{fam}:")
        for r in fam_rows:
            feats = r.get("features", {})
            can = ",".join(f for f in FEATURES if feats.get(f)) or "-"
            origin = r.get("origin", "potsherd")
            print(f"  {r['name']:<16} {' '.join(r['extensions']):<24} {can:<30} "
                  f"{r['description']}" + (f"  [plugin: {origin}]" if origin != "potsherd" else ""))
        for line in _family_option_lines(fam, rows):
            print(line)
    return 0


def _option_line(o: dict) -> str:
    """``name=TYPE  help (default X)``: the default once, and only when it says something
    (an option whose help already names its default, or whose default is empty, adds none)."""
    default = o.get("default")
    shown = "" if default is None or default == "" or "default" in o["help"] else \
        f" (default {_plain_value(default)})"
    return f"{o['name']}={o['type'].upper()}  {o['help']}{shown}"


def _plain_value(value: Any) -> str:
    """A value as a user types it on the command line (``1``/``0`` for booleans)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


#: the two directions of ``convert``, by the manifest key that declares their options
OPTION_KINDS = (("export_options", "convert --option (export) for"),
                ("import_options", "convert --option (import into) for"))


def _family_option_lines(family: str, rows: list[dict], indent: str = "    ") -> list[str]:
    """The export and import options of one family's codecs, grouped by identical sets."""
    lines = []
    for key, title in OPTION_KINDS:
        groups: dict = {}
        for r in rows:
            if r["family"] == family and r.get(key):
                group = json.dumps(r[key], sort_keys=True)
                groups.setdefault(group, (r[key], []))[1].append(r["name"])
        for opts, names in groups.values():
            lines.append(f"{indent[:-2]}{title} {', '.join(names)}:")
            lines += [f"{indent}{_option_line(o)}" for o in opts]
    return lines


def options_epilog() -> str:
    """``convert --help`` text listing every family's options."""
    rows = registry.format_rows()
    lines = ["family options (--option NAME=VALUE; an unknown name is an error):"]
    for fam in registry.FAMILIES:
        lines += _family_option_lines(fam, rows, indent="      ")
    return "\n".join(lines)


def cmd_info(args) -> int:
    status = 0
    for path in args.files:
        try:
            data, doc = read_doc(path, args)
        except FormatError as e:
            print(_error_line(path, e), file=sys.stderr)
            status = 1
            continue
        except OSError as e:
            print(_error_line(e.filename or path, e.strerror or e), file=sys.stderr)
            status = 1
            continue
        s = summary(path, data, doc)
        del data, doc
        if args.json:
            print(json.dumps(s, ensure_ascii=False))
        else:
            _print_tree(s)
    return status


def cmd_dump(args) -> int:
    from ..core.gcpolicy import collector_paused
    data, doc = read_doc(args.file, args)
    size = len(data)
    del data                      # the document holds what it needs
    with collector_paused(size):  # (the JSON conversion allocates many small acyclic objects)
        return _dump(doc, args)


def _dump(doc, args) -> int:
    indent = None if args.compact else 2
    if args.output and args.output != api.STDIO:
        from ..core.fileio import atomic_open
        import io
        with atomic_open(args.output) as f:
            text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
            api.write_json(doc, args.form, text, indent=indent)
            text.flush()
            text.detach()
    else:
        api.write_json(doc, args.form, sys.stdout, indent=indent)
        sys.stdout.write("\n")
    return 0


def cmd_build(args) -> int:
    from .. import from_json
    from ..core.gcpolicy import collector_paused
    raw = api.read_input(args.document)
    with collector_paused(len(raw)):  # (parsing and loading allocate many small acyclic objects)
        doc = from_json(raw)
        del raw
        data = doc.encode()
    api.write_output(args.output, data)
    print(f"{display_path(args.output)}: {len(data)} bytes ({doc.format})",
          file=api.summary_stream(args.output))
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
    skipped: collections.Counter = collections.Counter()
    for entry in _walk(args.files, skipped):
        path = entry.path
        rec: dict[str, Any] = {"path": display_path(path)}
        if entry.error is not None:
            rec.update(ok=False, error={"error": "OSError", "message": entry.error})
        else:
            try:
                data, doc = read_doc(path, args)
                rec.update(format=doc.format, bytes=len(data))
                out = doc.encode()
                if args.via_json:
                    from .. import from_json
                    out = from_json(json.loads(json.dumps(doc.to_json(args.via_json)))).encode()
                if out == data:
                    rec["ok"] = True
                else:
                    rec.update(ok=False, first_difference=_first_diff(data, out),
                               out_bytes=len(out))
            except FormatError as e:
                rec.update(ok=False, error=e.to_dict())
            except OSError as e:
                rec.update(ok=False, error=_os_error(e))
        if rec["ok"]:
            ok += 1
        else:
            bad += 1
        shown = rec["path"]
        if args.json:
            print(json.dumps(rec, ensure_ascii=False))
        elif rec["ok"]:
            if not args.quiet:
                print(f"ok    {shown} ({rec['format']}, {rec['bytes']} bytes)")
        elif "error" in rec:
            e = rec["error"]
            where = f" at offset {e['offset']}" if "offset" in e else ""
            print(f"FAIL  {shown}: {e['message']}{where}" + (f" [{e['path']}]" if "path" in e else ""))
        else:
            print(f"DIFF  {shown}: first difference at offset {rec['first_difference']}")
    if args.json:
        return 0 if bad == 0 and ok else 1
    status = _walk_summary(f"{ok} byte-exact, {bad} failed", ok + bad, skipped, args.files)
    return 1 if bad else status


def cmd_validate(args) -> int:
    status = 0
    valid = invalid = 0
    skipped: collections.Counter = collections.Counter()
    for entry in _walk(args.files, skipped):
        path = entry.path
        rec: dict[str, Any] = {"path": display_path(path)}
        try:
            if entry.error is not None:
                raise OSError(entry.error)
            data, doc = read_doc(path, args)
            opaque = doc.codec.opaque_bytes(doc)
            rec.update(ok=True, format=doc.format, family=doc.codec.family,
                       variant=plain_json(doc.params), bytes=len(data), opaque_bytes=opaque,
                       trailing_bytes=len(doc.trailing),
                       understood=round(1 - opaque / len(data), 4) if data else 1.0,
                       warnings=list(doc.warnings))
            share = api.trailing_share(doc, len(data))
            if share > api.MAX_TRAILING_SHARE:
                rec.update(ok=False, error={
                    "error": "TrailingBytes",
                    "message": f"{len(doc.trailing)} of {len(data)} bytes ({share:.1%}) are "
                               f"undecoded trailing bytes after the {doc.format} structure"})
                status = 1
            del data, doc
        except FormatError as e:
            rec.update(ok=False, error=e.to_dict())
            status = 1
        except OSError as e:
            rec.update(ok=False, error=_os_error(e) if e.strerror else
                       {"error": "OSError", "message": str(e)})
            status = 1
        valid += rec["ok"]
        invalid += not rec["ok"]
        if args.json:
            print(json.dumps(rec, ensure_ascii=False))
        elif rec["ok"]:
            variant = " ".join(f"{k}={v}" for k, v in rec["variant"].items())
            print(f"{rec['path']}: {rec['format']}{' ' + variant if variant else ''} ok, "
                  f"{rec['opaque_bytes']} of {rec['bytes']} bytes opaque"
                  + "".join(f"\n  warning: {api.printable(w)}" for w in rec["warnings"]))
        else:
            e = rec["error"]
            print(f"{rec['path']}: INVALID {e['message']}"
                  + (f" at offset {e['offset']}" if "offset" in e else "")
                  + (f" [{e['path']}]" if "path" in e else "")
                  + (f", declared at {e['defined_at']}" if "defined_at" in e else ""))
    if args.json:
        return status if valid + invalid else 1
    return max(status, _walk_summary(f"{valid} valid, {invalid} invalid", valid + invalid,
                                     skipped, args.files))


def cmd_example(args) -> int:
    from ..examples import write_examples
    for path in write_examples(args.folder):
        print(path)
    return 0


def cmd_convert(args) -> int:
    from . import convert as conv
    return conv.run(args)


def cmd_render(args) -> int:
    """Draw a glTF to PNG headlessly (four views, back faces magenta) to check conventions."""
    import io
    import struct
    from ..export import render as rend
    if os.path.isdir(args.input):
        raise IsADirectoryError(21, os.strerror(21), args.input)
    try:
        g = rend.Gltf(args.input)
    except MemoryError:
        raise LimitError(f"{args.input}: glTF data too large to render") from None
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
    except MemoryError:
        raise LimitError(f"{args.input}: glTF data too large to render") from None
    except (ValueError, KeyError, IndexError, TypeError, struct.error) as e:
        raise FormatError(f"{args.input}: cannot render ({type(e).__name__}: {e})") from None
    for note in img.info.get("notes", []):     # e.g. a KTX2 texture drawn untextured
        print(f"potsherd: warning: {api.printable(note)}", file=sys.stderr)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    stream = api.summary_stream(args.output)
    api.write_output(args.output, buf.getvalue())
    print(display_path(args.output), file=stream)
    return 0


def cmd_view(args) -> int:
    """Serve the viewer for a file or folder on localhost until Ctrl-C."""
    from ..view import serve
    from ..view.server import RemoteBindRefused
    from ..view.site import three_missing, vendor_dir
    if not os.path.exists(args.path):
        raise UsageError(f"{args.path}: no such file or folder")

    def say_where(server) -> None:
        if server.remote:
            print(f"potsherd view: WARNING: serving on {args.host}, reachable from other "
                  "machines; anyone with the address and token below can read the served "
                  "folder", file=sys.stderr, flush=True)
        print(f"potsherd view: serving {args.path} at {server.url} (Ctrl-C to stop)",
              flush=True)
        if vendor_dir() is None:
            print(f"potsherd view: {three_missing()}: the 3D view is off, the tree and hex "
                  "panes work", file=sys.stderr, flush=True)
    try:
        return serve(args.path, host=args.host, port=args.port,
                     open_browser=not args.no_browser, limits=limits_from_args(args),
                     allow_remote=args.allow_remote, on_ready=say_where)
    except RemoteBindRefused as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise FormatError(f"cannot serve on {args.host}:{args.port}: {e.strerror or e}") from None


def cmd_textures(args) -> int:
    from . import textures
    return textures.run(args)


def cmd_layout(args) -> int:
    """The record tree of a layout-driven format, with where each field is declared."""
    from ..core import describe
    from ..core.layout import Layout
    try:
        codec = registry.get_codec(args.format_name)
    except FormatError as e:
        raise UsageError(str(e)) from None
    family_lines = getattr(codec, "layout_lines", None)
    if family_lines is not None and not args.source:  # records below a family's own storage
        for line in family_lines(args.field):
            print(line)
        return 0
    layout, root = getattr(codec, "layout", None), getattr(codec, "root", None)
    if not isinstance(layout, Layout) or root not in getattr(layout, "records", {}):
        raise UsageError(f"{codec.name} is not described by a layout table")
    if args.field:
        for line in describe.field_report(layout, root, args.field):
            print(line)
    else:
        for line in describe.record_tree(layout, root):
            print(line)
    if args.source:
        print(describe.fast_source(layout, root), end="")
    return 0


def cmd_blender_addon(args) -> int:
    """Build the Blender extension zip from the installed package."""
    from ..blender.build import BuildError, build_addon
    try:
        built = build_addon(args.output, platforms=args.platform, wheels_dir=args.wheels)
    except BuildError as e:
        raise FormatError(str(e)) from None
    print(f"{display_path(built['path'])}: {built['bytes']} bytes, "
          f"{len(built['wheels'])} wheels for {', '.join(built['platforms'])}",
          file=api.summary_stream(args.output))
    return 0


#: the commands the cli package adds itself (a family's hook adds the others)
CORE_COMMANDS = ("example", "formats", "info", "dump", "build", "roundtrip", "validate",
                 "convert", "render", "textures", "view", "layout", "blender-addon",
                 "identify", "signatures", "bundle")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with ``command`` (the first word of the command line)
    only the family whose CLI hook adds that command is imported for its hook."""
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

    from . import preserve as cli_preserve
    cli_preserve.add_parsers(sub, common)

    sp = sub.add_parser("example", help="write small example files made by potsherd's own encoders")
    sp.add_argument("folder", help="where to write them")
    sp.set_defaults(func=cmd_example)

    sp = sub.add_parser("convert", help="convert to glTF (.glb/.gltf) or between encodings; "
                        "import glTF into a game format (a file or a folder of them)",
                        epilog=options_epilog(),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("input", help="a file or a folder")
    sp.add_argument("output", help="a file or a folder")
    sp.add_argument("--to", help="target: glb, gltf, binary, ascii, or a format to import "
                    "glTF into (n3cplug, dts, trwad...; default: from OUTPUT)")
    sp.add_argument("--version", dest="target_version", type=int,
                    help="FBX version of the output (7100-7700)")
    sp.add_argument("--detail", type=int, help="Darkstar detail level (same as --option detail=N)")
    sp.add_argument("--lod", type=int, help="Knight Online LOD (same as --option lod=N)")
    sp.add_argument("--data-root", help="Knight Online game data folder for resolving "
                                        "references (same as --option data_root=DIR)")
    sp.add_argument("--jobs", type=int, default=0, help="parallel jobs (0: all cores)")
    sp.add_argument("--timeout", type=float, metavar="SECONDS",
                    help="folder batches: a file still converting after this long is stopped "
                         "and reported as failed; the batch goes on")
    sp.add_argument("--option", action="append", metavar="NAME=VALUE",
                    help="exporter option for the family's glTF converter (e.g. "
                         "moveable=LARA, unit_scale=0.001, fx_meshes=1)")
    sp.add_argument("--like", metavar="ORIGINAL",
                    help="glTF import: keep what glTF cannot express from this original file; "
                         "for a folder of glTF files, the folder they were exported from (each "
                         "goes back to the format and name of its original; --to optional)")
    sp.add_argument("--validate", action="store_true",
                    help="check glTF outputs with the Khronos glTF validator (needs Node and "
                         "tools/gltf-validator installed)")
    common(sp)
    sp.set_defaults(func=cmd_convert)

    sp = sub.add_parser("render", help="draw a .glb/.gltf to PNG (front, right, top, 3/4 views; "
                                       "back faces magenta) to check conventions by eye")
    sp.add_argument("input", help="a .glb or .gltf file")
    sp.add_argument("output", help="PNG to write (atomically; '-': standard output)")
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

    sp = sub.add_parser("view", help="browse files in a local web viewer: 3D, structure, hex")
    sp.add_argument("path", help="a file or a folder (a game tree)")
    sp.add_argument("--port", type=int, default=0, help="TCP port (default 0: a random free port)")
    sp.add_argument("--host", default="127.0.0.1",
                    help="address to bind (default 127.0.0.1: this machine only)")
    sp.add_argument("--allow-remote", action="store_true",
                    help="allow a --host that other machines reach; every request then needs "
                         "the token printed at start-up (see SECURITY.md)")
    sp.add_argument("--no-browser", action="store_true", help="do not open a browser")
    common(sp, params=False)
    sp.set_defaults(func=cmd_view)

    sp = sub.add_parser("layout", help="a format's record tree with where each field is declared")
    sp.add_argument("format_name", metavar="FORMAT", help="codec name (see `formats`)")
    sp.add_argument("--field", metavar="PATH",
                    help="one field, by the path an error names (e.g. n3pmesh.collapses[3].collapseTo)")
    sp.add_argument("--source", action="store_true", help="also print the generated fast-path code")
    sp.set_defaults(func=cmd_layout)

    sp = sub.add_parser("blender-addon", help="build the Blender extension zip (Blender 4.2+, "
                                              "and a legacy add-on for Blender 3.x)")
    sp.add_argument("-o", "--output", required=True, metavar="ZIP")
    sp.add_argument("--platform", action="append", metavar="NAME",
                    help="a Blender platform to bundle wheels for (repeatable; default all: "
                         "linux-x64, windows-x64, macos-arm64, macos-x64)")
    sp.add_argument("--wheels", metavar="DIR",
                    help="folder of dependency wheels to bundle; wheels missing there are "
                         "downloaded into it with pip (default ~/.cache/potsherd/wheels)")
    sp.set_defaults(func=cmd_blender_addon)

    for hook in registry.cli_hooks(command):
        hook(sub, common)
    return p


def _tolerant_streams() -> None:
    """Print names that are not UTF-8 instead of failing on them."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; exit codes: 0 success, 1 a data or file-system error,
    2 a usage error, 130 interrupted (Ctrl-C)."""
    _tolerant_streams()
    from ..core.fileio import Terminated, install_cleanup_signals
    install_cleanup_signals()   # SIGTERM / SIGHUP remove temporary files like Ctrl-C
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(f"potsherd {__version__}")  # without building every family's parser
        return 0
    try:
        words = sys.argv[1:] if argv is None else argv
        first = next((w for w in words if not w.startswith("-")), None)
        known = first in CORE_COMMANDS or families.command_family(first or "") is not None
        parser = build_parser(first if known else None)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return args.func(args)
    except UsageError as e:
        print(f"potsherd: error: {api.printable(e)}", file=sys.stderr)
        return 2
    except FormatError as e:
        print(f"potsherd: error: {api.printable(e)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away: stop quietly, and keep Python's exit-time flush quiet too
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except OSError as e:
        where = e.filename if e.filename is not None else "-"
        print(_error_line(where, e.strerror or e), file=sys.stderr)
        return 1
    except Terminated as e:
        print("potsherd: terminated", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print("potsherd: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
