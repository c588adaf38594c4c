"""glTF scene -> ``TS::Shape`` (.dts) and ``TS::MaterialList`` (.dml).

The scene is first read back as shape parts (:mod:`.model`), then encoded:

* nodes with their default transforms first in the transform table, then the
  keyframe transforms; the stored quaternion is the conjugate of the glTF
  rotation (the engine applies it to row vectors), packed as Quat16 the way
  the engine does (``trunc(q * 32767)``) in v7/v8; v7 transforms also keep a scale;
* one ``TS::CelAnimMesh`` v3 per object: vertices welded on (positions of
  every frame, normal index), texture vertices on uv; per frame
  ``origin = min`` and ``scale = (max - min) / 255`` and each byte the
  *rounded* step (the original exporter truncated: rounding halves the error);
  the normal byte is the nearest of the engine's 256 normals (lowest index on
  a tie); faces are wound back (the export reversed every triangle);
* sequences from animations (keyframe position = time / duration), node
  keys as transforms, object keys as mesh frames and visibility bits;
* a ``bounds`` object (two vertices, the shape's box) when the scene has none;
  centre = box middle, radius = half its diagonal (what stock shapes hold);
* a material list from the scene's materials (v4 with shape v8, v3 with v7).

``like`` (the original file): when the scene still says what the original
says (compared by name and content with the original exported the same way,
:mod:`.compare`, so an editor's unedited re-save passes), the original is
returned unchanged, with every byte glTF cannot hold.  Otherwise the shape is
rebuilt in the original's node frames and order and, by name, keeps from the
original what glTF cannot express: name-slot bytes, IFL fields of sequences,
transitions, material flags and surface properties, object flags and pad
bytes, the bytes after the shape (stale tails), the nodes and objects the
export left out (other detail levels), and the rest transforms, keys and mesh
blocks the edit left alone (:func:`.like.adopt_unchanged`).  Sequence
flags, priority and frame triggers travel in the glTF's animation extras (from
the original when an editor dropped them).
"""
from __future__ import annotations

import os
import zlib
from typing import Any
from urllib.parse import unquote

import numpy as np

from ....core.errors import FormatError, ValueFormatError
from ....document import Document
from ....scene import Material, Scene
from ....scene.finite import require_finite
from ....scene.geometry import column_extremes
from ....scene.ops import from_time_zero
from ..geometry import name_text, nearest_normals  # noqa: F401  (nearest_normals: part of the API)
from ....scene.import_prep import Holds, prepare
from ....scene.bake_colors import drop_orphaned_materials, linear_to_srgb

#: what a shape stores of a glTF (scene.import_prep): a normal per vertex (the
#: engine's table), morph targets as mesh frames, no vertex colours (baked into a
#: new texture; the export's material extras naming the old bitmap then go)
IMPORT_HOLDS = Holds("dts", normals=True, vertex_colors=False, morph_targets=True,
                     texture=True, texture_extras=("map", "flags", "type", "rgb"))
from ..model import NodeM, ObjectM, ShapeModel, shape_model
from ..pers import class_payload
from .like import adopt_unchanged, keep_unexported, _like_scenes, _reusable_meshes
from .compare import compare
from .keys import transforms_and_keys
from .meshes import _block, _table, _tables, bounds_mesh, mesh_block, mesh_blocks, quantise  # noqa: F401

#: material flag bits (type, smooth shading, alpha)
MAT_RGB, MAT_TEXTURE, SMOOTH, TRANSPARENT, TRANSLUCENT = 2, 3, 0x400, 0x1000, 0x2000


class ShapeImportError(ValueFormatError):
    """A scene the shape format cannot hold."""


def _row_names(lp: dict, table: str) -> list[str]:
    """The name of each row of a ``--like`` shape's ``table`` ("" for a name
    index out of range)."""
    names = [name_text(bytes(x)) for x in lp["names"]["name"]]
    return [names[ni] if 0 <= (ni := int(r["fName"])) < len(names) else "" for r in lp[table]]


