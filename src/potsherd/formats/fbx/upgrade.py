"""``Codec.convert`` of the FBX codecs: binary <-> ASCII and version changes.

Between 7100 and 7700 the node model is the same and the file is transcoded node
by node (:mod:`.transcode`); a file before 7100 is upgraded through the neutral
scene (read by :mod:`.scene`, written by :mod:`.importing`).
"""
from __future__ import annotations

from typing import Any

from ...core.errors import EncodeError
from ...document import Document
from .transcode import (COMPRESS_MIN, _cli_params, _real_version, ascii_tree_to_binary,
                        to_ascii, to_binary)


def convert_document(doc: Document, target: str, options: dict) -> bytes:
    target = target.lower()
    version = options.get("target_version")
    params = _cli_params(options.get("param"))
    compression = options.get("compression") or params.get("compression")
    if compression is not None and compression not in COMPRESS_MIN:
        raise EncodeError(f"compression must be sdk, blender or none, not {compression!r}")
    if version is not None:
        source = _real_version(doc) if doc.format == "fbx" else doc.params.get("version")
        if int(source or 0) < 7100 <= int(version) <= 7700 and \
                target in ("binary", "fbx", "ascii", "fbx-ascii"):
            return upgrade_through_scene(doc, int(version), target in ("binary", "fbx"))
        if int(version) != source and not (7100 <= int(version) <= 7700 and
                                           7100 <= int(source or 0) <= 7700):
            raise EncodeError(f"version change {source} -> {version} is not supported: only "
                              "between 7100 and 7700, where the node model is the same")
    if target in ("binary", "fbx"):
        return to_binary(doc, version, compression).encode()
    if target in ("ascii", "fbx-ascii"):
        return to_ascii(doc, version).encode()
    raise EncodeError(f"FBX converts to binary or ascii, not {target!r}")


def upgrade_through_scene(doc: Document, version: int, binary: bool) -> bytes:
    """A 3000-6100 file (binary or ASCII) as FBX 7.x: its node model differs
    (no Objects/Connections ids, Takes instead of stacks), so it is read into
    the neutral scene and written by :mod:`.importing`, which folds the axis and
    unit wrapper back into GlobalSettings.  What the scene does not hold
    (cameras, lights, custom properties) is not carried over; the notes are
    added to ``doc.warnings``."""
    from .scene import to_scene
    from .importing import scene_to_fbx
    scene = to_scene(doc)
    _keep_take_spans(doc, scene)
    out = scene_to_fbx(scene, version=version, binary=binary).encode()
    doc.warnings.extend(w for w in scene.warnings if w not in doc.warnings)
    return out


def _keep_take_spans(doc: Document, scene: Any) -> None:
    """Give every 5.x/6.x Take its stack, with its LocalTime span, even when it
    animates nothing the scene holds (applications list and play it)."""
    from ...scene import Animation
    from .objects import KTIME_PER_SECOND
    root = doc.root
    if doc.format == "fbx-ascii":
        root = ascii_tree_to_binary(root, "none")
    takes = root.find(b"Takes")
    by_name = {a.name: a for a in scene.animations}
    for take in takes.find_all(b"Take") if takes is not None else ():
        if not take.props or take.props[0][0] != "S":
            continue
        name = take.props[0][1].decode("utf-8", "replace")
        local = take.find(b"LocalTime")
        span = None
        if local is not None and len(local.props) >= 2 and \
                all(c in "LI" for c, _ in local.props[:2]):
            span = [local.props[0][1] / KTIME_PER_SECOND, local.props[1][1] / KTIME_PER_SECOND]
        anim = by_name.get(name)
        if anim is None:
            anim = Animation(name=name)
            scene.animations.append(anim)
            by_name[name] = anim
        if span is not None and span[1] >= span[0]:
            anim.extras["fbx_time_span"] = span
