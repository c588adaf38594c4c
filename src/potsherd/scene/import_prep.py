"""What a glTF means where it is implicit, and what a target cannot hold.

Every importer starts here (:func:`prepare`), with a :class:`Holds` saying
what its format stores.  The glTF rules applied once for all of them:

* a triangle primitive without ``NORMAL`` has flat normals (glTF 2.0, 3.7.2.1:
  "client implementations MUST calculate flat normals"); the primitive is
  given them, each triangle on its own corners, re-welded where neighbouring
  corners agree on every attribute (coplanar faces share vertices again);
* morph targets nothing animates are held at their default weights (the
  node's, else the mesh's) by :func:`~potsherd.scene.ops.triangle_sets` and
  the families' own readers; a format without morphs is told here, once;
* a glTF feature the format cannot hold (vertex colours, morph targets) is
  named in ``scene.warnings`` once per import, never dropped silently;
* vertex colours on a target with textures but no colours are baked into new
  textures (:mod:`.bake_colors`: factor x texture x COLOR_0), the warning
  naming what detail that lost;
* a target that holds no material at all (a bare mesh file, whose texture
  and colour are named by the file that uses it) names the materials that
  showed something (a texture, a colour factor, alpha), and where to keep them.

The scene given is not changed: the result shares its nodes, materials and
``warnings`` list, with new meshes where primitives were completed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import numpy as np

from .bake_colors import bake_colors
from .geometry import weld
from .model import Mesh, Primitive, Scene

__all__ = ["Holds", "prepare", "flat_normals", "warn_once"]


@dataclass(frozen=True)
class Holds:
    """What one import target stores of a glTF scene (declared by its importer)."""

    #: the name warnings give the target (``n3pmesh``, ``dts``...)
    format: str
    #: per-vertex normals are stored (the importer is then given flat normals
    #: where the glTF has none)
    normals: bool = True
    #: vertex colours without normals are pre-lit shades (TR): such a primitive
    #: is left without normals for the importer to read as shades, and its
    #: colours are not ``vertex_colors`` the format lacks (colours beside
    #: normals are: baked or named like any other)
    shades: bool = False
    #: vertex colours (COLOR_0) are stored
    vertex_colors: bool = False
    #: a base colour texture is stored (vertex colours are then baked into it)
    texture: bool = False
    #: material extras naming the original texture (the importer would read them
    #: over a baked material's new texture, so the baked material drops them)
    texture_extras: tuple = ()
    #: morph targets are stored (else the shape at the default weights is kept)
    morph_targets: bool = False
    #: the importer names dropped morph targets itself (no second warning)
    names_morph_loss: bool = False
    #: a material (base colour, its texture, alpha) is stored, in the file or in
    #: one it writes beside it; a bare mesh format has none
    materials: bool = True
    #: what to import to instead, for the warning of a format without materials
    materials_elsewhere: str = ""


def warn_once(scene: Scene, message: str) -> None:
    """Append ``message`` to ``scene.warnings`` unless it is already there."""
    if message not in scene.warnings:
        scene.warnings.append(message)


def flat_normals(p: Primitive) -> Primitive:
    """``p`` (triangles) with the flat normals glTF gives a primitive without
    ``NORMAL``: each corner takes its triangle's face normal (counter-clockwise
    front); corners that then agree on every attribute are one vertex again.
    A degenerate triangle (or one with a non-finite or overflowing corner)
    gets (0, 1, 0)."""
    from .ops import _rows
    n = len(p.positions)
    idx = np.arange(n, dtype=np.int64) if p.indices is None else \
        np.asarray(p.indices, dtype=np.int64).reshape(-1)
    idx = idx[:len(idx) - len(idx) % 3]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        return p                         # (the importer refuses such indices by name)
    corners = _rows(p, idx, np.arange(len(idx), dtype=np.int64))
    pos = np.asarray(corners.positions, np.float64).reshape(-1, 3, 3)
    with np.errstate(invalid="ignore", over="ignore"):   # inf/NaN corners: degenerate
        face = np.cross(pos[:, 1] - pos[:, 0], pos[:, 2] - pos[:, 0])
        length = np.linalg.norm(face, axis=1, keepdims=True)
    ok = np.isfinite(length[:, 0]) & (length[:, 0] > 0)
    unit = np.tile(np.array([0.0, 1.0, 0.0]), (len(face), 1))
    unit[ok] = face[ok] / length[ok]
    corners.normals = np.repeat(unit, 3, axis=0).astype(np.float32)
    from .ops import weld_primitive
    return weld_primitive(corners)


def _colored(p: Primitive) -> bool:
    return p.colors is not None and len(p.colors) > 0


def _shades(p: Primitive, holds: Holds) -> bool:
    """Whether the importer reads ``p``'s colours as shades (``Holds.shades``)."""
    return holds.shades and _colored(p) and p.normals is None


