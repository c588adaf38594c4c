"""Darkstar terrain to the neutral scene: one mesh per grid block, placed at
every cell of the grid file's block map that uses it.

A block of ``n`` x ``n`` squares becomes 2 * n * n triangles minus the squares
its material flags mark empty (empty level != 0, as the engine's collision and
renderer treat them).  Each square is split along the diagonal the engine uses
(``(x ^ y) & 1`` picks 135 or 45 degrees) and is given its own four corners so
its tile texture can be rotated and flipped by the material flags (bit 0
rotate 90 degrees, bit 1 flip x, bit 2 flip y).  Heights are metres; a square
is ``1 << scale`` metres (the grid file's scale shift; 8 m in Tribes).  The
light map (4:4:4:4 texels, ``(n << lightScale) + 1`` wide) is sampled at the
corners as vertex colours.  Materials are the entries of the world's material
list (``.dml``), their bitmaps found beside that list or under --data-root.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...scene import Z_UP_Y_FORWARD_TO_GLTF, Material, Primitive, Scene
from ...scene.model import Mesh
from .terrain_maps import block_heights, block_materials, light_map

#: most squares of one block exported (Tribes blocks have 65,536; 2**20 is 4x the largest
#: the engine allows in one block and bounds the export's memory near 250 MB)
MAX_EXPORT_SQUARES = 1 << 20

#: the default square size shift when no grid file says (Tribes: 8 m squares)
DEFAULT_SCALE = 3


def world_roots(path: str, data_root: str | None = None) -> list[str]:
    """Where a world file's references are looked for: its folder, the game
    tree above a ``missions`` folder (Tribes keeps the world volumes in
    ``base/`` and missions in ``base/missions/``), then ``--data-root``."""
    here = os.path.dirname(os.path.abspath(path.split("::")[0]))
    roots = [here]
    if os.path.basename(here).lower() == "missions":
        roots.append(os.path.dirname(here))
    if data_root:
        roots.append(os.path.abspath(data_root))
    return list(dict.fromkeys(roots))


def _corner_uv(flags: np.ndarray) -> np.ndarray:
    """(N, 4, 2) tile coordinates of the corners (x0y0, x1y0, x0y1, x1y1)."""
    base = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], np.float32)
    uv = np.broadcast_to(base, (len(flags), 4, 2)).copy()
    rot = (flags & 1).astype(bool)
    u, v = uv[rot, :, 0].copy(), uv[rot, :, 1].copy()
    uv[rot, :, 0], uv[rot, :, 1] = v, 1.0 - u
    fx = (flags & 2).astype(bool)
    uv[fx, :, 0] = 1.0 - uv[fx, :, 0]
    fy = (flags & 4).astype(bool)
    uv[fy, :, 1] = 1.0 - uv[fy, :, 1]
    return uv


def _grid_normals(h: np.ndarray, square: float) -> np.ndarray:
    gy, gx = np.gradient(h.astype(np.float64), square)
    n = np.stack([-gx, -gy, np.ones_like(gx)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return n.astype(np.float32)


def block_primitives(root: dict, square: float, *, lighting: bool = True
                     ) -> tuple[list[tuple[int, Primitive]], dict]:
    """``[(material index, primitive)]`` of one GBLK tree, and counts."""
    h = block_heights(root)
    n = int(root["size"][0])
    if h.shape != (n + 1, n + 1):
        raise FormatError(f"height map {h.shape} does not fit a {n}x{n} block", path="heights")
    if n * n > MAX_EXPORT_SQUARES:
        from ...core.errors import LimitError
        raise LimitError(f"a {n}x{n} block is more than the {MAX_EXPORT_SQUARES} squares "
                         f"potsherd exports", path="size", found=n)
    mats = block_materials(root)
    if mats is None:
        flags = np.zeros((n, n), np.uint8)
        index = np.zeros((n, n), np.uint8)
    else:
        flags, index = mats
    y, x = np.mgrid[0:n, 0:n]
    keep = ((flags >> 3) & 7) == 0
    xs, ys = x[keep], y[keep]
    fl, ix = flags[keep], index[keep]
    cx = np.stack([xs, xs + 1, xs, xs + 1], axis=1)           # corners per square
    cy = np.stack([ys, ys, ys + 1, ys + 1], axis=1)
    pos = np.stack([cx * square, cy * square, h[cy, cx]], axis=-1).astype(np.float32)
    normals = _grid_normals(h, square)[cy, cx]
    uv = _corner_uv(fl)
    colors = None
    lm = light_map(root) if lighting else None
    if lm is not None:
        from .interiors import unpack_colors
        from ...scene.bake_colors import lit_colors
        shift = int(root["lightScale"])
        if lm.shape == ((n << shift) + 1,) * 2:
            # light the renderer multiplies in display space: COLOR_0 is linear
            colors = lit_colors(unpack_colors(lm[cy << shift, cx << shift]))
    split135 = ((xs ^ ys) & 1).astype(bool)
    # corners 0=x0y0 1=x1y0 2=x0y1 3=x1y1; counter-clockwise seen from +z
    t45 = np.array([[0, 1, 3], [0, 3, 2]])
    t135 = np.array([[0, 1, 2], [1, 3, 2]])
    out = []
    for mi in np.unique(ix).tolist():
        sel = np.nonzero(ix == mi)[0]
        k = len(sel)
        tri = np.where(split135[sel][:, None, None], t135[None], t45[None])   # (k, 2, 3)
        tri = tri + (np.arange(k) * 4)[:, None, None]
        prim = Primitive(positions=pos[sel].reshape(-1, 3), normals=normals[sel].reshape(-1, 3),
                         uvs=[uv[sel].reshape(-1, 2)],
                         colors=None if colors is None else colors[sel].reshape(-1, 3),
                         indices=tri.reshape(-1).astype(np.uint32),
                         extras={"terrain_material": int(mi)})
        out.append((int(mi), prim))
    info = {"squares": int(n * n), "empty": int(n * n - keep.sum()),
            "triangles": int(2 * keep.sum()), "lit": colors is not None}
    return out, info


def _load(spec: str, limits: Limits):
    from ... import registry
    from ...containers import read_input
    return registry.decode(read_input(spec, limits), path=spec, limits=limits)


def material_list(name: str, roots: list[str], limits: Limits, warnings: list[str]
                  ) -> tuple[str | None, list[str]]:
    """(where the material list is, its bitmap names) or (None, [])."""
    from .geometry import name_text
    from .textures import find_in_tree
    if not name:
        return None, []
    spec = find_in_tree(name, roots, limits)
    if spec is None:
        warnings.append(f"material list {name!r} not found in the world's tree or on "
                        f"--data-root")
        return None, []
    try:
        doc = _load(spec, limits)
        table = doc.root["payload"]["materials"]
        return spec, [name_text(bytes(x)) for x in table["fName"]]
    except (FormatError, OSError, KeyError, TypeError) as e:
        warnings.append(f"material list {name!r}: {e}")
        return None, []


def world_palette(dml_name: str, roots: list[str], limits: Limits) -> str:
    """The palette a world's tiles are drawn with when none is named: the one
    named after the world (``mars.day.ppl`` for ``mars.dml``, day before
    night), else '' (the first in the tree)."""
    from .textures import find_palettes
    stem = os.path.basename(dml_name.replace("\\", "/")).split(".")[0].lower()
    if not stem:
        return ""
    found = [p for p in find_palettes(roots, limits)
             if os.path.basename(p.split("::")[-1]).lower().startswith(stem + ".")]
    found.sort(key=lambda p: (".day." not in p.lower(), p.lower()))
    return found[0] if found else ""


class TerrainBuilder:
    """Adds a grid file's blocks to a scene (shared by terrain and mission export)."""

    def __init__(self, scene: Scene, *, roots: list[str], limits: Limits, palette: str = "",
                 data_root: str | None = None, textures: bool = True,
                 lighting: bool = True) -> None:
        self.scene = scene
        self.roots = roots
        self.limits = limits
        self.palette = palette
        self.data_root = data_root
        self.textures = textures
        self.lighting = lighting

    def add(self, dtf: dict | None, blocks: dict[int, dict], parent: int | None,
            name: str) -> dict:
        """Meshes for ``blocks`` (id -> GBLK tree) placed per ``dtf``'s block map
        (one node per block when there is no grid file).  Returns summary info."""
        scene = self.scene
        scale = int(dtf["scale"]) if dtf is not None else DEFAULT_SCALE
        if not 0 <= scale <= 12:
            raise FormatError(f"terrain scale shift {scale} outside 0..12", path="dtf.scale")
        square = float(1 << scale)
        mat_names: list[str] = []
        dml_spec = None
        if dtf is not None and self.textures:
            dml_spec, mat_names = material_list(dtf["materialList"], self.roots, self.limits,
                                                scene.warnings)
        materials: dict[int, int] = {}
        meshes: dict[int, int] = {}
        info: dict[str, Any] = {"blocks": {}, "materialList": dml_spec}
        for bid, root in blocks.items():
            prims, binfo = block_primitives(root, square, lighting=self.lighting)
            mesh = Mesh(name=f"{name} block {bid}")
            for mi, prim in prims:
                if mi not in materials:
                    mname = mat_names[mi] if mi < len(mat_names) else ""
                    materials[mi] = scene.add_material(Material(
                        name=mname or f"terrain material {mi}",
                        base_color=(0.55, 0.5, 0.45, 1.0) if not mname else (1, 1, 1, 1),
                        extras={"terrain_material": mi, "map": mname}))
                prim.material = materials[mi]
                mesh.primitives.append(prim)
            meshes[bid] = scene.add_mesh(mesh)
            info["blocks"][bid] = binfo
        if dml_spec and materials:
            from .textures import texture_materials
            palette = self.palette or world_palette(dtf["materialList"], self.roots,
                                                    self.limits)
            info["textured"] = texture_materials(scene, list(materials.values()), dml_spec,
                                                 palette=palette,
                                                 data_root=self.data_root, limits=self.limits)
        # tile coordinates only where a tile is drawn (unused ones are validator noise)
        for mi in meshes.values():
            for p in scene.meshes[mi].primitives:
                if scene.materials[p.material].base_color_texture is None:
                    p.uvs = []
        group = scene.add_node(name=name, parent=parent)
        if dtf is None:
            for bid, mi in meshes.items():
                scene.add_node(name=f"block {bid}", mesh=mi, parent=group)
            info["placed"] = len(meshes)
            return info
        bmap = dtf["blockMap"]
        ids = {b["id"] for b in dtf["blocks"]}
        pattern = dtf.get("blockPattern", 0)
        placed = 0
        side = float(square * int(next(iter(blocks.values()))["size"][0])) if blocks else 0.0
        rows, cols = bmap.shape
        if rows * cols > 4096:
            raise FormatError(f"grid of {rows}x{cols} blocks is more than potsherd places",
                              path="dtf.size")
        for gy in range(rows):
            for gx in range(cols):
                bid = int(bmap[gy, gx])
                if pattern == 0 and len(ids) == 1:      # OneBlockMapsToAll
                    bid = next(iter(ids))
                if bid not in meshes:
                    continue
                scene.add_node(name=f"block {bid} at {gx},{gy}", mesh=meshes[bid], parent=group,
                               translation=(gx * side, gy * side, 0.0),
                               extras={"grid": [gx, gy], "block": bid})
                placed += 1
        info["placed"] = placed
        info["blockSide"] = side
        return info


