"""glTF (or any scene) into a game format: ``potsherd.import_gltf`` and the
import side of ``potsherd convert IN.glb OUT.EXT``.

The plumbing is the same for every family: read the glTF into the neutral
:class:`~potsherd.scene.Scene`, pick the target codec (``--to`` or OUT's
extension), check the family options against the codec's declared
``import_options``, call ``codec.from_scene(scene, like=..., out_name=...,
out_dir=..., **options)``, encode every document it returns, and only then write them,
each atomically, the companions first and OUT last (so a failed import
leaves no half set and an interrupted one no OUT).
"""
from __future__ import annotations

import os
from typing import Any

from .core.errors import EncodeError, FormatError
from .core.fileio import atomic_write_all
from .errors import NoImportError, SceneImportError
from .core.limits import DEFAULT_LIMITS, Limits
from .document import Document
from .registry import Codec, coerce_options

__all__ = ["import_gltf", "scene_to_files", "convert_via_scene", "goes_through_scene", "target_codec", "is_gltf_path", "NoImportError",
           "SceneImportError", "OptionError"]

GLTF_EXTENSIONS = (".glb", ".gltf")


class OptionError(ValueError):
    """An unknown option, or a value that is not of the declared type (usage error)."""


def is_gltf_path(path: str | os.PathLike) -> bool:
    """By extension, or (for odd names) by the GLB magic."""
    p = os.fspath(path)
    if p.lower().endswith(GLTF_EXTENSIONS):
        return True
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"glTF"
    except OSError:
        return False


def target_codec(dst: str | os.PathLike, format: str | None = None,
                 like: Document | None = None) -> Codec:
    """The codec that writes ``dst``: ``format`` (a codec name, an extension, or
    FBX's ``binary``/``ascii``), else the ``like`` document's codec when it
    claims the extension, else the first codec of the extension that imports.

    Raises :class:`OptionError` when nothing claims the name (a usage error)
    and :class:`NoImportError` when the codecs that do cannot import."""
    from . import registry
    ext = os.path.splitext(os.fspath(dst))[1].lower()
    all_codecs = registry.codecs()
    if format:
        f = format.lower().lstrip(".")
        if f in ("binary", "ascii") and ext in (".fbx", ""):
            f = "fbx" if f == "binary" else "fbx-ascii"
        named = [c for c in all_codecs if c.name == f]
        cands = named or [c for c in all_codecs if "." + f in c.extensions]
        what = f"format {format!r}"
    else:
        cands = [c for c in all_codecs if ext in c.extensions]
        what = f"extension {ext!r}" if ext else "an output without extension"
        if like is not None and like.codec in cands:
            cands = [like.codec] + [c for c in cands if c is not like.codec]
    if not cands:
        raise OptionError(f"no format for {what}; say it with --to (see `potsherd formats`)")
    importing = [c for c in cands if c.from_scene is not None]
    if not importing:
        names = ", ".join(c.name for c in cands)
        raise NoImportError(f"{names} cannot be made from glTF yet (the {cands[0].family} "
                            "family has no from_scene)")
    return importing[0]


def _check_name(name: Any, index: int) -> str:
    if not isinstance(name, str) or not name:
        raise SceneImportError(f"from_scene returned file {index} without a name")
    norm = os.path.normpath(name)
    if os.path.isabs(name) or norm.startswith("..") or norm in (".", ""):
        raise SceneImportError(f"from_scene returned {name!r}, which is outside the output's "
                               "folder")
    return norm


