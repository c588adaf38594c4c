"""Texture extraction to PNG (``potsherd textures FILE|DIR ... -o DIR``, whose
printing is in :mod:`potsherd.cli.textures`).

Works for every codec with a ``textures(doc)`` method (returning
``[(name, PIL.Image or PNG bytes), ...]``).  Folders are walked (files of
unknown extension skipped); the output mirrors each input folder's structure.
Walking a folder only visits files whose extension belongs to a codec with
``textures``; a file named explicitly is decoded and reported when its codec
has none.
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import api
from ..core.errors import FormatError
from ..core.fileio import atomic_write
from ..core.limits import DEFAULT_LIMITS, Limits

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
    """(path, output subfolder, named explicitly) for every input file; a path
    the walk passes over comes as (path, reason, "skip") and an unreadable
    folder as (path, error, None)."""
    from .. import registry
    for p in inputs:
        if os.path.isdir(p):
            for entry in api.walk_inputs([p], registry.known_extension):
                fp = entry.path
                if entry.skipped is not None:
                    yield fp, entry.skipped, "skip"
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


def texture_options(codec, given: dict, data_root: str | None = None) -> dict:
    """The options for ``codec.textures`` from ``given`` (name -> text): checked
    and typed against the codec's ``texture_options`` (unknown names are a usage
    error); nothing for codecs that declare none.  ``data_root`` is passed to a
    codec that declares it."""
    declared = codec.texture_options
    if not declared:
        return {}
    from ..registry import coerce_options
    from ..api import UsageError
    try:
        opts = coerce_options(declared, dict(given), what=codec.name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if data_root and any(o.name == "data_root" for o in declared):
        opts["data_root"] = data_root
    return opts


def _takes_info(extract: Callable) -> bool:
    """Does a codec's ``textures`` take ``info(path, text)`` (or any keyword)?"""
    import inspect
    try:
        params = inspect.signature(extract).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "info" or p.kind is p.VAR_KEYWORD for p in params)


@dataclass
class TextureTally:
    """What :func:`extract_textures` did: PNG files written, files with
    textures, and failures (a file that does not decode, or a texture that
    could not be drawn)."""

    written: int = 0
    files: int = 0
    failed: int = 0


def extract_textures(inputs: list[str], out_dir: str, *, limits: Limits = DEFAULT_LIMITS,
                     format: str | None = None, params: dict | None = None,
                     options_for: Callable[[Any], dict] | None = None,
                     tally: TextureTally | None = None) -> Iterator[tuple[str, str, str]]:
    """Extract the textures of files and folders to PNG files under ``out_dir``
    (mirroring each input folder), yielding what happened as ``(event, path,
    detail)``: ``walk-skip`` (a path the walk passed over), ``fail``,
    ``skip`` (a file named explicitly whose format holds no textures), ``warn``,
    ``none`` (a file holding no textures), ``info`` (what an extractor chose,
    e.g. a Darkstar bitmap's palette; ``path`` the file or member), ``ok``
    (``path`` the PNG written).
    ``options_for(codec)``: the options of that codec's ``textures`` (see
    :func:`texture_options`).  Counts go to ``tally``."""
    tally = TextureTally() if tally is None else tally
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise NotADirectoryError(20, os.strerror(20), out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise OSError(e.errno, e.strerror, out_dir) from None
    used: set[str] = set()
    for path, sub, explicit in _jobs(inputs):
        if explicit == "skip":
            yield "walk-skip", path, sub
            continue
        if explicit is None:      # an unreadable folder of the walk
            yield "fail", path, sub
            tally.failed += 1
            continue
        try:
            _, doc = api.read_doc(path, limits=limits, format=format, params=params)
        except FormatError as e:
            yield "fail", path, str(e)
            tally.failed += 1
            continue
        except OSError as e:
            yield "fail", path, str(e.strerror or e)
            tally.failed += 1
            continue
        extract = doc.codec.textures
        if extract is None:
            if explicit:
                yield "skip", path, f"{doc.format} holds no textures"
            continue
        tally.files += 1
        before = len(doc.warnings)
        options = dict(options_for(doc.codec)) if options_for else {}
        infos: list[tuple[str, str]] = []
        if _takes_info(extract):
            options["info"] = lambda where, text: infos.append((where, text))
        try:
            images = extract(doc, **options)
        except FormatError as e:
            yield from (("info", where, text) for where, text in infos)
            yield "fail", path, str(e)
            tally.failed += 1
            continue
        for where, text in infos:
            yield "info", where, text
        for w in doc.warnings:
            yield "warn", path, w
        if len(doc.warnings) > before:  # extraction warns for each texture it cannot decode
            tally.failed += 1
        if not images:
            if len(doc.warnings) == before:  # e.g. a sprite file with no sprites
                yield "none", path, f"{doc.format} file holds no textures"
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
            tally.written += 1
            yield "ok", dest, ""