def _rows_by_name(lp: dict | None, table: str) -> dict:
    """The ``--like`` shape's rows of ``table`` by name, the first of each."""
    out: dict = {}
    if lp is not None:
        for name, r in zip(_row_names(lp, table), lp[table]):
            out.setdefault(name, r)
    return out


def _slot(text: str, size: int, warnings: list, what: str) -> bytes:
    raw = text.encode("latin-1", errors="replace")
    if len(raw) > size - 1:
        warnings.append(f"{what} {text!r} cut to {size - 1} bytes")
        raw = raw[: size - 1]
    return raw + bytes(size - len(raw))


# ---------------------------------------------------------------------------
# meshes


# ---------------------------------------------------------------------------
# materials


MAP_NAME_BYTES = 31      #: a material's map file name: char[32], NUL-terminated


def texture_name(m: Any, images: list | None, i: int) -> str:
    """The map file a textured material names: its image's file or name, else its
    own name, as ``.bmp``; made to fit the material list's 31 bytes of latin-1
    (:func:`fit_map_name`), so the list names the bitmap written beside it."""
    ref = m.base_color_texture
    img = images[ref.image] if images is not None and 0 <= ref.image < len(images) else None
    for cand in ((unquote(img.uri) if img is not None and img.uri else None),
                 (img.name if img is not None else None), m.name):
        if cand:
            base = str(cand).replace("\\", "/").rsplit("/", 1)[-1]
            stem, dot, ext = base.rpartition(".")
            return fit_map_name(base if dot and ext.lower() in ("bmp", "pbmp")
                                else (stem or base) + ".bmp")
    return f"material{i}.bmp"


def fit_map_name(name: str) -> str:
    """``name`` as a map file name the material list can hold: characters outside
    latin-1 (and control characters) become ``_``; a name over 31 bytes keeps its
    start and extension around a tag of its CRC, so distinct long names stay distinct."""
    fitted = "".join(c if 32 <= ord(c) < 256 and c != "\x7f" else "_" for c in name)
    if len(fitted) <= MAP_NAME_BYTES:
        return fitted
    stem, ext = os.path.splitext(fitted)
    ext = ext[:8]
    tag = f"~{zlib.crc32(name.encode('utf-8')) & 0xFFFFFF:06x}"
    return stem[:MAP_NAME_BYTES - len(ext) - len(tag)] + tag + ext


def _listed(names: list) -> str:
    return f"{', '.join(names[:3])}{', ...' if len(names) > 3 else ''}"


