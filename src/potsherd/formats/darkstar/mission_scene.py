"""A Tribes mission (``.mis``) to one scene: the terrain on its grid, every
InteriorShape placed (its ``.dis`` exported once, instanced per placement),
every StaticShape / Turret / Item / Sensor whose shape file is found (the
datablock's ``shapeFile`` from the game scripts), markers and drop points as
empty nodes, sky and sun in extras.  Files resolve in the mission's folder, the
game tree above a ``missions`` folder, or --data-root; what cannot be found is
listed once per file, not per instance.

Placement: ``position`` is metres in the world (Z up); ``rotation`` is the
engine's Euler angles, turned into a matrix by its own formula (m_euler.cpp,
row vectors, transposed here for glTF's column vectors).
"""
from __future__ import annotations

import math
import os
import re
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...registry import Option
from ...scene import Z_UP_Y_FORWARD_TO_GLTF, Scene
from ...scene.xform import matrix_to_quat
from .mission import objects
from .terrain_scene import TerrainBuilder, ted_blocks, world_roots

MISSION_OPTIONS = (
    Option("data_root", str, "game data folder (or volumes) searched for the terrain, "
                             "interiors, shapes and textures", ""),
    Option("palette", str, "palette for all bitmaps (default: the mission's SimPalette)", ""),
    Option("terrain", bool, "include the terrain", True),
    Option("interiors", bool, "include the interiors' geometry", True),
    Option("shapes", bool, "include the static shapes' geometry", True),
    Option("lighting", bool, "light maps as vertex colours", True),
)

SHAPE_CLASSES = ("StaticShape", "Turret", "Item", "Sensor", "Moveable", "Vehicle", "Mine")
#: script bytes read to find datablocks (a bound on work)
MAX_SCRIPT_BYTES = 16 << 20
_DATABLOCK = re.compile(rb"^[ \t]*([A-Za-z_]\w*Data)[ \t]+([A-Za-z_]\w*)\s*\{", re.M)
_SHAPEFILE = re.compile(rb'\bshapeFile\s*=\s*"([^"\n]*)"')


def euler_quat(rot: tuple[float, float, float] | None) -> tuple | None:
    """The engine's Euler angles (x, y, z radians) as a glTF quaternion."""
    if rot is None or not any(rot):
        return None
    x, y, z = rot
    sx, cx = math.sin(x), math.cos(x)
    sy, cy = math.sin(y), math.cos(y)
    sz, cz = math.sin(z), math.cos(z)
    r1, r2, r3, r4 = cy * cz, cy * sz, sy * cz, sy * sz
    m = np.array([[r1 - r4 * sx, r2 + r3 * sx, -cx * sy],
                  [-cx * sz, cx * cz, sx],
                  [r3 + r2 * sx, r4 - r1 * sx, cx * cy]])
    return tuple(float(v) for v in matrix_to_quat(m.T))


def _decode(spec: str, limits: Limits):
    from ... import registry
    from ...containers import read_input
    return registry.decode(read_input(spec, limits), path=spec, limits=limits)


def shape_files(roots: list[str], limits: Limits, warnings: list[str]) -> dict[str, str]:
    """datablock name (lower case) -> shape file name, from the game's scripts
    (``scripts.vol`` in the tree, or loose ``.cs`` files beside the mission)."""
    from .textures import find_in_tree
    out: dict[str, str] = {}
    spec = find_in_tree("scripts.vol", roots, limits)
    texts: list[bytes] = []
    budget = MAX_SCRIPT_BYTES
    if spec is not None:
        try:
            vol = _decode(spec, limits)
            for name in vol.codec.member_names(vol):
                if name.lower().endswith(".cs") and budget > 0:
                    data = vol.codec.read_member(vol, name)
                    budget -= len(data)
                    texts.append(data)
        except (FormatError, OSError) as e:
            warnings.append(f"scripts {spec}: {e}")
    for text in texts:
        heads = list(_DATABLOCK.finditer(text))
        for k, m in enumerate(heads):
            # the body runs to the next datablock (bodies hold nested { } lists)
            end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
            sf = _SHAPEFILE.search(text, m.end(), end)
            if sf:
                out.setdefault(m.group(2).decode("latin-1").lower(),
                               sf.group(1).decode("latin-1"))
    return out


