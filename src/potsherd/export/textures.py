"""``potsherd textures FILE|DIR ... -o DIR``: extract textures to PNG.

Works for every codec with a ``textures(doc)`` method (returning
``[(name, PIL.Image or PNG bytes), ...]``).  Folders are walked (files of
unknown extension skipped); the output mirrors each input folder's structure.
Walking a folder only visits files whose extension belongs to a codec with
``textures``; a file named explicitly is decoded and reported when its codec
has none.  Exit status 1 when any file failed.
"""
from __future__ import annotations

import io
import os
import re
import sys

from ..core.wording import count
from .. import api
from ..core.errors import FormatError
from ..core.fileio import atomic_write

_UNSAFE = re.compile(r"[^\w.\- ]+", re.UNICODE)


def _safe(name: str) -> str:
    name = _UNSAFE.sub("_", name).strip(" .")
    return name or "texture"


def _png_bytes(image) -> bytes:
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _has_texture_codec(path: str) -> bool:
    """True when a codec for this extension can extract textures (folders only
    walk those, so other formats are not decoded for nothing)."""
    from .. import registry
    ext = os.path.splitext(path)[1].lower()
    return any(ext in c.extensions and c.textures is not None for c in registry.codecs())


def _jobs(inputs: list[str]):
    """(path, output subfolder, named explicitly) for every input file."""
    from .. import registry
    for p in inputs:
        if os.path.isdir(p):
            for entry in api.walk_inputs([p], registry.known_extension):
                fp = entry.path
                if entry.skipped is not None:
                    print(f"skip  {api.display_path(fp)}: {entry.skipped}", file=sys.stderr)
                    continue
                if entry.error is not None:
                    yield fp, entry.error, None
                    continue
                if not _has_texture_codec(fp):
                    continue
                rel = os.path.relpath(os.path.dirname(fp), p)
                yield fp, ("" if rel == "." else rel), False
        else:
            yield p, "", True


def _texture_options(codec, args) -> dict:
    """``--option``/``--data-root`` for codecs that declare ``texture_options``
    (unknown names are a usage error); nothing for the others."""
    declared = codec.texture_options
    given = {}
    for item in getattr(args, "option", None) or []:
        if "=" not in item:
            from ..api import UsageError
            raise UsageError(f"--option expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        given[k.strip()] = v
    if not declared:
        return {}
    from ..registry import coerce_options
    from ..api import UsageError
    try:
        opts = coerce_options(declared, given, what=codec.name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if getattr(args, "data_root", None) and any(o.name == "data_root" for o in declared):
        opts["data_root"] = args.data_root
    return opts


def run(args) -> int:
    limits = api.make_limits(**{k: getattr(args, k, None) for k in
                                ("max_depth", "max_elements", "max_inflated", "max_input")})
    params = api.parse_params(getattr(args, "param", None))
    out_dir = args.output
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise NotADirectoryError(20, os.strerror(20), out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise OSError(e.errno, e.strerror, out_dir) from None
    files = written = failed = 0
    used: set[str] = set()
    for path, sub, explicit in _jobs(args.inputs):
        if explicit is None:      # an unreadable folder of the walk
            print(f"FAIL  {api.display_path(path)}: {sub}", file=sys.stderr)
            failed += 1
            continue
        try:
            _, doc = api.read_doc(path, limits=limits, format=getattr(args, "format", None),
                                  params=params)
        except FormatError as e:
            print(f"FAIL  {api.display_path(path)}: {e}", file=sys.stderr)
            failed += 1
            continue
        except OSError as e:
            print(f"FAIL  {api.display_path(path)}: {e.strerror or e}", file=sys.stderr)
            failed += 1
            continue
        extract = doc.codec.textures
        if extract is None:
            if explicit:
                print(f"skip  {path}: {doc.format} holds no textures", file=sys.stderr)
            continue
        files += 1
        before = len(doc.warnings)
        try:
            images = extract(doc, **_texture_options(doc.codec, args))
        except FormatError as e:
            print(f"FAIL  {api.display_path(path)}: {e}", file=sys.stderr)
            failed += 1
            continue
        for w in doc.warnings:
            print(f"warn  {path}: {w}", file=sys.stderr)
        if len(doc.warnings) > before:  # extraction warns for each texture it cannot decode
            failed += 1
        if not images:
            if len(doc.warnings) == before:  # e.g. a sprite file with no sprites
                print(f"none  {path}: {doc.format} file holds no textures", file=sys.stderr)
            continue
        target_dir = os.path.join(out_dir, sub)
        os.makedirs(target_dir, exist_ok=True)
        for name, image in images:
            base = os.path.join(target_dir, _safe(name))
            dest, k = base + ".png", 1
            while os.path.normcase(dest) in used:  # e.g. a.dxt and a.DXT in one folder
                k += 1
                dest = f"{base}~{k}.png"
            used.add(os.path.normcase(dest))
            atomic_write(dest, _png_bytes(image))
            written += 1
            if not getattr(args, "quiet", False):
                print(f"ok    {dest}")
    print(f"{written} PNG written from {count(files, 'file')}, {failed} failed")
    return 0 if failed == 0 else 1
