"""The preservation commands (``identify``, ``signatures``, ``bundle``): argparse
and printing only, on top of :mod:`potsherd.preserve`."""
from __future__ import annotations

import json
import os
import sys

from ..api import UsageError, display_path
from .inputs import limits_from_args

COMMANDS = ("identify", "signatures", "bundle")


def cmd_identify(args) -> int:
    from ..preserve.identify import identify
    limits = limits_from_args(args)
    unreadable = 0
    for r in identify(args.paths, deep=not args.fast, members=not args.no_members,
                      limits=limits):
        r.path = display_path(r.path)
        if r.format is None and (r.error or "").startswith(("unreadable", "not read")):
            unreadable += 1
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
    return 1 if unreadable else 0   # unknown is an answer; a file not read is not


def cmd_signatures(args) -> int:
    from ..core.fileio import atomic_write
    from ..preserve import signatures
    if not args.droid and not args.fido and not args.pages:
        raise UsageError("signatures: name --droid FILE, --fido FILE and/or --pages DIR")
    if args.pages:
        from ..preserve.pages import write_pages
        write_pages(args.pages, samples=args.samples)
    if args.droid:
        atomic_write(args.droid, signatures.droid_xml())
    if args.fido:
        atomic_write(args.fido, signatures.fido_xml())
    return 0


def cmd_bundle(args) -> int:
    from ..preserve import bundle as b
    if args.verify:
        if args.output or args.resume or args.no_access:
            raise UsageError("bundle --verify PACKAGE takes no other option")
        result = b.verify(args.game_dir, workers=args.jobs)
        for line in result.problems:
            print(f"FAIL  {line}")
        print(f"{display_path(args.game_dir)}: {'valid' if result.ok else 'INVALID'}")
        return 0 if result.ok else 1
    if not args.output:
        raise UsageError("bundle GAME_DIR -o PACKAGE (or bundle --verify PACKAGE)")

    def progress(rel, status, res):
        if status != "ok":
            print(f"FAIL  {res}", file=sys.stderr)
    try:
        s = b.bundle(args.game_dir, args.output, resume=args.resume, access=not args.no_access,
                     workers=args.jobs, limits=limits_from_args(args), progress=progress,
                     deep=not args.fast_identify)
    except b.BundleError as e:
        raise UsageError(str(e)) from None
    print(f"{s.files} files: {s.done} bagged, {s.skipped_finished} already done, "
          f"{s.failed} failed; {s.identified} identified, {s.access_copies} access copies; "
          f"{s.seconds:.1f} s")
    if s.failed:
        print(f"incomplete: {s.failed} files failed; fix them and run again with --resume",
              file=sys.stderr)
        return 1
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
    sp.add_argument("--pages", metavar="DIR", help="PRONOM-style format pages (Markdown)")
    sp.add_argument("--samples", action="store_true",
                    help="with --pages: also write sample files made by potsherd's encoders")
    sp.set_defaults(func=cmd_signatures)

    sp = sub.add_parser("bundle", help="bag a game folder for an archive (BagIt): masters, "
                        "access copies, per-file metadata; --verify checks a package")
    sp.add_argument("game_dir", metavar="GAME_DIR", help="the game folder (with --verify: the package)")
    sp.add_argument("-o", "--output", metavar="PACKAGE", help="the package folder to write")
    sp.add_argument("--resume", action="store_true", help="continue an interrupted bundle")
    sp.add_argument("--no-access", action="store_true", help="masters and metadata only")
    sp.add_argument("--fast-identify", action="store_true",
                    help="with --no-access: identify by signature or extension only (no decoding)")
    sp.add_argument("--verify", action="store_true", help="validate the package GAME_DIR names")
    sp.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: one per CPU)")
    common(sp, params=False)
    sp.set_defaults(func=cmd_bundle)
