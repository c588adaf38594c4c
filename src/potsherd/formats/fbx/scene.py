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
from .scene_materials import MaterialBuilder, TextureFiles
from .scene_rig import (as_time_series, euler_quat, evaluate, inherit_mode, layer_blend,
                        quat_euler, varies)

KTIME_PER_SECOND = 46186158000
ROTATION_ORDERS = ("XYZ", "XZY", "YZX", "YXZ", "ZXY", "ZYX", "XYZ")
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
    return _Builder(root, options).build()


def upgrade_fbx5(root: FbxNode) -> FbxNode:
    """An FBX 5.x tree (header 3000: top-level models with inline geometry,
    ``Children`` lists, transforms in ``Channel "Transform"`` defaults) in the
    6.x node model the builder reads (Objects, Connections/Connect, Properties60)."""
    models = [n for n in root.children or () if n.name == b"Model" and n.props
              and n.props[0][0] == "S"]
    parent_of: dict = {}
    for m in models:
        for ch in m.find_all(b"Children"):
            for c, v in ch.props:
                if c == "S":
                    parent_of[v] = m.props[0][1]
    takes = root.find(b"Takes")
    take = takes.find(b"Take") if takes is not None else None
    take_models = {n.props[0][1]: n for n in (take.find_all(b"Model") if take else [])
                   if n.props}
    objects = FbxNode(b"Objects", [], [])
    connections = FbxNode(b"Connections", [], [])
    for m in models:
        name = m.props[0][1]
        trs = _channel_defaults(m) or _channel_defaults(take_models.get(name))
        props60 = FbxNode(b"Properties60", [], [
            FbxNode(b"Property", [("S", key), ("S", key), ("S", b"A")] +
                    [("D", float(x)) for x in trs.get(key, default)])
            for key, default in ((b"Lcl Translation", (0, 0, 0)), (b"Lcl Rotation", (0, 0, 0)),
                                 (b"Lcl Scaling", (1, 1, 1)))])
        kids = [props60]
        verts = m.find(b"Vertices")
        pvi = m.find(b"PolygonVertexIndex")
        if verts is not None and pvi is not None:
            kids += [verts, pvi]
            normals = m.find(b"Normals")
            if normals is not None:
                mapping = b"ByVertice" if len(normals.props) == len(verts.props) else \
                    b"ByPolygonVertex"
                kids.append(_layer(b"LayerElementNormal", mapping, b"Direct", normals))
            uvinfo = m.find(b"GeometryUVInfo")
            uv = uvinfo.find(b"TextureUV") if uvinfo is not None else None
            uvi = uvinfo.find(b"TextureUVVerticeIndex") if uvinfo is not None else None
            if uv is not None and uvi is not None and len(uvi.props) == len(pvi.props):
                kids.append(_layer(b"LayerElementUV", b"ByPolygonVertex", b"IndexToDirect",
                                   FbxNode(b"UV", uv.props), FbxNode(b"UVIndex", uvi.props)))
        sub = b"Mesh" if verts is not None else b"Null"
        objects.children.append(FbxNode(b"Model", [("S", name), ("S", sub)], kids))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", name),
                                                         ("S", parent_of.get(name, b"Scene"))]))
        _fbx5_skin(m, name, objects, connections)
    out = FbxNode(b"", [], [objects, connections])
    if takes is not None:
        out.children.append(takes)  # type: ignore[union-attr]
    return out