def texture_bitmaps(scene: Scene, palette: str | None, out_dir: str = "", *,
                    dither: bool = False) -> list:
    """``[(file name, Document)]``: each textured material's image as the Phoenix
    bitmap its material list names (:func:`texture_name`), drawn with
    ``palette`` (a .ppl/.pal file or ``ARCHIVE::member``).  The bitmaps have
    power-of-two sides (resized with a warning, as the engine's textures are)
    and a full mip chain; ``dither`` diffuses each level's error (Floyd-Steinberg)
    instead of taking each texel's nearest colour.

    Without a palette, the first one in the game tree of ``out_dir`` is used,
    as the export picks one (:func:`.textures.choose_palette`); the game's own
    bitmaps there are not replaced by this guess, only missing ones written.
    With no palette at all nothing is written: each texture is named and warned
    about, because the colours depend on the world's palette."""
    textured = [(texture_name(m, scene.images, i), m) for i, m in enumerate(scene.materials)
                if m.base_color_texture is not None]
    if not textured:
        return []
    keep: set = set()
    if not palette and out_dir:
        from ..textures import find_palettes, search_roots
        found = find_palettes(search_roots(os.path.join(out_dir, "_")))
        if found:
            palette = found[0]
            try:                            # the engine finds files whatever their case
                there = {e.lower() for e in os.listdir(out_dir)}
            except OSError:
                there = set()
            keep = {n for n, _ in textured if n.lower() in there}
            scene.warnings.append(f"textures written with palette {palette} (the first found in "
                                  "the game tree; --option palette=FILE to choose)")
            if keep:
                scene.warnings.append(f"{len(keep)} bitmap(s) already there kept "
                                      f"({_listed(sorted(keep))}); name the palette to replace them")
    if not palette:
        names = sorted({n for n, _ in textured})
        scene.warnings.append(f"{len(names)} texture(s) named in the material list, not written "
                              f"({_listed(names)}): give --option palette=FILE (.ppl/.pal) "
                              "to write them as the game's bitmaps")
        return []
    from PIL import Image as PILImage
    from ....scene.ops import base_color_picture
    from ..phoenix import BMP, palette_colors
    from ..textures import image_to_bitmap, load_palette_doc
    pdoc = load_palette_doc(palette)
    colors = palette_colors(pdoc)
    held = ({int(p["paletteIndex"]) for p in pdoc.root["palettes"]} if pdoc.format == "pl98"
            else set())
    out, done = [], set()
    for name, m in textured:
        if name.lower() in done or name in keep:
            continue
        done.add(name.lower())
        img, pic, problem = base_color_picture(scene, m)
        if pic is None:
            scene.warnings.append(f"{name}: the image is not embedded; not written"
                                  if img is None or img.data is None else
                                  f"{name}: the image cannot be read ({problem}); not written")
            continue
        w, h = pic.size
        pw, ph = (min(4096, 1 << max(n - 1, 0).bit_length()) for n in (w, h))
        if (pw, ph) != (w, h):
            scene.warnings.append(f"{name}: {w}x{h} resized to {pw}x{ph} (power of two)")
            pic = pic.convert("RGBA").resize((pw, ph), PILImage.LANCZOS)
        levels = min(pw, ph).bit_length()          # down to 1 pixel on the short side
        # an image exported from a bitmap keeps its palette index (PiDX) when the
        # palette holds it: drawn back with that sub-palette, as the engine draws it
        pidx = (img.extras or {}).get("paletteIndex") if img is not None else None
        if isinstance(pidx, int) and not isinstance(pidx, bool) and pidx in held:
            data = image_to_bitmap(np.asarray(pic.convert("RGBA")), palette_colors(pdoc, pidx),
                                   mips=levels, dither=dither, palette_index=pidx)
        else:
            data = image_to_bitmap(np.asarray(pic.convert("RGBA")), colors, mips=levels,
                                   dither=dither)
        out.append((name, BMP.decode(data)))
    return out


def material_list(materials: list, version: int, warnings: list, like: dict | None = None,
                  images: list | None = None) -> dict:
    """A ``TS::MaterialList`` of ``version`` (2-4) from scene materials."""
    t = _tables("TS::MaterialList", version)["materials"]
    rows = np.zeros(len(materials), t)
    old = {}
    lpay = class_payload(like, b"TS::MaterialList")
    if lpay is not None and like["version"] == version:
        lt = lpay["materials"]
        for r in lt:
            old.setdefault(name_text(bytes(r["fName"])).lower(), r)
    for i, m in enumerate(materials):
        ex = m.extras or {}
        mapname = ex.get("map") if isinstance(ex.get("map"), str) else ""
        if not mapname and m.base_color_texture is not None:
            mapname = texture_name(m, images, i)
        # (glTF's factor is linear light; the file's bytes display values)
        r, g, b = (int(round(float(c) * 255)) for c in linear_to_srgb(
            np.nan_to_num(np.asarray(m.base_color[:3], np.float64))))
        flags = (MAT_TEXTURE if mapname else MAT_RGB) | SMOOTH
        if m.alpha_mode == "MASK":
            flags |= TRANSPARENT
        elif m.alpha_mode == "BLEND":
            flags |= TRANSLUCENT
        if isinstance(ex.get("flags"), int) and ((ex["flags"] & 0xF) in (MAT_RGB, MAT_TEXTURE) or not mapname):
            flags = int(ex["flags"]) & 0xFFFFFFFF
        rgb = ex.get("rgb")
        if isinstance(rgb, list) and len(rgb) == 3 and flags & 0xF != MAT_RGB:
            r, g, b = (int(x) & 0xFF for x in rgb)
        rows[i]["fFlags"] = flags
        rows[i]["fRed"], rows[i]["fGreen"], rows[i]["fBlue"] = r, g, b
        rows[i]["fName"] = np.frombuffer(_slot(mapname, 32, warnings, "map name"), "V32")[0]
        for k, default in (("fElasticity", 1.0), ("fFriction", 1.0), ("fUseDefaultProps", 1)):
            if k in t.names:
                rows[i][k] = default
        prev = old.get(mapname.lower()) if mapname else None
        if prev is not None:             # keep what glTF has no word for
            for k in t.names:
                if k in ("fAlpha", "fIndex", "fRGBFlags", "fType", "fElasticity", "fFriction",
                         "fUseDefaultProps"):
                    rows[i][k] = prev[k]
            if name_text(bytes(prev["fName"])) == mapname:
                rows[i]["fName"] = prev["fName"]
    return _block("TS::MaterialList", version, {"fnDetails": 1, "fnMaterials": len(rows), "materials": rows})