def ted_blocks(vol_doc, limits: Limits) -> tuple[dict | None, dict[int, dict], str]:
    """The grid file and its blocks from a ``.ted`` volume document."""
    from ... import registry
    names = vol_doc.codec.member_names(vol_doc)
    dtf_name = next((n for n in names if n.lower().endswith(".dtf")), None)
    dtf = None
    if dtf_name is not None:
        dtf = registry.decode(vol_doc.codec.read_member(vol_doc, dtf_name), path=dtf_name,
                              limits=limits).root
    stem = (dtf_name or "terrain").rsplit(".", 1)[0]
    blocks: dict[int, dict] = {}
    wanted = [b["id"] for b in dtf["blocks"]] if dtf is not None else []
    for n in names:
        if not n.lower().endswith(".dtb"):
            continue
        try:
            bid = int(n.rsplit("#", 1)[1].split(".")[0]) if "#" in n else len(blocks)
        except ValueError:
            bid = len(blocks)
        if wanted and bid not in wanted:
            continue
        doc = registry.decode(vol_doc.codec.read_member(vol_doc, n), path=n, limits=limits)
        if doc.format == "dtb":
            blocks[bid] = doc.root
    return dtf, blocks, stem


def ted_scene(doc, *, palette: str = "", data_root: str | None = None,
              source_path: str | None = None, textures: bool = True, lighting: bool = True,
              **_: Any) -> Scene:
    """``convert X.ted X.glb``: the terrain's blocks on its grid, Z-up wrapped."""
    source = source_path or doc.source or "terrain.ted"
    limits = doc.limits or DEFAULT_LIMITS
    scene = Scene(name=os.path.basename(source.split("::")[-1]))
    dtf, blocks, stem = ted_blocks(doc, limits)
    if not blocks:
        raise FormatError("the volume holds no terrain block (.dtb)", path="members")
    b = TerrainBuilder(scene, roots=world_roots(source, data_root), limits=limits,
                       palette=palette, data_root=data_root or None, textures=textures,
                       lighting=lighting)
    info = b.add(dtf, blocks, None, stem)
    scene.extras = {"terrain": info}
    scene.wrap(name="z-up", rotation=Z_UP_Y_FORWARD_TO_GLTF)
    return scene


def block_scene(doc, *, lighting: bool = True, **_: Any) -> Scene:
    """A single ``.dtb`` (8 m squares, untextured: the material list is named
    by the grid file)."""
    scene = Scene(name=os.path.basename((doc.source or "block.dtb").split("::")[-1]))
    b = TerrainBuilder(scene, roots=[], limits=doc.limits or DEFAULT_LIMITS, textures=False,
                       lighting=lighting)
    info = b.add(None, {0: doc.root}, None, scene.name)
    scene.extras = {"terrain": info}
    scene.warnings.append("a lone terrain block has no grid file: 8 m squares assumed, "
                          "untextured")
    scene.wrap(name="z-up", rotation=Z_UP_Y_FORWARD_TO_GLTF)
    return scene


def to_scene(doc, *, palette: str = "", data_root: str | None = None,
             source_path: str | None = None, textures: bool = True, lighting: bool = True,
             **_: Any) -> Scene:
    """A ``.ted`` volume (its grid of blocks) or a lone ``.dtb`` block."""
    if doc.format == "dtb":
        return block_scene(doc, lighting=lighting)
    return ted_scene(doc, palette=palette, data_root=data_root, source_path=source_path,
                     textures=textures, lighting=lighting)