def _fbx5_skin(model: FbxNode, name: bytes, objects: FbxNode, connections: FbxNode) -> None:
    """FBX 5.x skins: ``Link "Bone"`` children of the mesh model (Indexes,
    Weights, Transform, TransformLink as scalar lists) become a 6.x Skin
    deformer with one Cluster per bone."""
    links = [ln for ln in model.find_all(b"Link") if ln.props and ln.props[0][0] == "S"]
    if not links:
        return
    skin_id = b"Deformer::Skin " + name
    objects.children.append(FbxNode(b"Deformer", [("S", skin_id), ("S", b"Skin")], []))
    connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", skin_id),
                                                     ("S", name)]))
    for k, link in enumerate(links):
        bone = link.props[0][1]
        cluster_id = b"SubDeformer::Cluster %d " % k + name + b" " + bone
        kids = [c for c in link.children or ()
                if c.name in (b"Indexes", b"Weights", b"Transform", b"TransformLink")]
        objects.children.append(FbxNode(b"Deformer", [("S", cluster_id), ("S", b"Cluster")],
                                        kids))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", cluster_id),
                                                         ("S", skin_id)]))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", bone),
                                                         ("S", cluster_id)]))


def _layer(name: bytes, mapping: bytes, reference: bytes, *data: FbxNode) -> FbxNode:
    return FbxNode(name, [("I", 0)], [
        FbxNode(b"MappingInformationType", [("S", mapping)]),
        FbxNode(b"ReferenceInformationType", [("S", reference)]), *data])


def _channel_defaults(model: FbxNode | None) -> dict:
    """{b"Lcl Translation": (x, y, z), ...} from a 5.x/6.x Channel "Transform"."""
    out: dict = {}
    if model is None:
        return out
    transform = next((c for c in model.find_all(b"Channel")
                      if c.props and c.props[0][1] == b"Transform"), None)
    for ch in transform.find_all(b"Channel") if transform is not None else ():
        key = {b"T": b"Lcl Translation", b"R": b"Lcl Rotation",
               b"S": b"Lcl Scaling"}.get(ch.props[0][1] if ch.props else b"")
        if key is None:
            continue
        vals = []
        for axis in (b"X", b"Y", b"Z"):
            a = next((c for c in ch.find_all(b"Channel") if c.props and c.props[0][1] == axis),
                     None)
            d = a.find(b"Default") if a is not None else None
            vals.append(float(d.props[0][1]) if d is not None and d.props and
                        d.props[0][0] in "DFIL" else (1.0 if key == b"Lcl Scaling" else 0.0))
        out[key] = vals
    return out


def _numbers(values: Any, path: str) -> np.ndarray:
    """Property values or an array as a numeric numpy array (its own dtype).

    ASCII files type a word where a number belongs as a string; that (or a
    nested array, or an integer beyond 64 bits) is a ValueFormatError naming
    the node path, so no later cast or ``float()`` meets it."""
    if hasattr(values, "values"):
        values = values.values
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        arr = None
    if arr is None or arr.dtype.kind not in "biuf" or arr.ndim > 1:
        shown = [v for _, v in zip(range(3), values)] if isinstance(values, (list, tuple)) \
            else values
        raise ValueFormatError(f"values {str(shown)[:60]} are not numbers",
                               path=path) from None
    return arr


def _number(values: Any, path: str) -> float:
    """The first of a property's values as a float (see :func:`_numbers`)."""
    arr = _numbers(values, path)
    if not arr.size:
        raise ValueFormatError("property holds no value", path=path)
    return float(arr.reshape(-1)[0])


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


class _Object:
    __slots__ = ("id", "kind", "name", "sub", "node", "props")

    def __init__(self, node: FbxNode) -> None:
        p = node.props
        self.node = node
        self.kind = node.name.decode("latin-1")
        # 7.x: id, "Name\0\1Class", "Sub";  6.x: "Name\0\1Class", "Sub" (the name is the id)
        first = 0 if p and p[0][0] == "S" else 1
        self.id = p[0][1] if p and p[0][0] in "LIS" else None
        full = p[first][1] if len(p) > first and p[first][0] == "S" else b""
        self.name = _text(full.split(b"\x00\x01")[0]) if isinstance(full, bytes) else ""
        self.sub = _text(p[first + 1][1]) if len(p) > first + 1 and p[first + 1][0] == "S" \
            else ""
        self.props = _p70(node)

    def child(self, name: str) -> FbxNode | None:
        return self.node.find(name)

    def array(self, name: str) -> np.ndarray | None:
        c = self.node.find(name)
        if c is None or not c.props:
            return None
        return _values(c, self.path(name))

    def path(self, name: str) -> str:
        return f"Objects/{self.kind}::{self.name}/{name}"

    def number(self, name: str, default: float) -> float:
        """A numeric property (its first value), or ``default`` when absent."""
        v = self.props.get(name)
        if not v:
            return float(default)
        return _number(v, self.path(name))