# ---------------------------------------------------------------------------
# the shape


class _Names:
    """The shape's name table (each distinct text once, in first-use order)."""

    def __init__(self, warnings: list, like_slots: dict) -> None:
        self.slots: list[bytes] = []
        self.index: dict[str, int] = {}
        self.warnings = warnings
        self.like_slots = like_slots

    def __call__(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.slots)
            self.slots.append(self.like_slots.get(text) or _slot(text, 24, self.warnings, "name"))
        return self.index[text]


def _check_fits(version: int, **counts: int) -> None:
    if version >= 8:
        for what, n in counts.items():
            if n > 0x7FFF:
                raise ShapeImportError(f"{n} {what} do not fit a v8 shape's 16-bit indices; "
                                   "use --option version=7")


def build_shape(model: ShapeModel, version: int, *, details: list | None = None,
                like_root: dict | None = None, reuse_meshes: dict | None = None) -> dict:
    """The ``TS::Shape`` block of ``model``."""
    warnings = model.warnings
    t = _tables("TS::Shape", version)
    lp = like_root["payload"] if like_root is not None and isinstance(like_root.get("payload"), dict) else None
    like_slots: dict[str, bytes] = {}
    if lp is not None:
        for raw in lp["names"]["name"]:
            like_slots.setdefault(name_text(bytes(raw)), bytes(raw))
    names = _Names(warnings, like_slots)

    nodes = list(model.nodes)
    objects = list(model.objects)
    # the utility bounds object (and a root for it) when the scene has none
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    worlds = []
    for n in nodes:
        worlds.append(n.local if n.parent < 0 else worlds[n.parent] @ n.local)
    for o in objects:
        if o.name == "bounds" or not o.frames.size:
            continue
        m = worlds[o.node] @ o.offset
        p = o.frames.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
        p_lo, p_hi = column_extremes(p)
        lo, hi = np.minimum(lo, p_lo), np.maximum(hi, p_hi)
    if not np.isfinite(lo).all():
        lo = hi = np.zeros(3)
    roots = [i for i, n in enumerate(nodes) if n.parent < 0]
    prepend_root = not (len(roots) == 1 and nodes[roots[0]].name == "bounds")
    if prepend_root:
        nodes = [NodeM("bounds", -1, np.eye(4), -1)] + [
            NodeM(n.name, n.parent + 1, n.local, n.scene_node, n.extras) for n in nodes]
        for o in objects:
            o.node += 1
    has_bounds = any(o.name == "bounds" for o in objects)

    # detail levels; coarser ones generated when the scene has one and more sizes are asked
    node_src: dict = {}
    obj_src: dict = {}
    generate = bool(details) and len(details) > 1
    det = _details(nodes, model, None if generate else details, warnings, prepend_root)
    if generate and len(det) == 1 and nodes[det[0][0]].parent >= 0:
        from ..simplify import add_levels
        level_worlds: list = []
        for n in nodes:
            level_worlds.append(n.local if n.parent < 0 else level_worlds[n.parent] @ n.local)
        node_src, obj_src, new_roots = add_levels(nodes, objects, det[0][0], details, level_worlds, lo, hi)
        det = [(det[0][0], float(details[0]))] + [(r, float(z)) for r, z in zip(new_roots, details[1:])]
    elif generate:
        det = _details(nodes, model, details, warnings, prepend_root)

    seqs = model.sequences
    tk = transforms_and_keys(nodes, objects, seqs, node_src, obj_src, prepend_root, version,
                             warnings)
    subs, node_subs, obj_subs = tk.subs, tk.node_subs, tk.obj_subs
    n_keys, n_tf = len(tk.key_position), len(tk.rotation)
    _check_fits(version, nodes=len(nodes), transforms=n_tf, keyframes=n_keys,
                sub_sequences=len(subs), objects=len(objects) + 1)

    # meshes and objects
    material_map = {i: i for i in range(len(model.materials))}
    if any((o.materials < 0).any() for o in objects):
        # glTF draws a primitive without a material in its default one (white); the
        # list gets such a material rather than the faces taking another's
        material_map[-1] = len(model.materials)
        model.materials.append(Material(name="default"))
    meshes, obj_rows = [], []
    reuse_meshes = reuse_meshes or {}
    # the objects to encode, as one batch (meshes.mesh_blocks)
    todo = [oi for oi in range(len(objects)) if reuse_meshes.get(oi) is None]
    made = dict(zip(todo, mesh_blocks([objects[oi] for oi in todo], material_map, warnings)))
    for oi, o in enumerate(objects):
        block = reuse_meshes.get(oi)
        meshes.append(block if block is not None else made[oi])
        obj_rows.append(o)
    if not has_bounds:
        bm = bounds_mesh(lo, hi)
        meshes.insert(0, bm)
        obj_rows.insert(0, ObjectM("bounds", 0, np.eye(4), np.zeros((1, 0, 3)), np.zeros((0, 3)),
                              np.zeros((0, 2)), np.zeros(0, np.int64), -1))
        obj_subs = {k + 1: v for k, v in obj_subs.items()}
        obj_subs[0] = []

    # tables
    n_nodes = len(nodes)
    node_rows = _table(t["nodes"], n_nodes)
    for i, n in enumerate(nodes):
        ss = node_subs[i]
        node_rows[i] = (names(n.name), n.parent, len(ss), ss[0] if ss else 0, int(tk.default_tf[i]))
    seq_rows = _table(t["sequences"], len(seqs))
    triggers = []
    like_seq = _rows_by_name(lp, "sequences")
    for s, seq in enumerate(seqs):
        row = seq_rows[s]
        row["fName"] = names(seq.name)
        row["fCyclic"] = int(bool(seq.extras.get("cyclic", True)))
        row["fDuration"] = seq.duration
        row["fPriority"] = int(seq.extras.get("priority", 0))
        prev = like_seq.get(seq.name)
        if prev is not None:
            for k in ("fNumIFLSubSequences", "fFirstIFLSubSequence"):
                if k in t["sequences"].names:
                    row[k] = prev[k]
        ft = seq.extras.get("frame_triggers") or []
        if "fNumFrameTriggers" in t["sequences"].names:
            row["fFirstFrameTrigger"] = len(triggers) if ft else 0
            row["fNumFrameTriggers"] = len(ft)
            triggers.extend((float(x.get("position", 0)), int(x.get("value", 0))) for x in ft
                            if isinstance(x, dict))
    sub_rows = _table(t["subSequences"], len(subs))
    if subs:
        a = np.array(subs, np.int64)
        sub_rows["fSequenceIndex"], sub_rows["fnKeyframes"], sub_rows["fFirstKeyframe"] = a[:, 0], a[:, 1], a[:, 2]
    key_rows = _table(t["keyframes"], n_keys, fPosition=tk.key_position, fKeyValue=tk.key_value,
                      fMatIndex=tk.key_flags)
    tf_rows = _table(t["transforms"], n_tf)
    if n_tf:
        for c, k in enumerate(("fRotateX", "fRotateY", "fRotateZ", "fRotateW")):
            tf_rows[k] = tk.rotation[:, c]
        for c, k in enumerate(("fTranslateX", "fTranslateY", "fTranslateZ")):
            tf_rows[k] = tk.translation[:, c]
        if "fScaleX" in t["transforms"].names:
            for c, k in enumerate(("fScaleX", "fScaleY", "fScaleZ")):
                tf_rows[k] = tk.scale[:, c]
    like_obj_flags = _rows_by_name(lp, "objects")
    ob_rows = _table(t["objects"], len(obj_rows))
    for i, o in enumerate(obj_rows):
        ss = obj_subs.get(i, [])
        row = ob_rows[i]
        row["fName"] = names(o.name)
        prev = like_obj_flags.get(o.name)
        row["fFlags"] = int(prev["fFlags"]) if prev is not None else int(bool(o.extras.get("default_invisible")))
        for k in ("_pad0", "fDepFlags"):          # v8 pad bytes (not always zero), v7 matrix flags
            if prev is not None and k in t["objects"].names and k in prev.dtype.names:
                row[k] = prev[k]
        row["fMeshIndex"] = i
        row["fNodeIndex"] = o.node
        row["fnSubSequences"] = len(ss)
        row["fFirstSubSequence"] = ss[0] if ss else 0
        off = o.offset
        row["fObjectOffsetX"], row["fObjectOffsetY"], row["fObjectOffsetZ"] = off[:3, 3]
        if version < 8:
            # the TMat3F: glTF elements 0-2, 4-6, 8-10 (column-major) in file order
            m = off[:3, :3].T.reshape(-1)
            for k, v in zip(("fDep0X", "fDep0Y", "fDep0Z", "fDep1X", "fDep1Y", "fDep1Z",
                             "fDep2X", "fDep2Y", "fDep2Z"), m):
                row[k] = v
        elif np.abs(off[:3, :3] - np.eye(3)).max() > 1e-5:
            warnings.append(f"object {o.name!r}: offset rotation/scale dropped (v8 objects "
                            "have a translation only)")

    # details
    det_rows = _table(t["details"], len(det), fRootNodeIndex=[d[0] for d in det], fSize=[d[1] for d in det])
    for d in det:
        names(nodes[d[0]].name)

    centre = (lo + hi) / 2
    radius = float(np.linalg.norm(hi - lo) / 2)
    p: dict = {"nNodes": n_nodes, "nSeqs": len(seqs), "nSubSeqs": len(subs), "nKeyframes": n_keys,
               "nTransforms": n_tf, "nNames": 0, "nObjects": len(obj_rows), "nDetails": len(det),
               "nMeshes": len(meshes), "nTransitions": 0, "nFrameTriggers": len(triggers),
               "fRadius": radius, "fCentreX": centre[0], "fCentreY": centre[1], "fCentreZ": centre[2]}
    if version >= 8:
        p.update(fBoundsMinX=lo[0], fBoundsMinY=lo[1], fBoundsMinZ=lo[2],
                 fBoundsMaxX=hi[0], fBoundsMaxY=hi[1], fBoundsMaxZ=hi[2])
    transitions = _table(t["transitions"], 0)
    if lp is not None and len(lp.get("transitions", ())) and lp["transitions"].dtype == t["transitions"]:
        # transitions name sequences by index: kept while the sequence names line up
        if _row_names(lp, "sequences") == [s.name for s in seqs]:
            transitions = lp["transitions"].copy()
        else:
            warnings.append("transitions of the original dropped: its sequences changed")
    p["nTransitions"] = len(transitions)
    frame_rows = _table(t["frameTriggers"], len(triggers))
    if triggers:
        frame_rows["fPosition"] = [x[0] for x in triggers]
        frame_rows["fValue"] = [x[1] for x in triggers]
    always = next((i for i, n in enumerate(nodes) if n.name == "always"), -1)
    p.update(nodes=node_rows, sequences=seq_rows, subSequences=sub_rows, keyframes=key_rows,
             transforms=tf_rows, names=None, objects=ob_rows, details=det_rows,
             transitions=transitions, frameTriggers=frame_rows,
             fnDefaultMaterials=len(model.materials), fAlwaysNode=always, meshes=meshes,
             hasMaterials=1,
             materials=material_list(model.materials, 4 if version >= 8 else 3, warnings,
                                     lp.get("materials") if lp is not None else None, model.images))
    p["names"] = _table(t["names"], len(names.slots))
    if names.slots:
        p["names"]["name"] = np.frombuffer(b"".join(names.slots), "V24")
    p["nNames"] = len(names.slots)
    _check_fits(version, names=len(names.slots))
    return _block("TS::Shape", version, p)