def _graft(scene: Scene, sub: Scene, images: dict) -> list[int]:
    """Copy ``sub``'s meshes (with their materials and images) into ``scene``;
    returns the new mesh indices.  Images equal in bytes are shared."""
    img_map = {}
    for i, im in enumerate(sub.images):
        key = (im.name, hash(im.data) if im.data is not None else im.uri)
        if key not in images:
            images[key] = scene.add_image(im)
        img_map[i] = images[key]
    mat_map = {}
    for i, m in enumerate(sub.materials):
        for slot in ("base_color_texture", "normal_texture", "metallic_roughness_texture",
                     "occlusion_texture", "emissive_texture"):
            ref = getattr(m, slot)
            if ref is not None:
                ref.image = img_map[ref.image]
        mat_map[i] = scene.add_material(m)
    out = []
    for mesh in sub.meshes:
        for p in mesh.primitives:
            if p.material is not None:
                p.material = mat_map[p.material]
        out.append(scene.add_mesh(mesh))
    return out


def _bake_skins(sub: Scene) -> None:
    """Pose skinned meshes at rest and drop their skins (a placed shape is
    static in the mission scene; its animations are not carried over)."""
    from ...scene.ops import normal_matrices, skin_blend, skin_matrices, world_matrices
    if not sub.skins:
        return
    world = world_matrices(sub)
    done: set[int] = set()
    for i, node in enumerate(sub.nodes):
        if node.skin is None or node.mesh is None or node.mesh in done:
            node.skin = None
            continue
        done.add(node.mesh)
        jm = skin_matrices(sub, node.skin, world)
        to_local = np.linalg.inv(world[i])
        for p in sub.meshes[node.mesh].primitives:
            if p.joints is None or p.weights is None:
                continue
            blend, _ = skin_blend(p.joints, p.weights, jm, world[i])
            m = np.einsum("ij,vjk->vik", to_local, blend)
            pos = np.asarray(p.positions, np.float64)
            p.positions = (np.einsum("vij,vj->vi", m[:, :3, :3], pos) + m[:, :3, 3]).astype(
                np.float32)
            if p.normals is not None:
                nrm = np.einsum("vij,vj->vi", normal_matrices(m[:, :3, :3]),
                                np.asarray(p.normals, np.float64))
                nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
                p.normals = nrm.astype(np.float32)
            p.joints = p.weights = None
        node.skin = None
    sub.skins = []
    sub.animations = []


def _mesh_nodes(sub: Scene) -> list[tuple[int, Any]]:
    """(mesh, local matrix below the sub-scene's z-up wrap) of every mesh node."""
    from ...scene.ops import world_matrices
    world = world_matrices(sub)
    wrap = np.eye(4)
    if sub.roots and sub.nodes[sub.roots[0]].name == "z-up":
        wrap = world[sub.roots[0]]
    inv = np.linalg.inv(wrap)
    return [(n.mesh, inv @ world[i]) for i, n in enumerate(sub.nodes) if n.mesh is not None]