def _p70(node: FbxNode) -> dict:
    """Property name -> values, from Properties70/P (7.x) or Properties60/Property (6.x)."""
    out: dict = {}
    for block, row, skip in ((b"Properties70", b"P", 4), (b"Properties60", b"Property", 3)):
        p70 = node.find(block)
        for p in (p70.children or []) if p70 is not None else []:
            if p.name == row and p.props and p.props[0][0] == "S":
                out[_text(p.props[0][1])] = [v for _, v in p.props[skip:]]
    return out


def _vec(obj: _Object, name: str, default: tuple) -> np.ndarray:
    v = obj.props.get(name)
    if v is None or len(v) < 3:
        return np.array(default, dtype=np.float64)
    return _numbers(v[:3], obj.path(name)).astype(np.float64)


def local_matrices(obj: _Object, t=None, r=None, s=None, rq=None) -> np.ndarray:
    """``T·Roff·Rp·Rpre·R·Rpost^-1·Rp^-1·Soff·Sp·S·Sp^-1`` (vectorised over
    the leading axis of animated t/r/s; ``rq`` gives R as quaternions instead
    of Euler angles, for blended animation layers)."""
    t = _vec(obj, "Lcl Translation", (0, 0, 0)) if t is None else t
    r = _vec(obj, "Lcl Rotation", (0, 0, 0)) if r is None else r
    s = _vec(obj, "Lcl Scaling", (1, 1, 1)) if s is None else s
    order = ROTATION_ORDERS[int(obj.number("RotationOrder", 0)) % 7]

    def tr(v):
        return trs_to_matrix(translation=np.asarray(v, dtype=np.float64))

    def rot(v, o="XYZ"):
        return trs_to_matrix(rotation=quat_from_euler(np.asarray(v, np.float64), o, degrees=True))

    def inv(m):
        return np.linalg.inv(m)
    roff = tr(_vec(obj, "RotationOffset", (0, 0, 0)))
    rp = tr(_vec(obj, "RotationPivot", (0, 0, 0)))
    rpre = rot(_vec(obj, "PreRotation", (0, 0, 0)))
    rpost = rot(_vec(obj, "PostRotation", (0, 0, 0)))
    soff = tr(_vec(obj, "ScalingOffset", (0, 0, 0)))
    sp = tr(_vec(obj, "ScalingPivot", (0, 0, 0)))
    S = trs_to_matrix(scale=np.asarray(s, dtype=np.float64))
    R = rot(r, order) if rq is None else trs_to_matrix(rotation=np.asarray(rq, np.float64))
    return (tr(t) @ roff @ rp @ rpre @ R @ inv(rpost) @ inv(rp) @ soff @ sp @ S
            @ inv(sp))


def local_trs(obj: _Object, t=None, r=None, s=None, rq=None) -> tuple:
    """The FBX local transform as (t (T, 3), q (T, 4), s (T, 3)); pivots and
    pre/post rotations leave no shear, so this is exact."""
    m = local_matrices(obj, t, r, s, rq)
    return decompose_matrix(m if m.ndim == 3 else m[None])


