"""``potsherd textures FILE|DIR ... -o DIR``: the printing of
:func:`potsherd.export.textures.extract_textures`.  Exit status 1 when any file
failed."""
from __future__ import annotations

import sys
from typing import Any

from .. import api
from ..core.wording import count
from ..export.textures import TextureTally, extract_textures, texture_options
from .inputs import limits_from_args


def _texture_options(codec, args) -> dict:
    """``--option``/``--data-root`` for codecs that declare ``texture_options``
    (unknown names are a usage error); nothing for the others."""
    given = {}
    for item in getattr(args, "option", None) or []:
        if "=" not in item:
            raise api.UsageError(f"--option expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        given[k.strip()] = v
    return texture_options(codec, given, getattr(args, "data_root", None))


def run(args: Any) -> int:
    tally = TextureTally()
    quiet = getattr(args, "quiet", False)
    for event, path, detail in extract_textures(
            args.inputs, args.output, limits=limits_from_args(args),
            format=getattr(args, "format", None),
            params=api.parse_params(getattr(args, "param", None)),
            options_for=lambda codec: _texture_options(codec, args), tally=tally):
        if event == "walk-skip":
            print(f"skip  {api.display_path(path)}: {detail}", file=sys.stderr)
        elif event == "fail":
            print(f"FAIL  {api.display_path(path)}: {detail}", file=sys.stderr)
        elif event in ("skip", "warn", "none", "info"):
            print(f"{event:<4}  {path}: {detail}", file=sys.stderr)
        elif not quiet:
            print(f"ok    {path}")
    print(f"{tally.written} PNG written from {count(tally.files, 'file')}, {tally.failed} failed")
    return 0 if tally.failed == 0 else 1