def _details(nodes: list, model: ShapeModel, sizes: list | None, warnings: list,
             prepended: bool) -> list[tuple[int, float]]:
    """(root node, size) per level: the export's ``details`` extras where their
    roots are present, else every child of the shape root that is not
    ``always`` (a scene whose top-level nodes were put under a new root is one
    level, that root); ``sizes`` overrides the sizes."""
    by_name = {n.name: i for i, n in enumerate(nodes)}
    found: list[tuple[int, float]] = []
    for d in model.extras.get("details") or []:
        if isinstance(d, dict) and d.get("root") in by_name:
            found.append((by_name[d["root"]], float(d.get("size", 1.0))))
    if not found:
        root = next(i for i, n in enumerate(nodes) if n.parent < 0)
        kids = [i for i, n in enumerate(nodes) if n.parent == root and n.name != "always"]
        if prepended and len(kids) > 1:
            # a glTF of several top-level nodes is one level: the whole tree
            kids = []
        found = [(k, 1.0) for k in kids] or [(root, 1.0)]
    if sizes:
        if len(sizes) != len(found):
            warnings.append(f"{len(sizes)} detail sizes given for {len(found)} levels in the glTF; "
                            "levels are not generated (no simplification): sizes applied in order")
        found = [(r, float(sizes[i]) if i < len(sizes) else s) for i, (r, s) in enumerate(found)]
    return found


