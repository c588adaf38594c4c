"""``potsherd info`` summaries of FBX documents: version, creator, objects by class
and subclass, and an outline of the top-level nodes."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ...document import Document
from .model import FbxNode


def fbx_info(doc: Document, name: str, family: str) -> dict:
    """The summary of ``doc`` (a binary or ASCII FBX; ``name`` is its codec's)."""
    root: FbxNode = doc.root
    out: dict[str, Any] = {"format": name, "family": family,
                           "version": doc.params.get("version")}
    creator = _text_of(root.find(b"Creator"))
    hdr = root.find(b"FBXHeaderExtension")
    if creator is None and hdr is not None:
        creator = _text_of(hdr.find(b"Creator"))
    out["creator"] = creator
    out["objects"] = object_counts(root)
    out["outline"] = outline(root)
    return out


def _text_of(node: FbxNode | None) -> str | None:
    if node is None or not node.props:
        return None
    code, v = node.props[0]
    if code == "S":
        return v.decode("utf-8", "replace")
    if code == "s":
        return v.encode("latin-1").decode("utf-8", "replace")
    return None


def _str_prop(props: list, i: int) -> str | None:
    if i < len(props) and props[i][0] in ("S", "s"):
        v = props[i][1]
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
    return None


def object_counts(root: FbxNode) -> dict:
    """Objects by class (node name) and by class/subclass (last string prop)."""
    objects = root.find(b"Objects")
    nodes = objects.children or [] if objects is not None else []
    if objects is None:  # 5.x keeps objects at top level
        nodes = [n for n in root.children or () if n.name in
                 (b"Model", b"Material", b"Texture", b"Video", b"Deformer", b"Pose")]
    by_class: Counter = Counter()
    by_sub: Counter = Counter()
    for n in nodes:
        cls = n.name.decode("latin-1")
        by_class[cls] += 1
        sub = None
        strings = [i for i, (c, _) in enumerate(n.props) if c in ("S", "s")]
        if len(strings) >= 2:
            sub = _str_prop(n.props, strings[-1])
        if sub:
            by_sub[f"{cls}/{sub}"] += 1
    return {"by_class": dict(sorted(by_class.items())),
            "by_subclass": dict(sorted(by_sub.items()))}


def outline(root: FbxNode, depth: int = 2) -> list[str]:
    """Top-level nodes with their children's names (counts for repeats)."""
    lines = []
    for n in root.children or ():
        name = n.name.decode("latin-1")
        if n.children is None:
            lines.append(f"{name} ({len(n.props)} props)")
            continue
        counts = Counter(c.name.decode("latin-1") for c in n.children)
        kids = ", ".join(k if v == 1 else f"{k} x{v}" for k, v in counts.items())
        lines.append(f"{name} {{{kids}}}" if kids else f"{name} {{}}")
    return lines
