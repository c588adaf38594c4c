"""``potsherd convert``: the command line of :mod:`potsherd.convert` (both
directions, one file or a folder).  Here the namespace becomes plain values
(a target, a settings dict, limits); what is printed is printed here.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from .. import api
from ..api import UsageError, display_path, parse_options
from ..convert import GLTF_TARGETS, convert_file
from .batch import print_validation, run_convert_folder
from .inputs import limits_from_args


def _target_of(args) -> str:
    if args.to:
        return args.to.lower().lstrip(".")
    ext = os.path.splitext(args.output)[1].lstrip(".").lower()
    return ext


def settings_from_args(args) -> dict:
    """What a conversion needs from the command line, as plain data for workers:
    limits, ``format``, layout ``params``, the family options as text
    (``--option`` plus ``--lod``/``--detail``/``--data-root``), and the FBX
    re-encoding settings."""
    given = api.parse_options(getattr(args, "option", None))
    for flag, name in (("lod", "lod"), ("detail", "detail"), ("data_root", "data_root")):
        value = getattr(args, flag, None)
        if value is not None:
            given.setdefault(name, value)
    return {
        "limits": {k: getattr(args, k, None) for k in
                   ("max_depth", "max_elements", "max_inflated", "max_input")},
        "format": getattr(args, "format", None),
        "params": api.parse_params(getattr(args, "param", None)),
        "scene_options": given,
        "target_version": getattr(args, "target_version", None),
        "param": list(getattr(args, "param", None) or []),
    }


def run_import(args: Any, target: str) -> int:
    """``potsherd convert IN.glb OUT.EXT``: the import branch of the command."""
    from ..importer import OptionError, _load_like, scene_to_files, target_codec
    limits = limits_from_args(args)
    try:
        options = parse_options(getattr(args, "option", None))
        like = _load_like(getattr(args, "like", None), limits)
        codec = target_codec(args.output, getattr(args, "to", None) or None, like)
        if getattr(args, "target_version", None) is not None and \
                any(o.name == "version" for o in codec.import_options):
            options.setdefault("version", str(args.target_version))
        from ..core.gcpolicy import collector_paused
        from ..scene.gltf_read import read_gltf
        # (an import builds many small acyclic containers: a 100k-triangle
        # progressive mesh spends a third of its time in collections otherwise)
        with collector_paused():
            scene = read_gltf(args.input, limits=limits)
            summary = scene_to_files(scene, args.output, codec, like=like, options=options)
    except OptionError as e:
        raise UsageError(str(e)) from None
    from ..api import printable
    for w in summary["warnings"]:
        print(f"potsherd: warning: {printable(w)}", file=sys.stderr)
    for path, size in summary["files"]:
        print(f"{display_path(path)}: {size} bytes", flush=True)
    return 0


def run(args) -> int:
    settings = settings_from_args(args)
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    is_folder = args.input != api.STDIO and os.path.isdir(args.input)
    if is_folder:
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise UsageError(f"{display_path(args.output)} exists and is not a folder")
        like_dir = getattr(args, "like", None)
        if like_dir is not None and not os.path.isdir(like_dir):
            raise UsageError("with a folder input, --like names the folder of the originals "
                             "the glTF files were exported from")
        if like_dir is not None and (args.to or "").lower().lstrip(".") in GLTF_TARGETS:
            raise UsageError("--like is for importing glTF files back into game formats")
        if not args.to and like_dir is None:
            raise UsageError("folder conversion needs --to (e.g. --to glb)")
        return run_convert_folder(args.input, args.output, _target_of(args) if args.to else "",
                                  settings, jobs=args.jobs or 0,
                                  validate=bool(getattr(args, "validate", False)),
                                  timeout=args.timeout, like_dir=like_dir)
    target = _target_of(args)
    if not target:
        raise UsageError("say the target with --to (glb, gltf, binary, ascii) or an output "
                         "file extension")
    from .. import importer
    if target not in GLTF_TARGETS and importer.is_gltf_path(args.input):
        return run_import(args, target)      # glTF -> a game format
    output = args.output
    if output != api.STDIO and os.path.isdir(output):
        if args.input == api.STDIO:
            raise UsageError("reading standard input: name the output file, not a folder")
        stem = os.path.splitext(os.path.basename(args.input))[0]
        ext = ("." + target) if target in GLTF_TARGETS else os.path.splitext(args.input)[1]
        output = os.path.join(output, stem + ext)
    stream = api.summary_stream(output)
    summary = convert_file(args.input, output, target, settings)
    for w in summary.get("warnings", []):
        print(f"potsherd: warning: {api.printable(w)}", file=sys.stderr)
    print(f"{display_path(output)}: {summary['bytes']} bytes", flush=True,
          file=stream)
    if getattr(args, "validate", False) and target in GLTF_TARGETS and output != api.STDIO:
        return print_validation([output])
    return 0