def _axis_matrix(gs: dict) -> np.ndarray:
    def axis(name, default_axis, default_sign):
        a = _number(gs.get(name) or [default_axis], f"GlobalSettings/{name}")
        sign = _number(gs.get(name + "Sign") or [default_sign], f"GlobalSettings/{name}Sign")
        if not np.isfinite(a):
            raise ValueFormatError(f"GlobalSettings {name} is not an axis number",
                                   path=f"GlobalSettings/{name}", found=a)
        e = np.zeros(3)
        e[int(a) % 3] = 1.0 if sign >= 0 else -1.0
        return e
    return np.stack([axis("CoordAxis", 0, 1), axis("UpAxis", 1, 1), axis("FrontAxis", 2, 1)])


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
                    templates.setdefault(kind, {}).update(props)
        if not templates:
            return
        for o in self.objects.values():
            base = templates.get(o.kind)
            if base:
                o.props = {**base, **o.props}

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
        for m in order:
            ups = self.linked(m.id, "Model", up=True, prop=None)
            self.parent_of[m.id] = ups[0].id if ups and ups[0].id in self.rest_trs else None
            self.mode_of[m.id] = inherit_mode(m.number("InheritType", -1))
            self.rest_trs[m.id] = local_trs(m)
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
        """(texture, material property) pairs; a layered texture stands for its first layer."""
        out = []
        for tid, prop in self.children[mo.id]:
            tex = self.objects.get(tid)
            if tex is None or prop is None:
                continue
            if tex.kind == "LayeredTexture":
                layers = self.linked(tex.id, "Texture")
                tex = layers[0] if layers else None
            if tex is not None and tex.kind == "Texture":
                out.append((tex, prop))
        return out

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
                                                           c.array("KeyAttrRefCount"))
                        if not curves and o.kind != "Model":
                            continue  # a curve node's constant values still set the model's
                        if o.kind == "Model" and prop in ("Lcl Translation", "Lcl Rotation",
                                                           "Lcl Scaling"):
                            per_model[o.id][prop].append((blend, cn, curves))
                        elif o.kind == "Deformer" and prop == "DeformPercent":
                            weights[o.id] = curves
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
        for mid, props in per_model.items():
            local[mid] = self.sampled_local(self.objects[mid], props, ticks)
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

    def sampled_local(self, m: _Object, props: dict, ticks: np.ndarray) -> tuple:
        """A model's local (t, q, s) at ``ticks``, its layers blended."""
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
                        vals[:, axis] = curves[key].sample(ticks)
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
        return local_trs(m, sampled["Lcl Translation"],
                         None if rq is not None else sampled["Lcl Rotation"],
                         sampled["Lcl Scaling"], rq)

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


