"""The preservation commands (``identify``, ``signatures``, ``bundle``): argparse
and printing only, on top of :mod:`potsherd.preserve`."""
from __future__ import annotations

import json
import sys

from . import api
from .api import UsageError, display_path

COMMANDS = ("identify", "signatures", "bundle")


def cmd_identify(args) -> int:
    from .preserve.identify import identify
    limits = api.limits_from_args(args)
    unknown = 0
    for r in identify(args.paths, deep=not args.fast, members=not args.no_members,
                      limits=limits):
        r.path = display_path(r.path)
        if r.format is None:
            unknown += 1
        if args.json:
            print(json.dumps(r.to_dict(), ensure_ascii=False))
            continue
        if r.format is None:
            print(f"{r.path}: unknown ({r.error})")
            continue
        version = f" version {r.version}" if r.version else ""
        state = "" if r.valid is not False else f"; does not decode: {r.error}"
        note = f"; {r.note}" if r.note else ""
        print(f"{r.path}: {r.family}/{r.format}{version} [{r.id}] by {r.basis}{state}{note}")
    return 0


def cmd_signatures(args) -> int:
    from .core.fileio import atomic_write
    from .preserve import signatures
    if not args.droid and not args.fido:
        raise UsageError("signatures: name --droid FILE and/or --fido FILE")
    if args.droid:
        atomic_write(args.droid, signatures.droid_xml())
    if args.fido:
        atomic_write(args.fido, signatures.fido_xml())
    return 0


def add_parsers(sub, common) -> None:
    """Add the preservation subcommands to the ``potsherd`` parser."""
    sp = sub.add_parser("identify", help="name each file's format, version and potsherd "
                        "format id, and what decided it (archive members too)")
    sp.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (folders recurse)")
    sp.add_argument("--json", action="store_true", help="one JSON object per file")
    sp.add_argument("--fast", action="store_true",
                    help="do not decode: formats without magic bytes are named by extension only")
    sp.add_argument("--no-members", action="store_true", help="do not look inside archives")
    common(sp, params=False)
    sp.set_defaults(func=cmd_identify)

    sp = sub.add_parser("signatures", help="write the formats' signatures for DROID and FIDO")
    sp.add_argument("--droid", metavar="FILE", help="DROID signature file (PRONOM XML)")
    sp.add_argument("--fido", metavar="FILE", help="FIDO format XML (fido -loadformats FILE)")
    sp.set_defaults(func=cmd_signatures)