# ---------------------------------------------------------------------------
# comparison with the original


# ---------------------------------------------------------------------------
# entry points


def _version(option: Any, like: Document | None) -> int:
    if option is not None:
        v = int(option)
        if v not in (7, 8):
            raise ShapeImportError(f"version {v}: the games load shape v7 (Starsiege) or v8 (Tribes)")
        return v
    if like is not None:
        lv = int(like.root.get("version", 8))
        return lv if lv in (7, 8) else 7
    return 8


def _sizes(text: Any) -> list | None:
    if text in (None, ""):
        return None
    try:
        return [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise ShapeImportError(f"details={text!r}: expected comma-separated sizes") from None


def prepared(scene: Scene, like: Document | None = None) -> Scene:
    """``scene`` as the shape importer reads it (``scene.import_prep.prepare``):
    vertex colours baked into new materials, and without ``like`` the materials
    the bake left unused dropped, so the shape's material list (and the bitmaps
    written beside it) holds only what its faces use.  With ``like`` the list
    keeps them: the original's mesh blocks, kept where unedited, index its
    material list as it was."""
    out = prepare(scene, IMPORT_HOLDS)
    return out if like is not None or out is scene else drop_orphaned_materials(scene, out)


def shape_from_scene(scene: Scene, *, like: Document | None = None, version: Any = None,
                     details: Any = None) -> Document:
    """A ``.dts`` document from ``scene`` (see the module docstring)."""
    v = _version(version, like)
    require_finite(scene)
    scene = from_time_zero(prepared(scene, like))
    try:
        model = shape_model(scene, version=v)
    except FormatError:
        raise
    except (np.linalg.LinAlgError, ValueError, IndexError, TypeError, KeyError,
            AttributeError) as e:
        raise ShapeImportError(f"the scene cannot be read as a shape: {type(e).__name__}: {e}") from None
    _check_finite(model)
    if not model.objects:
        raise ShapeImportError("the scene has no triangle geometry to make a shape of")
    scene.warnings.extend(model.warnings)
    reuse: dict = {}
    if like is not None:
        if like.format != "dts" or bytes(like.root.get("className", b"")) != b"TS::Shape":
            raise ShapeImportError("--like must be a .dts shape")
        lv = int(like.root["version"])
        first_why, exported, most = None, None, -1
        for opts, ls in _like_scenes(like):
            ref = shape_model(ls, version=lv)
            match = compare(model, ref)
            why = match.why
            if why is None:
                break
            first_why = first_why or why
            if len(match.nodes) > most:          # the export the scene came from, likely
                exported, most = ref, len(match.nodes)
        if why is None and (version is None or int(version) == lv):
            doc = like.codec.decode(like.codec.encode(like))
            doc.warnings = []
            return doc
        reason = (f"version {v} asked of a v{lv} original" if why is None
                  else f"differs from the original ({first_why})")
        scene.warnings.append(f"{reason}: shape rebuilt, keeping by name what glTF cannot express")
        from ..scene import to_scene
        full = shape_model(to_scene(like, detail=-1, bounds=True, skin=False), version=v)
        model = adopt_unchanged(model, full)
        kept = keep_unexported(model, full, like, exported)
        if kept:
            scene.warnings.append(f"{kept} nodes and objects of the original that the glTF "
                                  "does not carry (other detail levels, bounds) kept")
        reuse = _reusable_meshes(model, full, like)
    said = len(model.warnings)
    try:
        root = build_shape(model, v, details=_sizes(details),
                           like_root=like.root if like is not None else None, reuse_meshes=reuse)
    except FormatError:
        raise
    except (np.linalg.LinAlgError, ValueError, OverflowError, IndexError, TypeError) as e:
        raise ShapeImportError(f"the scene cannot be written as a v{v} shape: "
                           f"{type(e).__name__}: {e}") from None
    scene.warnings.extend(model.warnings[said:])     # what writing the shape had to say
    trailing = bytes(like.trailing) if like is not None else b""    # stale bytes after the block
    return Document("dts", root, {}, trailing, list(model.warnings))


def _check_finite(model: ShapeModel) -> None:
    """Refuse NaN/infinite values (they would quantise to garbage bytes), and
    places past 1e38, whose bounds float32 cannot hold (its largest is 3.4e38)."""
    for n in model.nodes:
        if not (np.abs(n.local) <= 1e38).all():
            raise ShapeImportError(f"node {n.name!r}: non-finite rest transform (or past 1e38)")
    for o in model.objects:
        for what, arr in (("positions", o.frames), ("offset", o.offset), ("uvs", o.uvs)):
            # (every |value| <= 1e38 and no NaN, from the two extremes: no temporaries)
            if arr.size and not (arr.max() <= 1e38 and arr.min() >= -1e38):
                raise ShapeImportError(f"object {o.name!r}: non-finite {what} (or past 1e38)")
        if not np.isfinite(o.normals).all():
            o.normals = np.where(np.isfinite(o.normals), o.normals, 0.0)
    for sq in model.sequences:
        if not np.isfinite(sq.duration):
            raise ShapeImportError(f"sequence {sq.name!r}: non-finite duration")
        for k, (t, q, tr, sc) in sq.node_keys.items():
            if not (np.isfinite(t).all() and np.isfinite(q).all() and np.isfinite(tr).all()
                    and np.isfinite(sc).all()):
                raise ShapeImportError(f"sequence {sq.name!r}: non-finite keys on node {k}")


def matlist_from_scene(scene: Scene, *, like: Document | None = None, version: Any = None) -> Document:
    """A ``.dml`` document from the scene's materials."""
    v = int(version) if version is not None else (int(like.root["version"]) if like is not None else 4)
    if v not in (2, 3, 4):
        raise ShapeImportError(f"material list version {v}: 2, 3 or 4")
    if not scene.materials:
        raise ShapeImportError("the scene has no materials to make a material list of")
    warnings: list = []
    block = material_list(scene.materials, v, warnings, like.root if like is not None else None,
                          scene.images)
    if like is not None and like.format == "dml":
        rows, old = block["payload"]["materials"], like.root["payload"]
        if isinstance(old, dict) and old["materials"].dtype == rows.dtype and np.array_equal(
                old["materials"][: old["fnMaterials"]], rows):
            data = like.codec.encode(like)
            return like.codec.decode(data)
    scene.warnings.extend(warnings)
    return Document("dml", block, {}, b"", warnings)