class _Curve:
    """An animation curve: KTime ticks, values and (7.x) per-key attributes.

    ``KeyAttrFlags`` pick constant (0x02), linear (0x04) or cubic (0x08)
    interpolation; cubic segments are Bezier curves in (time, value) built from
    the right / next-left slopes of ``KeyAttrDataFloat`` (4 floats per
    attribute, shared by ``KeyAttrRefCount`` consecutive keys) and, when the
    weighted flags (0x01000000 right, 0x02000000 next left) are set, the
    tangent weights packed in its third float (two 16-bit fixed points, 1/10000);
    otherwise weights are 1/3 (a plain Hermite spline).
    """

    def __init__(self, t, v, flags=None, data=None, refcount=None) -> None:
        self.t = np.asarray(t, dtype=np.int64)
        self.v = np.asarray(v, dtype=np.float64)
        n = len(self.t)
        self.mode = np.full(n, 0x04, dtype=np.int64)
        self.slopes = np.zeros((n, 2))
        self.weights = np.full((n, 2), 1.0 / 3.0)
        if flags is not None and refcount is not None and len(flags) == len(refcount):
            # key k uses the attribute whose running refcount total first exceeds k
            # (no np.repeat: a hostile refcount must not size an allocation)
            ends = np.cumsum(np.clip(np.asarray(refcount, dtype=np.float64), 0, n))
            if len(ends) and ends[-1] >= n:
                per_key = np.searchsorted(ends, np.arange(n), side="right")
                self.mode = np.asarray(flags, dtype=np.int64)[per_key]
                if data is not None and len(data) >= 4 * len(refcount):
                    raw = np.asarray(data, dtype=np.float32)[:4 * len(refcount)]
                    d = raw.astype(np.float64).reshape(-1, 4)
                    self.slopes = d[per_key, :2]
                    packed = raw.reshape(-1, 4)[:, 2].view(np.uint32)[per_key]
                    right = (packed & 0xFFFF) / 10000.0
                    left = (packed >> 16) / 10000.0
                    self.weights[:, 0] = np.where(self.mode & 0x01000000, right, 1.0 / 3.0)
                    self.weights[:, 1] = np.where(self.mode & 0x02000000, left, 1.0 / 3.0)
                self._auto_tangents()

    def _auto_tangents(self) -> None:
        """Cubic keys with automatic tangents (neither user 0x400 nor TCB
        0x200) store an auto *bias* in their slope fields: the slopes are
        recomputed from the neighbouring keys, as Maya and ufbx do (clamped
        with 0x1000, progressive clamp with 0x4000, time-independent 0x2000)."""
        n = len(self.t)
        mode = self.mode
        auto = ((mode & 0x08) != 0) & ((mode & 0x02) == 0) & ((mode & 0x600) == 0)
        if n < 2 or not auto.any():
            return
        t = self.t.astype(np.float64) / KTIME_PER_SECOND
        v = self.v
        k = np.arange(n)
        stored_left = np.concatenate([[0.0], self.slopes[:-1, 1]])
        stored_right = self.slopes[:, 0].copy()
        weight_left = np.concatenate([[1.0 / 3.0], self.weights[:-1, 1]])
        weight_right = self.weights[:, 0]
        pk, nk = np.maximum(k - 1, 0), np.minimum(k + 1, n - 1)
        pt, nt, pv, nv = t[pk], t[nk], v[pk], v[nk]
        interior = (k > 0) & (k < n - 1) & (t > pt) & (nt > t)
        first_only = ~interior & (k + 1 < n) & (nt > t) & ~((k > 0) & (t > pt))
        last_only = ~interior & (k > 0) & (t > pt)
        flags = mode
        with np.errstate(divide="ignore", invalid="ignore"):
            unified = np.abs(stored_left + stored_right) <= 1e-4
            right_in = _auto_slope(pt, t, nt, pv, v, nv, weight_left, weight_right,
                                   stored_right, flags)
            left_in = np.where(unified, right_in, _auto_slope(
                pt, t, nt, pv, v, nv, weight_left, weight_right, -stored_left, flags))
            one_side_left = _one_side_slope(pt, t, pv, v, -stored_left, flags)
            one_side_right = _one_side_slope(t, nt, v, nv, stored_right, flags)
        left = np.where(interior, left_in, np.where(last_only, one_side_left,
                                                    np.where(first_only, one_side_right, 0.0)))
        right = np.where(interior, right_in, np.where(last_only, one_side_left,
                                                      np.where(first_only, one_side_right, 0.0)))
        left = np.where(np.isfinite(left), left, 0.0)
        right = np.where(np.isfinite(right), right, 0.0)
        self.slopes[:, 0] = np.where(auto, right, self.slopes[:, 0])
        prev_left = np.where(auto[1:], left[1:], self.slopes[:-1, 1])
        self.slopes[:-1, 1] = prev_left

    def sample(self, ticks: np.ndarray) -> np.ndarray:
        t = self.t.astype(np.float64)
        out = np.interp(ticks, t, self.v)
        if len(t) < 2:
            return out
        seg = np.clip(np.searchsorted(t, ticks, side="right") - 1, 0, len(t) - 2)
        inside = (ticks >= t[0]) & (ticks <= t[-1])
        t0, t1 = t[seg], t[seg + 1]
        dt = np.where(t1 > t0, t1 - t0, 1.0)
        u = np.clip((ticks - t0) / dt, 0.0, 1.0)
        v0, v1 = self.v[seg], self.v[seg + 1]
        mode = self.mode[seg]
        const = (mode & 0x02) != 0
        cubic = ((mode & 0x08) != 0) & ~const
        secs = dt / KTIME_PER_SECOND
        w0 = np.clip(self.weights[seg, 0], 1e-4, 1.0)
        w1 = np.clip(self.weights[seg, 1], 1e-4, 1.0)
        # Bezier control points in normalised time u and in value
        x1, x2 = w0, 1.0 - w1
        y1 = v0 + self.slopes[seg, 0] * secs * w0
        y2 = v1 - self.slopes[seg, 1] * secs * w1
        lo, hi = np.zeros_like(u), np.ones_like(u)
        for _ in range(40):  # x(s) is monotone for weights in (0, 1]: bisect s
            mid = (lo + hi) / 2
            x = 3 * (1 - mid) ** 2 * mid * x1 + 3 * (1 - mid) * mid ** 2 * x2 + mid ** 3
            lo = np.where(x < u, mid, lo)
            hi = np.where(x < u, hi, mid)
        sb = (lo + hi) / 2
        bez = ((1 - sb) ** 3 * v0 + 3 * (1 - sb) ** 2 * sb * y1 + 3 * (1 - sb) * sb ** 2 * y2
               + sb ** 3 * v1)
        out = np.where(inside & cubic, bez, out)
        out = np.where(inside & const & (ticks < t1), v0, out)
        return out


