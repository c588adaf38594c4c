"""Darkstar interiors (``.dis`` + ``.dig`` + ``.dil``) to the neutral scene."""
from __future__ import annotations

from typing import Any


def name_at(buffer: bytes, offset: int) -> str:
    """The NUL-terminated name at ``offset`` of a name buffer ('' when outside)."""
    if not 0 <= offset < len(buffer):
        return ""
    end = buffer.find(b"\0", offset)
    return buffer[offset:end if end >= 0 else len(buffer)].decode("latin-1")


def dis_names(doc) -> dict[str, Any]:
    """File names an interior shape refers to: per LOD geometry, lighting states, materials."""
    root = doc.root
    buf = bytes(root["nameBuffer"])
    geometry = [name_at(buf, lod["geometryFileOffset"]) for lod in root["lods"]]
    lighting = [name_at(buf, int(off)) for off in root["lodLightStates"]]
    return {"geometry": geometry, "lighting": lighting,
            "states": [name_at(buf, s["nameIndex"]) for s in root["states"]],
            "materialList": name_at(buf, root["materialListOffset"])}


# ----------------------------------------------------------------------------
# to glTF

import numpy as np  # noqa: E402

from ...core.errors import FormatError  # noqa: E402
from ...core.limits import DEFAULT_LIMITS, Limits  # noqa: E402
from ...scene import Z_UP_Y_FORWARD_TO_GLTF, Material, Primitive, Scene  # noqa: E402
from ...scene.model import Mesh  # noqa: E402
from ...scene.bake_colors import lit_colors  # noqa: E402

NULL_MATERIAL = 255
#: texels decoded from Huffman light maps per interior (bounds the bit loop)
MAX_LIGHT_TEXELS = 1 << 20


def _load(name: str, roots: list[str], what: str, warnings: list[str],
          limits: Limits = DEFAULT_LIMITS):
    """A file the interior names, read and decoded within the interior's own
    limits (it is as hostile as the interior), or None with a warning."""
    from ... import registry
    from ...resolve import Confinement, read_spec
    from .textures import find_in_tree
    if not name:
        return None
    spec = find_in_tree(name, roots, limits)
    if spec is None:
        warnings.append(f"{what} {name!r} not found beside the interior, in its tree or on "
                        f"--data-root")
        return None
    try:
        data = read_spec(spec, Confinement(roots, limits), name)
        return registry.decode(data, path=spec, limits=limits)
    except (FormatError, OSError) as e:
        warnings.append(f"{what} {name!r}: {e}")
        return None


def unpack_colors(c16: np.ndarray) -> np.ndarray:
    """4:4:4:4 light colours (mono, red, green, blue nibbles, high to low) -> RGB floats."""
    c16 = np.asarray(c16, dtype=np.uint32)
    rgb = np.stack([(c16 >> 8) & 15, (c16 >> 4) & 15, c16 & 15], axis=-1)
    return rgb.astype(np.float32) / 15.0


def light_map(lp: dict, surface: int, budget: list[int]) -> np.ndarray | None:
    """One surface's light map as (h, w) u16 colours, or None (no data / over budget).

    ``mapIndex`` < 0: one colour (its low 16 bits); bit 30 set: Huffman-coded
    (one bit per tree step, least significant bit first) at that offset of the
    map data; else raw little-endian u16 colours there.  Mission lighting's own
    surfaces index its map data the same way (its LZH index table serves the
    interior's base lighting indices, ``ITRMissionLighting::getLightMap``)."""
    s = lp["surfaces"]
    w, h = int(s["mapSizeX"][surface]), int(s["mapSizeY"][surface])
    index = int(s["mapIndex"][surface])
    n = w * h
    if n == 0:
        return None
    if index < 0:
        return np.full((h, w), index & 0xFFFF, np.uint16)
    data = lp["mapData"]["value"]
    if not index & 0x40000000:
        raw = data[index:index + 2 * n]
        if len(raw) < 2 * n:
            return None
        return np.frombuffer(raw.tobytes(), "<u2").reshape(h, w)
    if budget[0] < n:
        return None
    budget[0] -= n
    start = index & ~0x40000000
    bits = np.unpackbits(data[start:start + 2 * n], bitorder="little")
    nodes = lp.get("huffmanNodes")
    leaves = lp.get("huffmanLeaves")
    if nodes is None or leaves is None or len(nodes) == 0:
        return None
    one, zero = nodes["indexOne"].tolist(), nodes["indexZero"].tolist()
    colors = leaves["color"].tolist()
    out = np.zeros(n, np.uint16)
    pos = 0
    for t in range(n):
        node = 0
        while True:
            if pos >= len(bits):
                return None
            nxt = one[node] if bits[pos] else zero[node]
            pos += 1
            if nxt < 0:
                leaf = -(nxt + 1)
                out[t] = colors[leaf] & 0xFFFF if leaf < len(colors) else 0
                break
            if nxt >= len(one):
                return None
            node = nxt
    return out.reshape(h, w)