def to_scene(doc, *, data_root: str | None = None, source_path: str | None = None,
                  palette: str = "", terrain: bool = True, interiors: bool = True,
                  shapes: bool = True, lighting: bool = True, **_: Any) -> Scene:
    from .textures import find_in_tree
    source = source_path or doc.source or "mission.mis"
    limits = doc.limits or DEFAULT_LIMITS
    name = os.path.basename(source.split("::")[-1])
    scene = Scene(name=name)
    roots = world_roots(source, data_root)
    # the folder the interiors and shapes look in for their own parts and bitmaps
    tree = data_root or (roots[1] if len(roots) > 1 else None)
    objs = list(objects(doc.root))
    missing: dict[str, set] = {}

    def find(fname: str, what: str) -> str | None:
        spec = find_in_tree(fname, roots, limits) if fname else None
        if spec is None and fname:
            missing.setdefault(what, set()).add(fname)
        return spec

    if not palette:
        pal = next((o.file_name for o in objs if o.cls == "SimPalette" and o.file_name), "")
        palette = (find(pal, "palette") or "") if pal else ""
    top = scene.add_node(name=name, extras={"mission": name})
    extras: dict[str, Any] = {}

    # --- terrain
    ter = next((o for o in objs if o.cls == "SimTerrain"), None)
    if terrain and ter is not None:
        dtf_name = ter.fields.get("tedFileName", "")
        ted_name = next((o.file_name for o in objs if o.cls == "SimVolume" and o.file_name
                         and o.file_name.lower().endswith(".ted")), "")
        ted_name = ted_name or (os.path.splitext(dtf_name)[0] + ".ted" if dtf_name else "")
        spec = find(ted_name, "terrain")
        if spec is not None:
            try:
                vol = _decode(spec, limits)
                dtf, blocks, stem = ted_blocks(vol, limits)
                node = scene.add_node(name="terrain", parent=top,
                                      translation=ter.position, extras={"ted": ted_name})
                b = TerrainBuilder(scene, roots=roots, limits=limits, palette=palette,
                                   data_root=data_root or None, lighting=lighting)
                extras["terrain"] = b.add(dtf, blocks, node, stem)
            except FormatError as e:
                scene.warnings.append(f"terrain {ted_name}: {e}")

    # --- interiors and shapes, each file exported once and instanced
    cache: dict[str, list | None] = {}
    images: dict = {}

    def meshes_of(fname: str, what: str) -> list | None:
        key = fname.lower()
        if key in cache:
            return cache[key]
        cache[key] = None
        spec = find(fname, what)
        if spec is None:
            return None
        try:
            sub_doc = _decode(spec, limits)
            opts: dict[str, Any] = {"source_path": spec, "data_root": tree}
            if palette:
                opts["palette"] = palette
            if sub_doc.format == "dis":
                opts["lighting"] = lighting
            if sub_doc.codec.to_scene is None:
                raise FormatError(f"a {sub_doc.format} file has no geometry to place")
            sub = sub_doc.codec.to_scene(sub_doc, **opts)
        except (FormatError, OSError) as e:
            scene.warnings.append(f"{what} {fname}: {e}")
            return None
        except (ValueError, KeyError, IndexError, TypeError, ArithmeticError) as e:
            # one part the exporter trips on must not lose the whole mission: said, skipped
            scene.warnings.append(f"{what} {fname} could not be exported "
                                  f"({type(e).__name__}: {e}); placed without geometry")
            return None
        for w in sub.warnings:
            if w not in scene.warnings:
                scene.warnings.append(f"{fname}: {w}")
        _bake_skins(sub)
        new = _graft(scene, sub, images)
        placed = _mesh_nodes(sub)
        cache[key] = [(new[m], mat) for m, mat in placed if m is not None and m < len(new)]
        return cache[key]

    datablocks = None
    counts = {"interiors": 0, "interiorsWithGeometry": 0, "shapes": 0, "shapesWithGeometry": 0,
              "markers": 0}
    groups: dict[tuple, int] = {(): top}

    def group_node(path: tuple) -> int:
        if path not in groups:
            groups[path] = scene.add_node(name=path[-1] or "group", parent=group_node(path[:-1]))
        return groups[path]

    for o in objs:
        if o.position is None:
            continue
        parent = group_node(o.groups)
        node_extras = {"class": o.cls, **{k: v for k, v in o.fields.items()
                                         if k not in ("position", "rotation")}}
        node = scene.add_node(name=o.name or o.cls, parent=parent, translation=o.position,
                              rotation=euler_quat(o.rotation), extras=node_extras)
        parts = None
        if o.cls == "InteriorShape":
            counts["interiors"] += 1
            if interiors and o.file_name:
                parts = meshes_of(o.file_name, "interior")
                counts["interiorsWithGeometry"] += parts is not None
        elif o.cls in SHAPE_CLASSES:
            counts["shapes"] += 1
            if shapes and o.datablock:
                if datablocks is None:
                    datablocks = shape_files(roots, limits, scene.warnings)
                sf = datablocks.get(o.datablock.lower())
                if sf is None:
                    missing.setdefault("datablock (no shapeFile in the scripts)",
                                       set()).add(o.datablock)
                else:
                    fname = sf if sf.lower().endswith(".dts") else sf + ".dts"
                    node_extras["shapeFile"] = fname
                    parts = meshes_of(fname, "shape")
                    counts["shapesWithGeometry"] += parts is not None
        elif o.cls in ("Marker", "DropPoint"):
            counts["markers"] += 1
        for mesh, mat in parts or []:
            from ...scene.xform import decompose_matrix
            t, r, s = decompose_matrix(mat)
            scene.add_node(name=f"{o.name or o.cls} mesh", parent=node, mesh=mesh,
                           translation=None if not np.any(t) else tuple(map(float, t)),
                           rotation=tuple(map(float, r)),
                           scale=None if np.allclose(s, 1) else tuple(map(float, s)))

    for cls in ("Sky", "Planet", "MissionCenterPos"):
        found = [o.fields for o in objs if o.cls == cls]
        if found:
            extras[cls[0].lower() + cls[1:]] = found
    for what, names in sorted(missing.items()):
        scene.warnings.append(f"{len(names)} {what} file(s) not found in the mission's tree or "
                              f"on --data-root: {', '.join(sorted(names)[:20])}"
                              + (" ..." if len(names) > 20 else ""))
    scene.extras = {**extras, "counts": counts,
                    "missing": {k: sorted(v) for k, v in missing.items()}}
    scene.wrap(name="z-up", rotation=Z_UP_Y_FORWARD_TO_GLTF)
    return scene


mission_scene = to_scene