def prepare(scene: Scene, holds: Holds) -> Scene:
    """``scene`` as the importer of ``holds.format`` should read it (module
    docstring): flat normals filled in, one warning per glTF feature the format
    cannot hold.  Returns ``scene`` itself when nothing needs filling."""
    filled = 0
    meshes: list = []
    changed = False
    colored = morphs = 0
    for mesh in scene.meshes:
        prims = []
        for p in mesh.primitives:
            colored += _colored(p) and not _shades(p, holds)
            morphs += bool(p.targets)
            if holds.normals and p.mode == 4 and p.normals is None and \
                    p.positions is not None and len(p.positions) and \
                    not (holds.shades and _colored(p)):
                p = flat_normals(p)
                filled += 1
            prims.append(p)
        if any(a is not b for a, b in zip(prims, mesh.primitives)):
            changed = True
            mesh = dataclasses.replace(mesh, primitives=prims)
        meshes.append(mesh)
    if morphs and not holds.morph_targets and not holds.names_morph_loss:
        warn_once(scene, f"{holds.format}: morph targets of {morphs} primitive(s) dropped (the "
                         "format has none); the shape at their default weights is kept")
    out = dataclasses.replace(scene, meshes=meshes) if changed else scene
    if colored and not holds.vertex_colors and holds.texture:
        out, notes = bake_colors(out, drop_extras=holds.texture_extras,
                                 keep=(lambda p: _shades(p, holds)) if holds.shades else None)
        notes["dropped"] = colored - notes["primitives"] - notes["white"]  # (lines, points)
        warn_once(scene, _baked_warning(holds.format, notes))
    elif colored and not holds.vertex_colors:
        warn_once(scene, f"{holds.format}: vertex colours (COLOR_0) of {colored} primitive(s) "
                         "dropped: the format has none")
    if not holds.materials:
        _warn_materials(scene, holds)
    return out


def _shows(m) -> list:
    """What of material ``m`` draws differently from no material at all."""
    what = []
    if m.base_color_texture is not None:
        what.append("base colour texture")
    if any(abs(float(c) - 1.0) > 1e-6 for c in tuple(m.base_color)[:3]):
        what.append("base colour")
    if m.alpha_mode != "OPAQUE":
        what.append(f"alpha ({m.alpha_mode})")
    return what


def _warn_materials(scene: Scene, holds: Holds) -> None:
    """One warning naming the materials a format without any drops (a bare mesh)."""
    used = sorted({p.material for mesh in scene.meshes for p in mesh.primitives
                   if p.material is not None and 0 <= p.material < len(scene.materials)})
    lost: dict = {}
    for i in used:
        for what in _shows(scene.materials[i]):
            lost.setdefault(what, []).append(scene.materials[i].name or f"#{i}")
    if not lost:
        return
    said = "; ".join(f"{what} of {', '.join(repr(n) for n in names[:3])}"
                     f"{' and others' if len(names) > 3 else ''}" for what, names in lost.items())
    warn_once(scene, f"{holds.format}: materials not written ({said}): the format holds no "
                     "material" + (f"; {holds.materials_elsewhere}" if holds.materials_elsewhere
                                   else ""))


def _baked_warning(fmt: str, notes: dict) -> str:
    """The one warning of a bake: what was baked, and each kind of detail lost."""
    said = [f"{fmt}: vertex colours (COLOR_0) of {notes['primitives']} primitive(s) baked "
            "into new base colour textures (the format has no vertex colours)"
            if notes["primitives"] else f"{fmt}: the format has no vertex colours"]
    if notes.get("white"):
        said.append(f"vertex colours (COLOR_0) of {notes['white']} primitive(s) all white: "
                    "dropped, which changes nothing drawn")
    for why, n in notes["atlas"].items():
        said.append(f"{n} given their own atlas UVs ({why}; tiling and UV seams are not kept)")
    if notes.get("small"):
        said.append(f"{notes['small']} triangle(s) smaller than a texel: their colour is averaged "
                    "into it")
    if notes.get("flat"):
        said.append(f"{notes['flat']} triangle(s) one texel each: their colour gradients flattened")
    if notes.get("shrunk"):
        k, want = notes["shrunk"]
        said.append(f"atlas cells of {k} texels (their texture wanted {want}): texture detail lost")
    if notes.get("dropped"):
        said.append(f"vertex colours (COLOR_0) of {notes['dropped']} primitive(s) dropped "
                    "(not triangles, not RGB/RGBA, an unreadable texture, or too many triangles "
                    "for one texture)")
    return "; ".join(said)


# ---- what an import chose, for the way back ------------------------------------------

#: the file beside an imported one holding what its format has no room for
SIDECAR_SUFFIX = ".potsherd.json"
#: a sidecar is a few numbers; anything larger is not one of ours
MAX_SIDECAR = 4096


def sidecar_path(path: str) -> str:
    """The sidecar of the file ``path``: ``path`` + ``.potsherd.json``."""
    return path + SIDECAR_SUFFIX


def read_sidecar(path: str | None) -> dict:
    """The choices an import wrote beside ``path`` (``{}`` when there is no
    sidecar, or it is not a small regular file of a JSON object): the export
    reads them back (TR's unit scale), so import then export gives the size the
    user imported."""
    import json
    import os
    import stat
    if not path:
        return {}
    side = sidecar_path(os.fspath(path))
    try:
        st = os.stat(side)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SIDECAR:
            return {}
        with open(side, "rb") as f:
            data = json.loads(f.read(MAX_SIDECAR).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