def _auto_slope(pt, t, nt, pv, v, nv, wl, wr, bias, flags) -> np.ndarray:
    """Automatic tangent slope at an interior key (Maya's rule, as ufbx solves it)."""
    slope = (nv - pv) / (nt - pt)
    dependent = (flags & 0x2000) == 0
    sl = (v - pv) / (t - pt)
    sr = (nv - v) / (nt - t)
    delta = (t - pt) / (nt - pt)
    blended = slope * 0.5 + (sl * (1.0 - delta) + sr * delta) * 0.5
    bias_weight = np.abs(bias) / 100.0
    target = np.where(bias > 0.0, sr, sl)
    biased = np.where(bias_weight > 0.0001, blended * (1.0 - bias_weight) + target * bias_weight,
                      blended)
    extra = bias_weight - 5.0
    sign = np.where(np.abs(target - blended) > 0.00001, target - blended, bias)
    biased = biased + np.where(extra > 0.0, extra * extra * np.where(sign > 0, 1.0, -1.0) * 40.0,
                               0.0)
    slope = np.where(dependent, biased, slope)
    progressive = (flags & 0x4000) != 0
    ssign = np.where(slope >= 0.0, 1.0, -1.0)
    range_left, range_right = wl * (t - pt), wr * (nt - t)
    max_left = np.where(range_left > 0, ssign * (v - pv) / np.where(range_left > 0, range_left, 1),
                        0.0)
    max_right = np.where(range_right > 0, ssign * (nv - v) /
                         np.where(range_right > 0, range_right, 1), 0.0)
    max_left = np.where(max_left > 0.0, max_left, 0.0)
    max_right = np.where(max_right > 0.0, max_right, 0.0)
    clamped = ssign * np.minimum(np.minimum(ssign * slope, max_left), max_right)
    slope = np.where(progressive, clamped, slope)
    flat = ((flags & 0x1000) != 0) & (np.minimum(np.abs(pv - v), np.abs(nv - v)) <= 0.0)
    return np.where(flat, 0.0, slope)


def _one_side_slope(t0, t1, v0, v1, bias, flags) -> np.ndarray:
    """Automatic slope at the first or last key: the chord, plus the large-bias term."""
    slope = (v1 - v0) / (t1 - t0)
    extra = np.abs(bias) / 100.0 - 5.0
    slope = slope + np.where(((flags & 0x2000) == 0) & (extra > 0.0),
                             extra * extra * np.where(bias > 0, 1.0, -1.0) * 40.0, 0.0)
    slope = np.where((flags & 0x4000) != 0, 0.0, slope)
    return np.where(((flags & 0x1000) != 0) & (np.abs(v1 - v0) <= 0.0), 0.0, slope)