def _payload_of(pdoc, class_name: bytes) -> dict | None:
    """The decoded payload of a PERS file of that class, or None (another class,
    or a version kept as an opaque block)."""
    root = pdoc.root
    if not isinstance(root, dict) or bytes(root.get("className", b"")) != class_name:
        return None
    return root["payload"] if isinstance(root.get("payload"), dict) else None


def _pick_lod(doc, state: int, lod: int, roots: list[str], warnings: list[str],
              limits: Limits = DEFAULT_LIMITS):
    root = doc.root
    names = dis_names(doc)
    states = root["states"]
    if not states:
        raise FormatError("the interior has no states")
    if not 0 <= state < len(states):
        raise FormatError(f"state {state} of {len(states)}")
    st = states[state]
    first, count = st["lodIndex"], st["numLODs"]
    order = list(range(first, min(first + count, len(root["lods"]))))
    if not order:
        raise FormatError(f"state {state} has no levels of detail")
    pref = order[min(max(lod, 0), len(order) - 1)]
    order.remove(pref)
    for li in [pref] + order:
        gname = names["geometry"][li]
        quiet: list[str] = []
        gdoc = _load(gname, roots, "geometry", quiet, limits)
        if gdoc is not None and _payload_of(gdoc, b"ITRGeometry") is not None:
            if li != pref:
                warnings.append(f"LOD {pref - first}'s geometry {names['geometry'][pref]!r} is "
                                f"missing; exported LOD {li - first} ({gname})")
            return li, gdoc
    raise FormatError(f"none of the interior's geometry files ({', '.join(names['geometry'])}) "
                      f"was found beside it, in its tree or on --data-root")