def scene_to_files(scene: Any, dst: str | os.PathLike, codec: Codec, *,
                   like: Document | None = None, options: dict | None = None,
                   what: str = "") -> dict:
    """Run ``codec.from_scene`` and write what it returns; returns a summary
    (``path``, ``bytes``, ``files`` [(path, bytes)], ``format``, ``warnings``).

    ``options`` are checked with :func:`coerce_options` against the codec's
    ``import_options`` (:class:`OptionError` for unknown names or bad values)."""
    dst = os.fspath(dst)
    try:
        opts = coerce_options(codec.import_options, dict(options or {}),
                              what=what or f"{codec.name} import")
    except ValueError as e:
        raise OptionError(str(e)) from None
    from_scene = codec.from_scene
    folder = os.path.dirname(os.path.abspath(dst))
    try:
        result = from_scene(scene, like=like, out_name=os.path.basename(dst), out_dir=folder, **opts)
    except FormatError:
        raise
    except NotImplementedError as e:
        raise NoImportError(f"{codec.name} cannot be made from this scene: {e}") from None
    except (RecursionError, MemoryError) as e:
        raise FormatError(f"{codec.name}: scene too large or deep to import "
                          f"({type(e).__name__})") from None
    except Exception as e:  # noqa: BLE001 - a family bug must not be a traceback
        raise SceneImportError(f"internal error in {codec.name} from_scene: "
                               f"{type(e).__name__}: {e}") from e
    if isinstance(result, Document):
        pairs = [(os.path.basename(dst), result)]
    elif isinstance(result, (list, tuple)) and result:
        pairs = list(result)
    else:
        raise SceneImportError(f"{codec.name} from_scene returned {type(result).__name__}, "
                               "not a Document or a list of (name, Document)")
    encoded = []
    for i, item in enumerate(pairs):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Document)):
            raise SceneImportError(f"{codec.name} from_scene item {i} is not (name, Document)")
        path = dst if i == 0 else os.path.join(folder, _check_name(item[0], i))
        try:
            data = item[1].encode()
        except FormatError as e:
            raise EncodeError(f"{codec.name} from_scene made a document that does not encode "
                              f"({os.path.basename(path)}): {e}") from None
        encoded.append((path, data))
    side = pairs[0][1].meta.get("import_sidecar") if isinstance(pairs[0][1].meta, dict) else None
    if isinstance(side, dict) and side:
        # what the format has no room for (TR's unit scale), for the export to read back
        import json
        from .scene.import_prep import sidecar_path
        encoded.insert(1, (sidecar_path(dst), json.dumps(side, sort_keys=True).encode()))
    # every file staged, then renamed as one set (OUT last): an interruption
    # leaves all the old files or all the new ones
    atomic_write_all(encoded[1:] + encoded[:1])
    return {"path": dst, "bytes": len(encoded[0][1]), "format": codec.name,
            "files": [(p, len(d)) for p, d in encoded], "warnings": list(scene.warnings)}


def _load_like(like: Any, limits: Limits) -> Document | None:
    if like is None or isinstance(like, Document):
        return like
    from .api import read_document
    return read_document(like, limits=limits)


def import_gltf(src: Any, dst: str | os.PathLike, *, format: str | None = None,
                like: Any = None, options: dict | None = None,
                limits: Limits = DEFAULT_LIMITS) -> dict:
    """Import a ``.glb``/``.gltf`` (path or bytes) into ``dst``.

    ``format``: the target codec name or extension (default: ``dst``'s
    extension); ``like``: the original file (path or :class:`Document`) whose
    fields glTF cannot express are kept; ``options``: the family's declared
    import options (text values are converted to their declared types).
    Returns the summary of :func:`scene_to_files`; lossy choices are in its
    ``warnings``.  Raises :class:`FormatError` for bad input or a target that
    cannot import, :class:`OptionError` for unknown options.
    """
    from .scene.gltf_read import read_gltf
    like_doc = _load_like(like, limits)
    codec = target_codec(dst, format, like_doc)
    scene = read_gltf(src, limits=limits)
    return scene_to_files(scene, dst, codec, like=like_doc, options=options)


def goes_through_scene(doc: Document, target: str) -> bool:
    """True when ``doc`` reaches ``target`` only through the neutral scene: the
    source has ``to_scene``, the target codec has ``from_scene``, and the source
    has no direct conversion to it (a different family)."""
    if doc.codec.to_scene is None:
        return False
    try:
        codec = target_codec("out." + target, target)
    except (OptionError, FormatError):
        return False
    return codec.family != doc.codec.family or doc.codec.convert is None


def convert_via_scene(doc: Document, dst: str | os.PathLike, target: str,
                      options: dict, *, version: int | None = None) -> dict:
    """``potsherd convert IN.n3chr OUT.fbx``: ``to_scene`` then the target's
    ``from_scene``.  ``options`` are the family options as given; the names the
    target declares in ``import_options`` go to ``from_scene`` (``--version`` as
    ``version``), the others are checked against the source codec's
    ``export_options`` and go to ``to_scene``."""
    from .api import scene_options
    from .export.gltf import document_scene
    codec = target_codec(dst, target)
    declared = {o.name for o in codec.import_options}
    imp = {k: v for k, v in options.items() if k in declared and v is not None}
    if version is not None and "version" in declared:
        imp["version"] = version
    exp = scene_options(doc.codec, {k: v for k, v in options.items() if k not in declared})
    scene = document_scene(doc, exp)
    return scene_to_files(scene, dst, codec, options=imp)