class _Layer:
    """How one AnimationLayer blends (see :mod:`.scene_rig`); 6.x takes are one layer."""

    def __init__(self, index: int, layer: "_Object | None", weight_curve=None) -> None:
        self.index = index
        self.weight_curve = weight_curve
        weight = layer.number("Weight", 100.0) / 100.0 if layer is not None else 1.0
        self.weight = 1.0 if not weight <= 0.99999 else max(weight, 0.0)  # NaN: full
        self.blend_mode = int(layer.number("BlendMode", 0)) if layer is not None else 1
        self.compose_rotation = layer is None or layer.number("RotationAccumulationMode", 0) == 0
        self.compose_scale = layer is None or layer.number("ScaleAccumulationMode", 0) == 0

    def weight_at(self, ticks: np.ndarray) -> Any:
        """The weight (0..1) at ``ticks``: animated only for blending modes, as in ufbx."""
        if self.weight_curve is None or self.blend_mode not in (0, 2):
            return self.weight
        w = self.weight_curve.sample(ticks) / 100.0
        return np.where(~(w <= 0.99999), 1.0, np.clip(w, 0.0, 1.0))  # NaN: full weight


class _Defaults:
    """Stands in for an AnimationCurveNode: channel defaults by ``d|X`` name."""

    def __init__(self, props: dict) -> None:
        self.props = props


def _take_keys(node: FbxNode | None) -> "_Curve | None":
    """A 6.x Key list as a curve; None when it cannot be split.

    Each key starts with its KTime (typed L), then the value and an
    interpolation char: ``C`` constant, ``L`` linear, ``U`` cubic followed by a
    tangent-mode char, the right and next-left slopes, and optionally a
    weight-mode char (``a`` both weights, ``r`` right, ``n``/``l``...) with
    its weights.
    """
    if node is None or not node.props:
        return None
    props = node.props
    starts = [i for i, (c, _) in enumerate(props) if c == "L"]
    if not starts or starts[0] != 0:
        return None
    ends = starts[1:] + [len(props)]
    n = len(starts)
    times = np.zeros(n, dtype=np.int64)
    values = np.zeros(n)
    mode = np.full(n, 0x04, dtype=np.int64)
    slopes = np.zeros((n, 2))
    weights = np.full((n, 2), 1.0 / 3.0)
    for k, (a, b) in enumerate(zip(starts, ends)):
        key = props[a:b]
        if len(key) < 2 or key[1][0] not in "DFIL":
            return None
        times[k] = key[0][1]
        values[k] = float(key[1][1])
        chars = [(i, chr(v)) for i, (c, v) in enumerate(key) if c in "CB" and 0 <= v < 256]
        if not chars:
            continue
        interp = chars[0][1]
        if interp == "C":
            mode[k] = 0x02
        elif interp == "U":
            mode[k] = 0x08
            nums = [float(v) for c, v in key[chars[0][0] + 1:] if c in "DFIL"]
            if len(nums) >= 2:
                slopes[k] = nums[:2]
            wmode = chars[2][1] if len(chars) > 2 else "n"
            if wmode == "a" and len(nums) >= 4:
                weights[k] = nums[2:4]
            elif wmode == "r" and len(nums) >= 3:
                weights[k, 0] = nums[2]
    if n > 1 and np.any(np.diff(times) <= 0):
        return None
    curve = _Curve(times, values)
    curve.mode, curve.slopes, curve.weights = mode, slopes, weights
    return curve


def _values(node: FbxNode, path: str) -> np.ndarray:
    """A node's numbers: its array (7.x) or its scalar list (6.x style)."""
    if node.props and hasattr(node.props[0][1], "values"):
        return _numbers(node.props[0][1].values, path)
    return _numbers([v for _, v in node.props], path)


def _text_child(node: FbxNode, name: bytes) -> str:
    c = node.find(name)
    if c is None or not c.props:
        return ""
    return _text(c.props[0][1])