def to_scene(doc, *, state: int = 0, lod: int = 0, palette: str = "", lighting: bool = True,
             ambient: float = 0.4, data_root: str | None = None, source_path: str | None = None,
             volumes: tuple[str, ...] = (), **_: Any) -> Scene:
    """An interior state's level of detail as one mesh: its surfaces' polygons
    (fans) grouped by material, texture coordinates placed in each material
    bitmap by the surface's texture offset and size, light maps baked into
    vertex colours (sampled at the vertices; the engine adds the mission's
    ambient light at run time, so ``ambient`` is added here: colour = ambient +
    (1 - ambient) * light map, a display value the renderer multiplies by, so
    COLOR_0 is its sRGB decoding), materials from its ``.dml``; ``volumes`` (a
    mission's world volumes) are searched for palettes after the bitmap's own."""
    from .geometry import name_text
    from .textures import search_roots, texture_materials
    source = source_path or doc.source or "interior.dis"
    scene = Scene(name=source.replace("\\", "/").rsplit("/", 1)[-1].split("::")[-1])
    roots = search_roots(source, data_root)
    names = dis_names(doc)
    limits = doc.limits or DEFAULT_LIMITS
    li, gdoc = _pick_lod(doc, int(state or 0), int(lod or 0), roots, scene.warnings, limits)
    g = gdoc.root["payload"]
    lods = doc.root["lods"]
    lstate = int(lods[li]["lightStateIndex"])
    lp = None
    if lighting and 0 <= lstate < len(names["lighting"]):
        ldoc = _load(names["lighting"][lstate], roots, "lighting", scene.warnings, limits)
        lp = None if ldoc is None else (_payload_of(ldoc, b"ITRLighting")
                                        or _payload_of(ldoc, b"ITRMissionLighting"))
        if ldoc is not None and lp is None:
            scene.warnings.append(f"{names['lighting'][lstate]} holds no ITRLighting v4, v6-v7 "
                                  f"block (nor ITRMissionLighting 7): lighting ignored")
        if lp is not None:
            if len(lp["surfaces"]) != len(g["surfaces"]):
                scene.warnings.append(f"lighting has {len(lp['surfaces'])} surfaces, geometry "
                                      f"{len(g['surfaces'])}: lighting ignored")
                lp = None
    # materials from the .dml
    mat_names: list[str] = []
    mat_flags: list[int] = []
    mdoc = _load(names["materialList"], roots, "material list", scene.warnings, limits)
    if mdoc is not None and _payload_of(mdoc, b"TS::MaterialList") is not None:
        table = mdoc.root["payload"]["materials"]
        mat_names = [name_text(bytes(x)) for x in table["fName"]]
        mat_flags = [int(f) for f in table["fFlags"]]

    surf = g["surfaces"]
    verts, p3, p2 = g["vertices"], g["points3"], g["points2"]
    keep = (surf["material"] != NULL_MATERIAL) & ((surf["typeBits"] & 1) == 0) & (surf["vertexCount"] >= 3)
    sidx = np.nonzero(keep)[0]
    counts = surf["vertexCount"][sidx].astype(np.int64)
    starts = surf["vertexIndex"][sidx].astype(np.int64)
    if counts.size and int((starts + counts).max()) > len(verts):
        raise FormatError("a surface's vertices run past the vertex list", path="dig.surfaces")
    corner = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    vi = verts["pointIndex"][corner].astype(np.int64)
    ti = verts["textureIndex"][corner].astype(np.int64)
    if (vi.size and vi.max() >= len(p3)) or (ti.size and ti.max() >= len(p2)):
        raise FormatError("a vertex indexes past the point lists", path="dig.vertices")
    pos = np.stack([p3["x"][vi], p3["y"][vi], p3["z"][vi]], axis=1).astype(np.float32)
    uv = np.stack([p2["x"][ti], p2["y"][ti]], axis=1).astype(np.float32)
    owner = np.repeat(np.arange(len(sidx)), counts)     # corner -> kept surface
    first_corner = np.cumsum(counts) - counts
    # fans: (first, k, k+1) per surface, reversed once for glTF's counter-clockwise rule
    ntri = counts - 2
    tri_s = np.repeat(np.arange(len(sidx)), ntri)
    k = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    a = first_corner[tri_s]
    tris = np.stack([a, a + k + 1, a + k], axis=1)
    colors = None
    if lp is not None:
        colors = np.ones((len(pos), 3), np.float32)
        budget = [MAX_LIGHT_TEXELS]
        skipped = 0
        for j, s in enumerate(sidx):
            m = light_map(lp, int(s), budget)
            if m is None:
                skipped += 1
                continue
            sel = owner == j
            h, w = m.shape
            x = np.clip(np.rint(uv[sel, 0] * (w - 1)), 0, w - 1).astype(np.int64)
            y = np.clip(np.rint(uv[sel, 1] * (h - 1)), 0, h - 1).astype(np.int64)
            amb = float(min(max(ambient, 0.0), 1.0))
            colors[sel] = amb + (1.0 - amb) * unpack_colors(m[y, x])
        if skipped:
            scene.warnings.append(f"{skipped} surfaces without a readable light map left unlit")
        colors = lit_colors(colors)    # the renderer lights in display space; COLOR_0 is linear
    mats = surf["material"][sidx]
    mesh = Mesh(name=scene.name)
    material_of: dict[int, int] = {}
    for mi in np.unique(mats).tolist():
        name = mat_names[mi] if mi < len(mat_names) else ""
        flags = mat_flags[mi] if mi < len(mat_flags) else 0
        # the material list's flags, as for shapes: 0x2000 translucent, 0x1000 transparent
        alpha = "BLEND" if flags & 0x2000 else "MASK" if flags & 0x1000 else "OPAQUE"
        material_of[mi] = scene.add_material(Material(name=name or f"material {mi}",
                                                      alpha_mode=alpha,
                                                      extras={"itr_material": mi, "map": name,
                                                              "flags": flags}))
    textured = texture_materials(scene, list(material_of.values()), source, palette=palette,
                                 data_root=data_root, limits=limits, volumes=volumes)
    for mi, scene_mat in material_of.items():
        sel_t = mats[tri_s] == mi
        used = np.unique(tris[sel_t])
        remap = np.full(len(pos), -1, np.int64)
        remap[used] = np.arange(len(used))
        m_uv = uv[used].copy()
        tex = scene.materials[scene_mat].base_color_texture
        if tex is not None:  # place the surface's 0..1 coordinates inside the bitmap
            w_img, h_img = scene.images[tex.image].extras.get("size", (0, 0))
            so = sidx[owner[used]]
            if w_img and h_img:
                with np.errstate(over="ignore", invalid="ignore"):  # hostile values stay inf
                    m_uv[:, 0] = (surf["textureOffsetX"][so]
                                  + m_uv[:, 0] * (surf["textureSizeX"][so] + 1.0)) / w_img
                    m_uv[:, 1] = (surf["textureOffsetY"][so]
                                  + m_uv[:, 1] * (surf["textureSizeY"][so] + 1.0)) / h_img
        prim = Primitive(positions=pos[used], indices=remap[tris[sel_t]].reshape(-1).astype(np.uint32),
                         uvs=[m_uv], material=scene_mat,
                         colors=None if colors is None else colors[used],
                         extras={"itr_material": int(mi)})
        mesh.primitives.append(prim)
    mesh_index = scene.add_mesh(mesh)
    scene.add_node(name=scene.name, mesh=mesh_index, extras={"itr_lod": li})
    scene.extras = {**(scene.extras or {}), "geometry": names["geometry"][li],
                    "lighting": (names["lighting"][lstate] if lp is not None else None),
                    "materialList": names["materialList"], "textured_materials": textured,
                    "surfaces": int(len(sidx)), "states": names["states"]}
    scene.wrap(name="z-up", rotation=Z_UP_Y_FORWARD_TO_GLTF)
    return scene

