"""FBX node tree -> neutral scene (docs/formats/fbx.md, "Scene semantics"); 7.x, 6.x, 5.x trees.

Objects are wired by ``Connections``; models become nodes (full FBX local
transform with pivots, offsets and pre/post rotation, decomposed to TRS),
meshes are split by material, triangulated (fans, earcut for concave n-gons) and welded with per-corner
normals / UVs / colours de-indexed by mapping and reference mode, skins come
from clusters (inverse bind = TransformLink^-1 · Transform), blend shapes
become morph targets and animation stacks (6.x/5.x: Takes) become animations
(curves evaluated as FBX interpolates them at their key times plus a 30 fps
grid, Euler rotations turned into quaternions per sample).  ASCII documents
are typed through the signature table first; 5.x trees are first rewritten in
the 6.x node model (:func:`upgrade_fbx5`).  Transforms, inverse bind matrices,
triangle counts and animation samples are checked against ufbx in the tests.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...core.errors import FormatError, ValueFormatError
from ...scene import (Animation, Channel, Mesh, MorphTarget, Primitive,
                      Scene, Skin, decompose_matrix,
                      mat4_from_gltf, matrix_to_quat, quat_continuous, quat_from_euler,
                      trs_to_matrix, weld)
from ...scene.geometry import triangulate_polygons
from .model import FbxNode
from .scene_materials import MaterialBuilder, TextureFiles, layer_element_textures
from .scene_rig import (as_time_series, euler_quat, evaluate, inherit_mode, layer_blend,
                        quat_euler, varies)
from .objects import (KTIME_PER_SECOND, ROTATION_ORDERS, local_trs_many,
                      local_trs_of_inputs, transform_inputs, Properties, _Object,
                      _axis_matrix, _number,
                      _p70, _text, _text_child, _values, _vec)
from .curves import _Curve, _Defaults, _Layer, _take_keys, prepare_curves, sample_curves
from .fbx5 import upgrade_fbx5

GRID_FPS = 30.0
#: longest sampling grid (about 55 minutes at 30 fps); longer spans keep key times only
MAX_GRID_SAMPLES = 100_000
#: node-time samples evaluated at once (4x4 matrices; about 50 MB each kind)
MAX_EVAL_MATRICES = 400_000


def to_scene(doc: Any, **options: Any) -> Scene:
    root: FbxNode = doc.root
    if doc.format == "fbx-ascii":
        from .transcode import ascii_tree_to_binary
        root = ascii_tree_to_binary(root, "none")
    if root.find(b"Objects") is None or root.find(b"Connections") is None:
        if root.find(b"Model") is None:
            raise NotImplementedError("no Objects/Connections and no top-level models")
        root = upgrade_fbx5(root)
    builder = _Builder(root, options)
    try:
        return builder.build()
    finally:
        # the material builder calls back into the builder (a reference cycle):
        # dropping it lets the whole node tree go by reference counting, not
        # wait for a full garbage collection (tens of ms per batch of files)
        builder.materials = None


class _Builder:
    def __init__(self, root: FbxNode, options: dict) -> None:
        self.root = root
        self.options = options
        self.scene = Scene(name=str(options.get("name") or "fbx"))
        self.objects: dict[int, _Object] = {}
        for n in root.find(b"Objects").children or ():
            o = _Object(n)
            if o.id is not None:
                self.objects[o.id] = o
        self.children: dict[int, list] = defaultdict(list)   # parent -> [(child, prop)]
        self.parents: dict[int, list] = defaultdict(list)    # child -> [(parent, prop)]
        for c in root.find(b"Connections").children or ():
            p = c.props  # C (7.x, numeric ids) or Connect (6.x, names as ids)
            if len(p) >= 3 and p[0][0] == "S" and p[1][0] in "LIS" and p[2][0] in "LIS":
                prop = _text(p[3][1]) if len(p) > 3 and p[3][0] == "S" else None
                self.children[p[2][1]].append((p[1][1], prop))
                self.parents[p[1][1]].append((p[2][1], prop))
        self.node_of: dict[int, int] = {}
        self.material_of: dict[int, int] = {}
        self.image_of: dict[int, int] = {}
        #: mesh index -> BlendShapeChannel ids, in morph-target order
        self.mesh_targets: dict[int, list] = {}
        creator = root.find(b"Creator")
        header = root.find(b"FBXHeaderExtension")
        if creator is None and header is not None:
            creator = header.find(b"Creator")
        blender = creator is not None and bool(creator.props) and \
            b"Blender" in bytes(creator.props[0][1] if isinstance(creator.props[0][1], bytes)
                                else b"")
        self.materials = MaterialBuilder(
            self.scene, self.material_textures, lambda tex: self.linked(tex.id, "Video"),
            [o for o in self.objects.values() if o.kind == "Video"],
            TextureFiles(options.get("source_path"), options.get("data_root")), blender)
        self.mesh_of: dict[int, tuple] = {}
        #: material id -> (texture, slot) pairs a 6.x geometry gives it
        self.legacy_textures: dict[int, list] = {}
        #: model id -> FBX world matrix (before the axis/unit wrapper)
        self.world: dict[int, np.ndarray] = {}
        #: model id -> parent model id, inherit mode, rest local (t, q, s)
        self.parent_of: dict = {}
        self.mode_of: dict = {}
        self.rest_trs: dict = {}
        self.order: list = []
        #: model id -> glTF node its mesh, joint use and plain children attach to
        #: (a scale helper for nodes in ``split``)
        self.attach_of: dict = {}
        self.split: set = set()
        self.apply_templates()
        self._last_channels: list = []

    def apply_templates(self) -> None:
        """Property defaults from ``Definitions/ObjectType/PropertyTemplate``
        (e.g. ``InheritType`` 0 for every MotionBuilder model), under each
        object's own properties, as FBX readers resolve them."""
        defs = self.root.find(b"Definitions")
        templates: dict = {}
        for ot in defs.find_all(b"ObjectType") if defs is not None else ():
            kind = _text(ot.props[0][1]) if ot.props and ot.props[0][0] == "S" else ""
            for pt in ot.find_all(b"PropertyTemplate"):
                props = _p70(pt)
                if props:
                    templates.setdefault(kind, Properties()).update(props)
        if not templates:
            return
        for o in self.objects.values():
            base = templates.get(o.kind)
            if base:
                o.props = base.under(o.props)

    def linked(self, oid: int, kind: str | None = None, sub: str | None = None,
               up: bool = False, prop: Any = False) -> list[_Object]:
        pairs = self.parents[oid] if up else self.children[oid]
        out = []
        for other, p in pairs:
            o = self.objects.get(other)
            if o is None or (kind and o.kind != kind) or (sub and o.sub != sub):
                continue
            if prop is not False and p != prop:
                continue
            out.append(o)
        return out

    # ------------------------------------------------------------------
    def build(self) -> Scene:
        sc = self.scene
        models = [o for o in self.objects.values() if o.kind == "Model"]
        # hierarchy: create nodes parents-first
        order, seen = [], set()
        for m in models:
            chain = []
            cur: _Object | None = m
            while cur is not None and cur.id not in seen and cur.id not in {c.id for c in chain}:
                chain.append(cur)
                ups = self.linked(cur.id, "Model", up=True, prop=None)
                cur = ups[0] if ups else None
            for c in reversed(chain):
                seen.add(c.id)
                order.append(c)
        self.order = order
        placed: set = set()
        rest_inputs = []
        for m in order:
            ups = self.linked(m.id, "Model", up=True, prop=None)
            self.parent_of[m.id] = ups[0].id if ups and ups[0].id in placed else None
            self.mode_of[m.id] = inherit_mode(m.number("InheritType", -1))
            rest_inputs.append(transform_inputs(m))
            placed.add(m.id)
        # every model's rest transform in a few stacked chains (the same bits as one by one)
        self.rest_trs.update(zip([m.id for m in order], local_trs_of_inputs(rest_inputs)))
        self.split = self.scale_split_nodes()
        states, gltf_local, helper = evaluate([m.id for m in order], self.parent_of,
                                              self.mode_of, self.rest_trs, self.split)
        for m in order:
            pid = self.parent_of[m.id]
            parent = (self.attach_of.get(pid) if self.mode_of[m.id] == "RSrs"
                      else self.node_of.get(pid))
            self.world[m.id] = states[m.id].world[0]
            t, q, s = (x[0] for x in gltf_local[m.id])
            self.node_of[m.id] = sc.add_node(name=m.name, parent=parent,
                                             translation=t.tolist(), rotation=q.tolist(),
                                             scale=s.tolist(), extras={"fbx_class": m.sub})
            self.attach_of[m.id] = self.node_of[m.id]
            if m.id in helper:  # carries the scale; mesh, joint and plain children hang here
                self.attach_of[m.id] = sc.add_node(
                    name=m.name + "_scale", parent=self.node_of[m.id],
                    scale=helper[m.id][0].tolist(), extras={"fbx_scale_helper": True})
        skinned = []
        for m in order:
            geometries = self.linked(m.id, "Geometry", "Mesh")
            if not geometries and m.sub == "Mesh" and m.child("Vertices") is not None:
                geometries = [m]  # 6.x keeps the geometry inside its model
            for g in geometries:
                if g.id not in self.mesh_of:  # instances share one glTF mesh
                    self.mesh_of[g.id] = self.mesh(g, m)
                mesh, skin = self.mesh_of[g.id]
                if mesh is None:
                    continue
                if skin is not None:
                    skinned.append((m, mesh, skin))
                    continue
                self.attach(m, mesh)
        gs_node = self.root.find(b"GlobalSettings") or \
            self.root.find(b"Objects").find(b"GlobalSettings")  # 6.x: inside Objects
        gs = _p70(gs_node or FbxNode(b""))
        axes = _axis_matrix(gs)
        unit = _number(gs.get("UnitScaleFactor") or [1.0], "GlobalSettings/UnitScaleFactor") / 100.0
        if self.options.get("keep_units"):
            unit = 1.0
        rot = None
        if not np.allclose(axes, np.eye(3)):
            if np.linalg.det(axes) > 0:
                rot = matrix_to_quat(axes).tolist()
            else:
                sc.warnings.append("left-handed FBX axis system: mirrored by a negative scale")
        if sc.roots and (rot is not None or abs(unit - 1.0) > 1e-12):
            scale = [unit] * 3
            if rot is None and np.linalg.det(axes) < 0:
                t, q, s = decompose_matrix(np.block([[axes * unit, np.zeros((3, 1))],
                                                     [np.zeros((1, 3)), np.ones((1, 1))]]))
                rot, scale = q.tolist(), s.tolist()
            sc.wrap(name="fbx_axes_units", rotation=rot, scale=scale)
        for m, mesh, skin in skinned:  # skinned mesh nodes stay roots (glTF rule)
            sc.add_node(name=m.name + "_skinned", mesh=mesh, skin=skin)
        if not sc.nodes:
            sc.add_node(name="fbx_root")  # a scene without models is still a valid scene
        self.animations()
        return sc

    def scale_split_nodes(self) -> set:
        """Models whose scale must not reach their RrSs/Rrs children through
        glTF's plain product: non-uniform (at rest) or animated scale, with at
        least one such child."""
        out = set()
        for nid, pid in self.parent_of.items():
            if pid is None or self.mode_of[nid] == "RSrs" or pid in out:
                continue
            s = self.rest_trs[pid][2][0]
            animated = any(p == "Lcl Scaling" and self.objects.get(c) is not None and
                           self.objects[c].kind == "AnimationCurveNode"
                           for c, p in self.children[pid])
            if animated or np.ptp(s) > 1e-9 * max(1.0, float(np.abs(s).max())):
                out.add(pid)
        return out

    def attach(self, m: _Object, mesh: int) -> None:
        gt = _vec(m, "GeometricTranslation", (0, 0, 0))
        gr = _vec(m, "GeometricRotation", (0, 0, 0))
        gsc = _vec(m, "GeometricScaling", (1, 1, 1))
        node = self.attach_of[m.id]
        if np.any(gt != 0) or np.any(gr != 0) or np.any(gsc != 1):
            q = quat_from_euler(gr, "XYZ", degrees=True)
            self.scene.add_node(name=m.name + "_geometry", parent=node, mesh=mesh,
                                translation=gt.tolist(), rotation=q.tolist(),
                                scale=gsc.tolist())
        else:
            self.scene.nodes[node].mesh = mesh

    # ------------------------------------------------------------------
    def material(self, mo: _Object) -> int:
        if mo.id in self.material_of:
            return self.material_of[mo.id]
        color = _vec(mo, "DiffuseColor", (0.8, 0.8, 0.8))
        if "DiffuseColor" not in mo.props and "Diffuse" in mo.props:
            color = _vec(mo, "Diffuse", (0.8, 0.8, 0.8))
        for pbr in ("3dsMax|main|basecolor", "3dsMax|Parameters|base_color", "Maya|base_color",
                    "Maya|baseColor"):
            if pbr in mo.props:  # the PBR colour when the material has one
                color = _vec(mo, pbr, (0.8, 0.8, 0.8))
                break
        factor = mo.number("DiffuseFactor", 1.0)
        opacity = mo.number("Opacity", 1.0 - mo.number("TransparencyFactor", 0.0))
        emissive = _vec(mo, "EmissiveColor", (0, 0, 0)) * mo.number("EmissiveFactor", 1.0)
        mat = self.materials.material(mo, tuple(np.clip(color * factor, 0, 1).tolist()),
                                      float(np.clip(opacity, 0, 1)), emissive)
        idx = self.scene.add_material(mat)
        self.material_of[mo.id] = idx
        return idx

    def material_textures(self, mo: _Object) -> list:
        """(texture, material property) pairs.  A layered texture stands for its
        first layer that shows a picture; so does a map that is a node graph (a
        3ds Max OSL bitmap, a shader graph, a Physical/OpenPBR material's map:
        a Texture with no file or clip of its own and textures connected into
        it): the bitmap behind it, as ufbx resolves them."""
        out = []
        pairs = [(self.objects.get(tid), prop) for tid, prop in self.children[mo.id]]
        if not any(t is not None and t.kind.endswith("Texture") for t, _ in pairs):
            pairs = self.legacy_textures.get(mo.id, [])  # FBX 6.x: the geometry's slots
        for tex, prop in pairs:
            if tex is None or prop is None:
                continue
            if tex.kind in ("LayeredTexture", "Texture"):
                tex = self._bitmap(tex)
            if tex is not None and tex.kind == "Texture":
                out.append((tex, prop))
        return out

    def _bitmap(self, tex: _Object, depth: int = 0) -> _Object | None:
        """``tex`` when it shows a picture itself (a file name or a clip), else
        the first texture connected into it that does (breadth first, a few
        levels: graphs are shallow, and a cycle must not hang); without one, a
        plain texture is itself and a layered texture its first layer."""
        from .scene_materials import _file_names
        seen = {tex.id}
        level = [tex]
        first = None
        for _ in range(8):
            nxt = []
            for t in level:
                if t.kind == "Texture" and (_file_names(t) or self.linked(t.id, "Video")):
                    return t
                first = first or (t if t.kind == "Texture" else None)
                for c in self.linked(t.id):
                    if c.kind in ("Texture", "LayeredTexture") and c.id not in seen:
                        seen.add(c.id)
                        nxt.append(c)
            if not nxt:
                break
            level = nxt
        return tex if tex.kind == "Texture" else first

    # ------------------------------------------------------------------
    def mesh(self, g: _Object, model: _Object) -> tuple[int | None, int | None]:
        verts = g.array("Vertices")
        pvi = g.array("PolygonVertexIndex")
        if verts is None or pvi is None or len(pvi) == 0:
            return None, None
        if len(verts) % 3:
            raise ValueFormatError(f"Vertices holds {len(verts)} values, not x, y, z triples",
                                   path="Objects/Geometry/Vertices", found=len(verts))
        verts = verts.astype(np.float64).reshape(-1, 3)
        pvi = pvi.astype(np.int64)
        ends = pvi < 0
        if not ends[-1]:
            ends = ends.copy()
            ends[-1] = True
        corners = np.where(pvi < 0, ~pvi, pvi)
        if corners.size and (corners.max() >= len(verts)):
            raise FormatError(f"geometry {g.name!r}: polygon index out of range")
        end_pos = np.flatnonzero(ends)
        sizes = np.diff(np.concatenate([[-1], end_pos]))
        poly = np.repeat(np.arange(len(sizes)), sizes)
        C = len(corners)
        normals = self.layer(g, "LayerElementNormal", "Normals", 3, corners, poly)
        uvs = []
        for el in g.node.find_all(b"LayerElementUV"):
            uv = self.layer_node(el, "UV", 2, corners, poly, g.path("LayerElementUV"))
            if uv is not None:
                uv = uv.copy()
                uv[:, 1] = 1.0 - uv[:, 1]
                uvs.append(uv)
        colors = self.layer(g, "LayerElementColor", "Colors", 4, corners, poly)
        mats_el = g.node.find(b"LayerElementMaterial")
        mat_objs = self.linked(model.id, "Material")
        if mats_el is not None and mats_el.find(b"Materials") is not None:
            mi = _values(mats_el.find(b"Materials"),
                         g.path("LayerElementMaterial/Materials")).astype(np.int64)
            mapping = _text_child(mats_el, b"MappingInformationType")
            if mapping == "AllSame" or len(mi) < len(sizes):
                mat_poly = np.full(len(sizes), mi[0] if len(mi) else 0)
            else:
                mat_poly = mi[:len(sizes)]
        else:
            mat_poly = np.zeros(len(sizes), dtype=np.int64)
        if mat_objs:  # FBX 6.x texture slots (textures of the geometry, then the model)
            texs = list({t.id: t for o in dict.fromkeys((g.id, model.id)) for t in self.linked(o)
                         if t.kind.endswith("Texture")}.values())
            for m, pairs in layer_element_textures(g.node, texs, mat_poly, len(mat_objs)).items():
                self.legacy_textures.setdefault(mat_objs[m].id, pairs)
        skin_data = self.skin(g, model)
        targets = self.blend_shapes(g, len(verts))
        prims = []
        local = np.empty(C, dtype=np.int64)
        for m in np.unique(mat_poly):
            sel = mat_poly == m
            cidx = np.flatnonzero(sel[poly])
            tri = triangulate(sizes[sel], cidx, verts[corners])
            if not len(tri):
                continue
            keys = [corners[cidx]]
            if normals is not None:
                keys.append(normals[cidx])
            keys += [u[cidx] for u in uvs]
            if colors is not None:
                keys.append(colors[cidx])
            first, remap = weld(*keys)
            local[cidx] = np.arange(len(cidx))
            vsrc = cidx[first]
            cp = corners[vsrc]
            prim = Primitive(positions=verts[cp].astype(np.float32),
                             indices=remap[local[tri]].astype(np.uint32),
                             normals=None if normals is None else normals[vsrc].astype(np.float32),
                             uvs=[u[vsrc].astype(np.float32) for u in uvs],
                             colors=None if colors is None else
                             np.clip(colors[vsrc], 0, 1).astype(np.float32))
            if 0 <= m < len(mat_objs):
                prim.material = self.material(mat_objs[int(m)])
            if skin_data is not None:
                prim.joints = skin_data[1][cp]
                prim.weights = skin_data[2][cp]
            if targets:
                prim.targets = [MorphTarget(name=name, positions=d[cp].astype(np.float32))
                                for name, d, _ in targets]
            prims.append(prim)
        if not prims:
            return None, None
        mesh = Mesh(name=g.name or model.name, primitives=prims)
        if targets:
            mesh.weights = [w for _, _, w in targets]
            mesh.target_names = [n for n, _, _ in targets]
        mesh_index = self.scene.add_mesh(mesh)
        self.mesh_targets[mesh_index] = [ch for ch in self._last_channels]
        skin_index = None
        if skin_data is not None:
            skin_index = self.scene.add_skin(skin_data[0])
        return mesh_index, skin_index

    def layer(self, g: _Object, element: str, name: str, width: int, corners, poly):
        el = g.node.find(element)
        return None if el is None else self.layer_node(el, name, width, corners, poly,
                                                       g.path(element))

    def layer_node(self, el: FbxNode, name: str, width: int, corners, poly,
                   path: str) -> np.ndarray | None:
        data_node = el.find(name)
        if data_node is None:
            return None
        data = _values(data_node, f"{path}/{name}").astype(np.float64)
        if data.size % width:
            return None
        data = data.reshape(-1, width)
        idx_node = el.find(name + "Index") or el.find(name[:-1] + "Index")
        mapping = _text_child(el, b"MappingInformationType")
        if idx_node is not None:  # the index array is the reliable signal (ufbx #135)
            index = _values(idx_node, f"{path}/{_text(idx_node.name)}").astype(np.int64)
        else:
            index = None
        if mapping in ("ByPolygonVertex", ""):
            sel = np.arange(len(corners))
        elif mapping in ("ByVertice", "ByVertex", "ByControlPoint"):
            sel = corners
        elif mapping == "ByPolygon":
            sel = poly
        elif mapping == "AllSame":
            sel = np.zeros(len(corners), dtype=np.int64)
        else:
            return None
        if index is not None:
            if sel.size and sel.max() >= len(index):
                return None
            sel = index[sel]
        if sel.size and (sel.max() >= len(data) or sel.min() < 0):
            return None
        return data[sel]

    # ------------------------------------------------------------------
    def skin(self, g: _Object, model: _Object):
        skins = self.linked(g.id, "Deformer", "Skin")
        if not skins:
            return None
        n = len(g.array("Vertices")) // 3
        geometric = trs_to_matrix(
            _vec(model, "GeometricTranslation", (0, 0, 0)),
            quat_from_euler(_vec(model, "GeometricRotation", (0, 0, 0)), "XYZ", degrees=True),
            _vec(model, "GeometricScaling", (1, 1, 1)))
        geometry_world = self.world.get(model.id, np.eye(4)) @ geometric
        joints, ibms = [], []
        cps, js, ws = [], [], []
        for cl in self.linked(skins[0].id, "Deformer", "Cluster"):
            bones = self.linked(cl.id, "Model")
            if not bones or bones[0].id not in self.node_of:
                continue
            idx = cl.array("Indexes")
            wts = cl.array("Weights")
            j = len(joints)
            joints.append(self.attach_of[bones[0].id])
            ibms.append(self.bind_matrix(cl, bones[0], model, geometric, geometry_world))
            if idx is not None and wts is not None and len(idx) == len(wts):
                ok = (idx >= 0) & (idx < n)
                cps.append(idx[ok].astype(np.int64))
                js.append(np.full(int(ok.sum()), j))
                ws.append(wts[ok].astype(np.float64))
        if not joints:
            return None
        cp = np.concatenate(cps) if cps else np.zeros(0, np.int64)
        jj = np.concatenate(js) if js else np.zeros(0, np.int64)
        ww = np.concatenate(ws) if ws else np.zeros(0)
        order = np.lexsort((-ww, cp))
        cp, jj, ww = cp[order], jj[order], ww[order]
        counts = np.bincount(cp, minlength=n)
        k = max(int(counts.max()) if counts.size else 1, 1)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(cp)) - starts[cp]
        J = np.zeros((n, k), np.uint16)
        W = np.zeros((n, k), np.float32)
        J[cp, slot] = jj
        W[cp, slot] = ww
        none = W.sum(axis=1) == 0
        W[none, 0] = 1.0
        if none.any():
            self.scene.warnings.append(f"{int(none.sum())} skinned vertices without weights "
                                       "bound to the first joint")
        return Skin(joints=joints, inverse_bind_matrices=np.stack(ibms), name=g.name), J, W

    def bind_matrix(self, cl: _Object, bone: _Object, model: _Object, geometric: np.ndarray,
                    geometry_world: np.ndarray) -> np.ndarray:
        """The inverse bind matrix (geometry -> bone at bind time) stored with
        the skin: the cluster's ``Transform`` (mesh node to bone, as exporters
        write it) times the geometric transform; without it, the bone's bind
        matrix (``TransformLink``, else the BindPose, else its current world)
        inverted, times the mesh's current world."""
        transform = cl.array("Transform")
        if transform is not None and len(transform) == 16 and np.any(transform):
            m = mat4_from_gltf(transform.astype(np.float64))
            if np.all(np.isfinite(m)):
                return m @ geometric
        link = cl.array("TransformLink")
        bind = None
        if link is not None and len(link) == 16 and np.any(link):
            bind = mat4_from_gltf(link.astype(np.float64))
        if bind is None:
            bind = self.bind_poses().get(bone.id)
        if bind is None:
            bind = self.world.get(bone.id, np.eye(4))
        mesh_world = self.bind_poses().get(model.id)
        mesh_world = geometry_world if mesh_world is None else mesh_world @ geometric
        try:
            return np.linalg.inv(bind) @ mesh_world
        except np.linalg.LinAlgError:
            self.scene.warnings.append(f"cluster {cl.name!r}: singular bind matrix")
            return np.eye(4)

    def bind_poses(self) -> dict:
        """Model id -> world matrix from the BindPose ``Pose`` objects."""
        if getattr(self, "_bind_poses", None) is None:
            self._bind_poses = {}
            for pose in self.objects.values():
                if pose.kind != "Pose" or pose.sub != "BindPose":
                    continue
                for pn in pose.node.find_all(b"PoseNode"):
                    node, matrix = pn.find(b"Node"), pn.find(b"Matrix")
                    if node is None or matrix is None or not node.props:
                        continue
                    values = _values(matrix, f"Objects/Pose::{pose.name}/PoseNode/Matrix")
                    if len(values) == 16:
                        self._bind_poses.setdefault(node.props[0][1],
                                                    mat4_from_gltf(values.astype(np.float64)))
        return self._bind_poses

    def blend_shapes(self, g: _Object, n: int) -> list:
        out = []
        self._last_channels = []
        for bs in self.linked(g.id, "Deformer", "BlendShape"):
            for ch in self.linked(bs.id, "Deformer", "BlendShapeChannel"):
                shapes = self.linked(ch.id, "Geometry", "Shape")
                if not shapes:
                    continue
                sh = shapes[0]
                idx = sh.array("Indexes")
                off = sh.array("Vertices")
                if idx is None or off is None or len(off) != 3 * len(idx):
                    continue
                d = np.zeros((n, 3))
                ok = (idx >= 0) & (idx < n)
                d[idx[ok].astype(np.int64)] = off.reshape(-1, 3)[ok]
                out.append((ch.name or sh.name, d, ch.number("DeformPercent", 0.0) / 100.0))
                self._last_channels.append(ch.id)
        return out

    # ------------------------------------------------------------------
    def animations(self) -> None:
        stacks = [o for o in self.objects.values() if o.kind == "AnimationStack"]
        if not stacks:
            self.take_animations()
        for stack in stacks:
            anim = Animation(name=stack.name)
            per_model: dict[int, dict] = defaultdict(lambda: defaultdict(list))
            weights: dict[int, dict] = defaultdict(dict)
            unprepared: list = []  # the stack's curves, their keys decoded at once below
            for layer_index, layer in enumerate(self.linked(stack.id, "AnimationLayer")):
                blend = _Layer(layer_index, layer, self.curve_of(layer.id, "Weight"))
                for cn in self.linked(layer.id, "AnimationCurveNode"):
                    for target, prop in self.parents[cn.id]:
                        o = self.objects.get(target)
                        if o is None or prop is None:
                            continue
                        curves = {}
                        for cid, cprop in self.children[cn.id]:
                            c = self.objects.get(cid)
                            if c is not None and c.kind == "AnimationCurve" and cprop:
                                t = c.array("KeyTime")
                                v = c.array("KeyValueFloat")
                                if t is not None and v is not None and len(t) == len(v) and len(t):
                                    curves[cprop] = _Curve(t, v, c.array("KeyAttrFlags"),
                                                           c.array("KeyAttrDataFloat"),
                                                           c.array("KeyAttrRefCount"),
                                                           prepare=False)
                                    unprepared.append(curves[cprop])
                        if not curves and o.kind != "Model":
                            continue  # a curve node's constant values still set the model's
                        if o.kind == "Model" and prop in ("Lcl Translation", "Lcl Rotation",
                                                           "Lcl Scaling"):
                            per_model[o.id][prop].append((blend, cn, curves))
                        elif o.kind == "Deformer" and prop == "DeformPercent":
                            weights[o.id] = curves
            prepare_curves(unprepared)
            self.stack_channels(anim, {mid: props for mid, props in per_model.items()
                                       if mid in self.node_of})
            self.weight_channels(anim, weights)
            if anim.channels:
                self.scene.add_animation(anim)

    def curve_of(self, oid: int, prop: str) -> "_Curve | None":
        """The first curve of the AnimationCurveNode driving ``prop`` of object ``oid``."""
        for cid, p in self.children[oid]:
            cn = self.objects.get(cid)
            if p != prop or cn is None or cn.kind != "AnimationCurveNode":
                continue
            for kid, kprop in self.children[cn.id]:
                c = self.objects.get(kid)
                if c is not None and c.kind == "AnimationCurve" and kprop:
                    t, v = c.array("KeyTime"), c.array("KeyValueFloat")
                    if t is not None and v is not None and len(t) == len(v) and len(t):
                        return _Curve(t, v, c.array("KeyAttrFlags"), c.array("KeyAttrDataFloat"),
                                      c.array("KeyAttrRefCount"))
        return None

    def take_animations(self) -> None:
        """FBX 6.x: Takes/Take/Model/Channel "Transform"/T|R|S/X|Y|Z with Key lists
        (each key starts with its KTime, typed L; the value is the next number)."""
        takes = self.root.find(b"Takes")
        by_name = {o.node.props[0][1]: o for o in self.objects.values()
                   if o.kind == "Model" and o.node.props and o.node.props[0][0] == "S"}
        for take in takes.find_all(b"Take") if takes is not None else ():
            anim = Animation(name=_text(take.props[0][1]) if take.props else "Take")
            per_model: dict = {}
            for mnode in take.find_all(b"Model"):
                m = by_name.get(mnode.props[0][1]) if mnode.props else None
                if m is None or m.id not in self.node_of:
                    continue
                transform = next((c for c in mnode.find_all(b"Channel")
                                  if c.props and c.props[0][1] == b"Transform"), None)
                props = {}
                for ch in transform.find_all(b"Channel") if transform is not None else ():
                    prop = {b"T": "Lcl Translation", b"R": "Lcl Rotation",
                            b"S": "Lcl Scaling"}.get(ch.props[0][1] if ch.props else b"")
                    if prop is None:
                        continue
                    curves, defaults = {}, {}
                    for axis in ch.find_all(b"Channel"):
                        key = "d|" + _text(axis.props[0][1]) if axis.props else ""
                        default = axis.find(b"Default")
                        if default is not None and default.props:
                            defaults[key] = [_number(
                                [v for _, v in default.props[:1]],
                                f"Takes/Take/Model::{m.name}/Channel/{key[2:]}/Default")]
                        curve = _take_keys(axis.find(b"Key"))
                        if curve is not None:
                            curves[key] = curve
                    if curves:
                        props[prop] = [(_Layer(0, None), _Defaults(defaults), curves)]
                if props:
                    per_model[m.id] = props
            self.stack_channels(anim, per_model)
            if anim.channels:
                self.scene.add_animation(anim)

    def stack_channels(self, anim: Animation, per_model: dict) -> None:
        """Channels of one animation: every animated model's layers sampled on
        one time grid (key times plus 30 fps), blended, then the whole
        hierarchy evaluated with its inherit modes (a child of a scaled,
        animated parent may move without curves of its own)."""
        curves_all = [c.t for props in per_model.values() for layers in props.values()
                      for _, _, curves in layers for c in curves.values()]
        if not curves_all:
            return
        times = np.unique(np.concatenate(curves_all))
        secs = times / KTIME_PER_SECOND
        span = (times[-1] - times[0]) / KTIME_PER_SECOND if len(times) else 0.0
        if len(times) > 1 and span * GRID_FPS > MAX_GRID_SAMPLES:
            # a key time far away (hostile or broken) must not size the grid
            self.scene.warnings.append(f"animation {anim.name!r} spans {span:.3g} s: "
                                       "sampled at its key times only")
        elif len(times) > 1:  # add a 30 fps grid so Euler -> quaternion stays faithful
            grid = np.arange(secs[0], secs[-1], 1 / GRID_FPS)
            near = np.searchsorted(secs, grid)
            lo = np.abs(grid - secs[np.clip(near - 1, 0, len(secs) - 1)])
            hi = np.abs(grid - secs[np.clip(near, 0, len(secs) - 1)])
            grid = grid[np.minimum(lo, hi) > 1e-3]
            secs = np.unique(np.concatenate([secs, grid]))
            secs = secs[np.concatenate([[True], np.diff(secs.astype(np.float32)) > 0])]
        if len(secs) * max(len(per_model), 1) > MAX_GRID_SAMPLES * 20:
            secs = np.unique(times / KTIME_PER_SECOND)
            self.scene.warnings.append(f"animation {anim.name!r}: {len(per_model)} models "
                                       "sampled at their key times only")
        ticks = secs * KTIME_PER_SECOND
        local = dict(self.rest_trs)
        animated = list(per_model)
        # every curve of the animation sampled at once (the same values as one by one)
        curves = list({id(c): c for props in per_model.values() for layers in props.values()
                       for _, _, cs in layers for c in cs.values()}.values())
        samples = dict(zip(map(id, curves), sample_curves(curves, ticks)))
        local.update(zip(animated, local_trs_many(
            [self.sampled_inputs(self.objects[mid], per_model[mid], ticks, samples)
             for mid in animated])))
        # the hierarchy is evaluated a slice of time at a time, so its 4x4
        # matrices never exceed about MAX_EVAL_MATRICES at once
        ids = [m.id for m in self.order]
        step = max(2, MAX_EVAL_MATRICES // max(len(ids), 1))
        bounds = list(range(0, len(ticks), step)) + [len(ticks)]
        if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:
            del bounds[-2]  # every slice holds 2+ samples: length 1 then means constant
        parts = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            sl = {k: tuple(x if len(x) == 1 else x[lo:hi] for x in v) for k, v in local.items()}
            parts.append(evaluate(ids, self.parent_of, self.mode_of, sl, self.split)[1:])

        def joined(values: list) -> np.ndarray:
            return values[0] if len(values) == 1 or len(values[0]) == 1 else \
                np.concatenate(values)
        gltf_local = {k: tuple(joined([p[0][k][c] for p in parts]) for c in range(3))
                      for k in ids}
        helper = {k: joined([p[1][k] for p in parts]) for k in parts[0][1]}
        times_f = secs.astype(np.float32)
        n = len(secs)
        for m in self.order:
            t, q, s = gltf_local[m.id]
            if m.id in helper and varies(as_time_series(helper[m.id], n)):
                anim.channels.append(Channel(self.attach_of[m.id], "scale", times_f,
                                             as_time_series(helper[m.id], n).astype(np.float32)))
            if m.id not in per_model and not any(varies(as_time_series(x, n))
                                                 for x in (t, q, s)):
                continue
            node = self.node_of[m.id]
            # all three: with pivots, animating one property moves the others
            anim.channels.append(Channel(node, "translation", times_f,
                                         as_time_series(t, n).astype(np.float32)))
            anim.channels.append(Channel(node, "rotation", times_f, quat_continuous(
                as_time_series(q, n)).astype(np.float32)))
            anim.channels.append(Channel(node, "scale", times_f,
                                         as_time_series(s, n).astype(np.float32)))

    def sampled_inputs(self, m: _Object, props: dict, ticks: np.ndarray,
                       samples: dict | None = None) -> tuple:
        """A model's local transform inputs at ``ticks``, its layers blended:
        ``(m, t, r, s, rq)`` for :func:`local_trs_many`; ``samples`` holds
        curve values at ``ticks`` already computed, by curve id."""
        order = ROTATION_ORDERS[int(m.number("RotationOrder", 0)) % 7]
        defaults = {"Lcl Translation": _vec(m, "Lcl Translation", (0, 0, 0)),
                    "Lcl Rotation": _vec(m, "Lcl Rotation", (0, 0, 0)),
                    "Lcl Scaling": _vec(m, "Lcl Scaling", (1, 1, 1))}
        sampled: dict = {}
        rq = None
        for prop, default in defaults.items():
            result = np.tile(default, (len(ticks), 1))
            is_quat = False  # rotations switch to quaternions for composing layers
            for layer, cn, curves in props.get(prop, []):
                vals = np.tile(default, (len(ticks), 1))
                for axis, key in enumerate(("d|X", "d|Y", "d|Z")):
                    if key in curves:
                        c = curves[key]
                        got = samples.get(id(c)) if samples is not None else None
                        vals[:, axis] = c.sample(ticks) if got is None else got
                    elif key in cn.props:
                        vals[:, axis] = _number(cn.props[key], cn.path(key)
                                                if isinstance(cn, _Object) else key)
                compose = prop == "Lcl Rotation" and layer.compose_rotation and \
                    layer.blend_mode in (0, 2)
                if layer.index == 0:
                    result, is_quat = vals, False
                elif compose:
                    if not is_quat:
                        result, is_quat = euler_quat(result, order), True
                    result = layer_blend(prop, result, euler_quat(vals, order),
                                         layer.weight_at(ticks), layer.blend_mode)
                else:
                    if is_quat:
                        result, is_quat = quat_euler(result, order), False
                    plain = prop == "Lcl Rotation" or (prop == "Lcl Scaling"
                                                       and not layer.compose_scale)
                    result = layer_blend("Lcl Translation" if plain else prop, result, vals,
                                         layer.weight_at(ticks), layer.blend_mode)
            if is_quat:
                rq = result
            sampled[prop] = result
        return (m, sampled["Lcl Translation"],
                None if rq is not None else sampled["Lcl Rotation"], sampled["Lcl Scaling"], rq)

    def weight_channels(self, anim: Animation, weights: dict) -> None:
        if not weights:
            return
        for mesh_index, channel_ids in self.mesh_targets.items():
            if not any(c in weights for c in channel_ids):
                continue
            nodes = [i for i, n in enumerate(self.scene.nodes) if n.mesh == mesh_index]
            times = np.unique(np.concatenate([cv.t for c in channel_ids if c in weights
                                              for cv in weights[c].values()]))
            vals = np.zeros((len(times), len(channel_ids)))
            mesh = self.scene.meshes[mesh_index]
            for k, cid in enumerate(channel_ids):
                if cid in weights and weights[cid]:
                    vals[:, k] = next(iter(weights[cid].values())).sample(times) / 100.0
                else:
                    vals[:, k] = (mesh.weights or [0] * len(channel_ids))[k]
            for node in nodes:
                anim.channels.append(Channel(node, "weights",
                                             (times / KTIME_PER_SECOND).astype(np.float32),
                                             vals.astype(np.float32)))


def triangulate(sizes: np.ndarray, cidx: np.ndarray, corner_pos: np.ndarray) -> np.ndarray:
    """Triangles (flat corner indices) for polygons of ``sizes`` whose corners are
    consecutive in ``cidx`` (``corner_pos`` indexed by corner): see
    :func:`potsherd.scene.geometry.triangulate_polygons`."""
    cidx = np.asarray(cidx, dtype=np.int64)
    tri = triangulate_polygons(sizes, np.asarray(corner_pos)[cidx])
    return cidx[tri].reshape(-1)


