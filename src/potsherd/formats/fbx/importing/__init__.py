"""FBX 7.x writer: a neutral :class:`~potsherd.scene.Scene` to an FBX node tree.

The tree has the sections and record shapes of Autodesk's own 7.4 exporter
(as Maya, MotionBuilder and Blender write them): FBXHeaderExtension,
GlobalSettings (axes, unit scale, frame rate), Documents, References,
Definitions with property templates, Objects (Model with Lcl transforms and
a NodeAttribute, Geometry with layer elements, Material, Texture/Video,
Skin/Cluster and a BindPose, BlendShape/BlendShapeChannel/Shape,
AnimationStack/Layer/CurveNode/Curve), Connections and Takes.  The binary
and ASCII encoders of this package write it.

Conventions: the scene is glTF's (+Y up, metres, CCW), written as a Y-up
FBX with ``UnitScaleFactor`` 100 (one unit = 1 m); UVs get FBX's bottom-left
origin (``v' = 1 - v``).  Every Model says ``InheritType`` 1 (the plain matrix
product glTF composes with).  A skin cluster stores, as Autodesk's exporters
do, ``TransformLink`` = the bone's world at bind and ``Transform`` = the mesh
node in that bone's space (``TransformLink⁻¹ · mesh world``), the record
ufbx, Blender and this package's reader take as geometry-to-bone.
Geometry control points are welded positions (with
their skin weights and morph deltas); normals, UVs and colours are per
polygon vertex, so seams stay where the scene had them.

A scene that came from an FBX file (``formats/fbx/scene.py``) carries what
that reader added: an ``fbx_axes_units`` root wrapper, ``*_skinned`` root
copies of skinned meshes and ``*_geometry`` children for geometric
transforms.  They are folded back (axes/units into GlobalSettings, skinned
meshes onto their model, geometric transforms onto the Model), so an FBX
converted through the scene keeps its node count and structure.
"""
from __future__ import annotations

import datetime
import math
from typing import Any, Optional

import numpy as np

from ....core.errors import EncodeError
from ....document import Document
from ....scene.bake_colors import unit_colors
from ....scene.finite import require_finite
from ....scene.geometry import compute_normals, weld
from ....scene.model import Scene
from ....scene.ops import default_morph_weights, from_time_zero, world_matrices
from ....scene.xform import (decompose_matrix, inverse_affine, mat4_to_gltf, quat_normalize,
                            quat_to_matrix, trs_to_matrix)
from ..model import FbxNode
from .animation import AnimationParts
from .nodes import (TIME_MODES, _arr, _d, _i, _Ids, _ktime, _l, _n, _obj_name, _p, _p_vec,
                           _props70, _s, euler_xyz_degrees)

class _FbxWriter(AnimationParts):
    def __init__(self, scene: Scene, *, version: int, fps: float, embed_textures: bool,
                 creator: str, time_stamp: Optional[datetime.datetime]) -> None:
        self.scene = scene
        self.version = version
        self.fps = fps
        self.embed = embed_textures
        self.creator = creator
        self.stamp = time_stamp or datetime.datetime(1970, 1, 1, 10, 0, 0)
        self.ids = _Ids()
        self.objects: list = []
        self.connections: list = []
        self.counts: dict = {}
        self.warnings = scene.warnings
        self.model_id: dict = {}          # scene node -> Model id
        self.node_geometry: dict = {}     # scene node drawing a mesh -> geometry record
        self.axes = np.eye(3)
        self.unit_cm = 100.0
        self.skip: set = set()            # scene nodes folded into others
        self.parent_override: dict = {}
        self.mesh_on: dict = {}           # model node -> (mesh node, geometric TRS or None)
        self.free_skinned: set = set()    # skinned mesh nodes written at the root
        self.xform_of: dict = {}          # free skinned node -> Null keeping its transform

    # objects / connections --------------------------------------------------------
    def add(self, kind: str, node: FbxNode) -> None:
        self.objects.append(node)
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def oo(self, child: int, parent: int) -> None:
        self.connections.append(_n("C", _s("OO"), _l(child), _l(parent)))

    def op(self, child: int, parent: int, prop: str) -> None:
        self.connections.append(_n("C", _s("OP"), _l(child), _l(parent), _s(prop)))

    # folding what the FBX reader added ------------------------------------------------
    def fold_reader_nodes(self) -> None:
        sc = self.scene
        names = {}
        for i, n in enumerate(sc.nodes):
            if "fbx_class" in n.extras:
                names.setdefault(n.name, i)
        parents = sc.parents()
        for r in list(sc.roots):
            n = sc.nodes[r]
            if n.name == "fbx_axes_units" and "fbx_class" not in n.extras and n.mesh is None \
                    and n.matrix is None:
                rot = np.eye(3) if n.rotation is None else quat_to_matrix(n.rotation)
                s = np.ones(3) if n.scale is None else np.asarray(n.scale, np.float64)
                if np.allclose(np.abs(rot), np.round(np.abs(rot)), atol=1e-9) and \
                        np.allclose(s, s[0]) and s[0] > 0 and n.translation is None:
                    self.axes = np.round(rot)
                    self.unit_cm = float(s[0]) * 100.0
                    self.skip.add(r)
        for i, n in enumerate(sc.nodes):
            if "fbx_class" in n.extras or n.mesh is None:
                continue
            if n.name.endswith("_skinned") and parents[i] is None and n.skin is not None:
                owner = names.get(n.name[:-len("_skinned")])
                if owner is not None and sc.nodes[owner].mesh is None \
                        and owner not in self.mesh_on:
                    self.mesh_on[owner] = (i, None)
                    self.skip.add(i)
            elif n.name.endswith("_geometry") and parents[i] is not None \
                    and "fbx_class" in sc.nodes[parents[i]].extras \
                    and sc.nodes[parents[i]].mesh is None and not n.children \
                    and n.matrix is None and parents[i] not in self.mesh_on:
                self.mesh_on[parents[i]] = (i, (n.translation, n.rotation, n.scale))
                self.skip.add(i)

    # header sections ------------------------------------------------------------------
    def header(self) -> list:
        st = self.stamp
        stamp = _n("CreationTimeStamp", children=[
            _n("Version", _i(1000)), _n("Year", _i(st.year)), _n("Month", _i(st.month)),
            _n("Day", _i(st.day)), _n("Hour", _i(st.hour)), _n("Minute", _i(st.minute)),
            _n("Second", _i(st.second)), _n("Millisecond", _i(st.microsecond // 1000))])
        meta = _n("MetaData", children=[_n("Version", _i(100))] + [
            _n(k, _s("")) for k in ("Title", "Subject", "Author", "Keywords", "Revision",
                                    "Comment")])
        info = _n("SceneInfo", _obj_name("GlobalInfo", "SceneInfo"), _s("UserData"), children=[
            _n("Type", _s("UserData")), _n("Version", _i(100)), meta,
            _props70(_p("DocumentUrl", "KString", "Url", "", _s(self.scene.name or "scene")),
                     _p("Original|ApplicationName", "KString", "", "", _s("potsherd")))])
        hdr = _n("FBXHeaderExtension", children=[
            _n("FBXHeaderVersion", _i(1003)), _n("FBXVersion", _i(self.version)),
            _n("EncryptionType", _i(0)), stamp, _n("Creator", _s(self.creator)), info])
        return [hdr]

    def global_settings(self, duration: float) -> FbxNode:
        def axis(row: np.ndarray) -> tuple:
            k = int(np.argmax(np.abs(row)))
            return k, 1 if row[k] > 0 else -1
        coord, up, front = (axis(self.axes[r]) for r in range(3))
        mode = TIME_MODES.get(float(self.fps), 14)
        return _n("GlobalSettings", children=[_n("Version", _i(1000)), _props70(
            _p("UpAxis", "int", "Integer", "", _i(up[0])),
            _p("UpAxisSign", "int", "Integer", "", _i(up[1])),
            _p("FrontAxis", "int", "Integer", "", _i(front[0])),
            _p("FrontAxisSign", "int", "Integer", "", _i(front[1])),
            _p("CoordAxis", "int", "Integer", "", _i(coord[0])),
            _p("CoordAxisSign", "int", "Integer", "", _i(coord[1])),
            _p("OriginalUpAxis", "int", "Integer", "", _i(up[0])),
            _p("OriginalUpAxisSign", "int", "Integer", "", _i(up[1])),
            _p("UnitScaleFactor", "double", "Number", "", _d(self.unit_cm)),
            _p("OriginalUnitScaleFactor", "double", "Number", "", _d(self.unit_cm)),
            _p("AmbientColor", "ColorRGB", "Color", "", _d(0), _d(0), _d(0)),
            _p("DefaultCamera", "KString", "", "", _s("Producer Perspective")),
            _p("TimeMode", "enum", "", "", _i(mode)),
            _p("TimeProtocol", "enum", "", "", _i(2)),
            _p("SnapOnFrameMode", "enum", "", "", _i(0)),
            _p("TimeSpanStart", "KTime", "Time", "", _l(0)),
            _p("TimeSpanStop", "KTime", "Time", "", _l(int(_ktime(duration)))),
            _p("CustomFrameRate", "double", "Number", "", _d(self.fps if mode == 14 else -1)),
            _p("TimeMarker", "Compound", "", ""),
            _p("CurrentTimeMarker", "int", "Integer", "", _i(-1)))])

    def documents(self, active_stack: str) -> list:
        doc_id = self.ids.new()
        return [
            _n("Documents", children=[_n("Count", _i(1)), _n(
                "Document", _l(doc_id), _s("Scene"), _s("Scene"), children=[
                    _props70(_p("SourceObject", "object", "", ""),
                             _p("ActiveAnimStackName", "KString", "", "", _s(active_stack))),
                    _n("RootNode", _l(0))])]),
            _n("References", children=[]),
        ]

    def definitions(self) -> FbxNode:
        templates = {
            "Model": ("FbxNode", [
                _p("QuaternionInterpolate", "enum", "", "", _i(0)),
                _p("RotationOrder", "enum", "", "", _i(0)),
                _p("InheritType", "enum", "", "", _i(1)),
                _p("DefaultAttributeIndex", "int", "Integer", "", _i(-1)),
                _p("Lcl Translation", "Lcl Translation", "", "A", _d(0), _d(0), _d(0)),
                _p("Lcl Rotation", "Lcl Rotation", "", "A", _d(0), _d(0), _d(0)),
                _p("Lcl Scaling", "Lcl Scaling", "", "A", _d(1), _d(1), _d(1)),
                _p("Visibility", "Visibility", "", "A", _d(1)),
                _p("GeometricTranslation", "Vector3D", "Vector", "", _d(0), _d(0), _d(0)),
                _p("GeometricRotation", "Vector3D", "Vector", "", _d(0), _d(0), _d(0)),
                _p("GeometricScaling", "Vector3D", "Vector", "", _d(1), _d(1), _d(1))]),
            "Geometry": ("FbxMesh", [
                _p("Color", "ColorRGB", "Color", "", _d(0.8), _d(0.8), _d(0.8)),
                _p("Primary Visibility", "bool", "", "", _i(1)),
                _p("Casts Shadows", "bool", "", "", _i(1)),
                _p("Receive Shadows", "bool", "", "", _i(1))]),
            "Material": ("FbxSurfacePhong", [
                _p("ShadingModel", "KString", "", "", _s("Phong")),
                _p("DiffuseColor", "Color", "", "A", _d(0.8), _d(0.8), _d(0.8)),
                _p("DiffuseFactor", "Number", "", "A", _d(1)),
                _p("EmissiveColor", "Color", "", "A", _d(0), _d(0), _d(0)),
                _p("EmissiveFactor", "Number", "", "A", _d(1)),
                _p("TransparencyFactor", "Number", "", "A", _d(0)),
                _p("Opacity", "double", "Number", "", _d(1))]),
            "Texture": ("FbxFileTexture", [
                _p("TextureTypeUse", "enum", "", "", _i(0)),
                _p("AlphaSource", "enum", "", "", _i(2)),
                _p("WrapModeU", "enum", "", "", _i(0)),
                _p("WrapModeV", "enum", "", "", _i(0)),
                _p("UVSet", "KString", "", "", _s("default")),
                _p("UseMaterial", "bool", "", "", _i(0))]),
            "Video": ("FbxVideo", [
                _p("Path", "KString", "XRefUrl", "", _s("")),
                _p("RelPath", "KString", "XRefUrl", "", _s(""))]),
            "NodeAttribute": ("FbxNull", [
                _p("Color", "ColorRGB", "Color", "", _d(0.8), _d(0.8), _d(0.8)),
                _p("Size", "double", "Number", "", _d(100)),
                _p("Look", "enum", "", "", _i(1))]),
            "AnimationStack": ("FbxAnimStack", [
                _p("Description", "KString", "", "", _s("")),
                _p("LocalStart", "KTime", "Time", "", _l(0)),
                _p("LocalStop", "KTime", "Time", "", _l(0)),
                _p("ReferenceStart", "KTime", "Time", "", _l(0)),
                _p("ReferenceStop", "KTime", "Time", "", _l(0))]),
            "AnimationLayer": ("FbxAnimLayer", [
                _p("Weight", "Number", "", "A", _d(100)),
                _p("Mute", "bool", "", "", _i(0)),
                _p("Solo", "bool", "", "", _i(0)),
                _p("Lock", "bool", "", "", _i(0)),
                _p("BlendMode", "enum", "", "", _i(0))]),
            "AnimationCurveNode": ("FbxAnimCurveNode", [_p("d", "Compound", "", "")]),
        }
        kids = [_n("Version", _i(100)),
                _n("Count", _i(1 + sum(self.counts.values())))]
        kids.append(_n("ObjectType", _s("GlobalSettings"), children=[_n("Count", _i(1))]))
        for kind in ("AnimationStack", "AnimationLayer", "AnimationCurveNode", "AnimationCurve",
                     "NodeAttribute", "Model", "Geometry", "Material", "Texture", "Video",
                     "Deformer", "Pose"):
            if not self.counts.get(kind):
                continue
            c = [_n("Count", _i(self.counts[kind]))]
            if kind in templates:
                cls, props = templates[kind]
                c.append(_n("PropertyTemplate", _s(cls), children=[_props70(*props)]))
            kids.append(_n("ObjectType", _s(kind), children=c))
        return _n("Definitions", children=kids)

    # objects -------------------------------------------------------------------------
    def models(self) -> None:
        sc = self.scene
        joints = {j for sk in sc.skins for j in sk.joints}
        parents = sc.parents()
        self.free_skinned = {i for i, n in enumerate(sc.nodes)
                             if n.mesh is not None and n.skin is not None and i not in self.skip
                             and i not in self.mesh_on and i not in joints}
        moved = [sc.nodes[i].name for i in self.free_skinned if parents[i] is not None]
        if moved:
            self.warnings.append(f"{len(moved)} skinned mesh node(s) moved to the root with an "
                                 f"identity transform, as glTF draws them ({moved[:3]})")
        for i, n in enumerate(sc.nodes):
            if i in self.skip:
                continue
            mid = self.ids.new()
            self.model_id[i] = mid
            draws = n.mesh is not None or i in self.mesh_on
            cls = n.extras.get("fbx_class")
            if draws:
                sub = "Mesh"
            elif cls in ("LimbNode", "Null", "Root") or (cls is None and i not in joints):
                sub = cls if cls in ("LimbNode", "Null", "Root") else "Null"
            else:
                sub = "LimbNode"
            if i in joints and not draws:
                sub = "LimbNode"
            t, r, s = self.local_trs(i)
            if i in self.free_skinned:      # glTF ignores a skinned mesh node's transform
                t, r, s = np.zeros(3), np.array([0.0, 0, 0, 1]), np.ones(3)
            # glTF composes plain matrix products: FBX InheritType 1 (RSrs), not
            # the SDK default 0 (RrSs) that scales children component-wise
            props = [_p("InheritType", "enum", "", "", _i(1)),
                     _p_vec("Lcl Translation", "Lcl Translation", "", "A", t),
                     _p_vec("Lcl Rotation", "Lcl Rotation", "", "A", euler_xyz_degrees(r)),
                     _p_vec("Lcl Scaling", "Lcl Scaling", "", "A", s),
                     _p("DefaultAttributeIndex", "int", "Integer", "", _i(0))]
            geo = self.mesh_on.get(i, (None, None))[1]
            if geo is not None:
                gt, gr, gs = geo
                if gt is not None:
                    props.append(_p_vec("GeometricTranslation", "Vector3D", "Vector", "", gt))
                if gr is not None:
                    props.append(_p_vec("GeometricRotation", "Vector3D", "Vector", "",
                                        euler_xyz_degrees(gr)))
                if gs is not None:
                    props.append(_p_vec("GeometricScaling", "Vector3D", "Vector", "", gs))
            self.add("Model", _n("Model", _l(mid), _obj_name(n.name or f"node{i}", "Model"),
                                 _s(sub), children=[
                                     _n("Version", _i(232)), _props70(*props),
                                     _n("Shading", ("C", ord("T"))),
                                     _n("Culling", _s("CullingOff"))]))
            if sub in ("Null", "LimbNode", "Root"):
                aid = self.ids.new()
                attr_kids = [_props70(_p("Size", "double", "Number", "", _d(100)))] \
                    if sub == "LimbNode" else []
                attr_kids.append(_n("TypeFlags", _s("Skeleton" if sub == "LimbNode" else "Null")))
                self.add("NodeAttribute", _n("NodeAttribute", _l(aid),
                                             _obj_name(n.name, "NodeAttribute"), _s(sub),
                                             children=attr_kids))
                self.oo(aid, mid)
        # A moved skinned mesh node may still parent other nodes (three.js puts the
        # bones under it): glTF applies its transform to them, so a Null in its
        # place carries it.
        for i in sorted(self.free_skinned):
            if any(c not in self.skip for c in sc.nodes[i].children):
                nid = self.ids.new()
                self.xform_of[i] = nid
                t, r, s = self.local_trs(i)
                self.add("Model", _n("Model", _l(nid), _obj_name(
                    f"{sc.nodes[i].name or f'node{i}'}_transform", "Model"), _s("Null"), children=[
                        _n("Version", _i(232)), _props70(
                            _p("InheritType", "enum", "", "", _i(1)),
                            _p_vec("Lcl Translation", "Lcl Translation", "", "A", t),
                            _p_vec("Lcl Rotation", "Lcl Rotation", "", "A", euler_xyz_degrees(r)),
                            _p_vec("Lcl Scaling", "Lcl Scaling", "", "A", s)),
                        _n("Shading", ("C", ord("T"))), _n("Culling", _s("CullingOff"))]))
        for i in self.model_id:
            p = None if i in self.free_skinned else parents[i]
            while p is not None and p in self.skip:
                p = parents[p]
            self.oo(self.model_id[i], self.xform_of.get(p, self.model_id.get(p, 0))
                    if p is not None else 0)
        for i, nid in self.xform_of.items():
            p = parents[i]
            while p is not None and p in self.skip:
                p = parents[p]
            self.oo(nid, self.xform_of.get(p, self.model_id.get(p, 0)) if p is not None else 0)

    def local_trs(self, i: int) -> tuple:
        n = self.scene.nodes[i]
        if n.matrix is not None:
            m = np.asarray(n.matrix, np.float64)
            t, r, s = decompose_matrix(m)
            if not np.allclose(trs_to_matrix(t, r, s), m, atol=1e-6):
                self.warnings.append(f"node {n.name!r}: sheared matrix written as its TRS part")
            return t, r, s
        t = np.zeros(3) if n.translation is None else np.asarray(n.translation, np.float64)
        r = np.array([0.0, 0, 0, 1]) if n.rotation is None else \
            quat_normalize(np.asarray(n.rotation, np.float64))
        s = np.ones(3) if n.scale is None else np.asarray(n.scale, np.float64)
        return t, r, s

    def fbx_worlds(self) -> np.ndarray:
        """World matrices in FBX space (below the folded axes wrapper), per scene
        node; a folded geometric transform is applied by :meth:`geometry_world`."""
        sc = self.scene
        w = world_matrices(sc) if sc.nodes else np.zeros((0, 4, 4))
        if self.skip & set(sc.roots):
            wrap = next(r for r in sc.roots if r in self.skip)
            w = inverse_affine(w[wrap])[0] @ w
        return w

    def materials(self) -> dict:
        """Write every material (textures included); returns {material: id}."""
        out = {}
        videos: dict = {}
        for mi, m in enumerate(self.scene.materials):
            mid = self.ids.new()
            out[mi] = mid
            bc = list(np.asarray(m.base_color, np.float64).reshape(-1)) + [1.0]
            opacity = float(bc[3]) if len(bc) > 4 else 1.0
            props = [_p("ShadingModel", "KString", "", "", _s("Phong")),
                     _p_vec("DiffuseColor", "Color", "", "A", bc[:3]),
                     _p("DiffuseFactor", "Number", "", "A", _d(1)),
                     _p_vec("EmissiveColor", "Color", "", "A", m.emissive
                            if m.emissive_texture is None
                            or 0 <= m.emissive_texture.image < len(self.scene.images)
                            else (0.0, 0.0, 0.0)),
                     _p("EmissiveFactor", "Number", "", "A", _d(1)),
                     _p("TransparencyFactor", "Number", "", "A", _d(1 - opacity)),
                     _p("Opacity", "double", "Number", "", _d(opacity))]
            self.add("Material", _n("Material", _l(mid), _obj_name(m.name or f"material{mi}",
                                                                   "Material"), _s(""),
                                    children=[_n("Version", _i(102)),
                                              _n("ShadingModel", _s("phong")),
                                              _n("MultiLayer", _i(0)), _props70(*props)]))
            t = m.base_color_texture
            if t is not None and 0 <= t.image < len(self.scene.images):
                tid = self.texture(t, videos)
                self.op(tid, mid, "DiffuseColor")
            # the emissive map goes with its factor: a factor alone (white for a
            # mapped glow) would light the whole surface
            e = m.emissive_texture
            if e is not None and 0 <= e.image < len(self.scene.images):
                self.op(self.texture(e, videos), mid, "EmissiveColor")
            elif e is not None and any(m.emissive):
                self.warnings.append(f"material {m.name!r}: emissive map not found; "
                                     "its factor dropped")
            if m.unlit or m.alpha_mode == "MASK":
                self.warnings.append(f"material {m.name!r}: "
                                     f"{'unlit' if m.unlit else 'alpha mask'} is not "
                                     "expressed in FBX (Phong written)")
        return out

    def texture(self, t: Any, videos: dict) -> int:
        img = self.scene.images[t.image]
        ext = ".jpg" if img.mime_type == "image/jpeg" else ".png"
        base = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in img.name) \
            or f"image{t.image}"
        fname = img.uri if (img.uri and (img.data is None or not self.embed)) else \
            (base if base.lower().endswith((".png", ".jpg", ".jpeg")) else base + ext)
        if t.image not in videos:
            vid = self.ids.new()
            videos[t.image] = vid
            kids = [_n("Type", _s("Clip")),
                    _props70(_p("Path", "KString", "XRefUrl", "", _s(fname)),
                             _p("RelPath", "KString", "XRefUrl", "", _s(fname))),
                    _n("UseMipMap", _i(0)), _n("Filename", _s(fname)),
                    _n("RelativeFilename", _s(fname))]
            if img.data is not None and self.embed:
                kids.append(_n("Content", ("R", bytes(img.data))))
            self.add("Video", _n("Video", _l(vid), _obj_name(img.name or base, "Video"),
                                 _s("Clip"), children=kids))
        tid = self.ids.new()
        wrap = [_p("WrapModeU", "enum", "", "", _i(1 if t.wrap_s == 33071 else 0)),
                _p("WrapModeV", "enum", "", "", _i(1 if t.wrap_t == 33071 else 0))]
        self.add("Texture", _n("Texture", _l(tid), _obj_name(img.name or base, "Texture"),
                               _s(""), children=[
                                   _n("Type", _s("TextureVideoClip")), _n("Version", _i(202)),
                                   _n("TextureName", _obj_name(img.name or base, "Texture")),
                                   _props70(_p("UseMaterial", "bool", "", "", _i(1)), *wrap),
                                   _n("Media", _obj_name(img.name or base, "Video")),
                                   _n("FileName", _s(fname)), _n("RelativeFilename", _s(fname)),
                                   _n("ModelUVTranslation", _d(0), _d(0)),
                                   _n("ModelUVScaling", _d(1), _d(1)),
                                   _n("Texture_Alpha_Source", _s("None")),
                                   _n("Cropping", _i(0), _i(0), _i(0), _i(0))]))
        self.oo(videos[t.image], tid)
        return tid

    def geometries(self, material_ids: dict, worlds: np.ndarray) -> None:
        sc = self.scene
        cache: dict = {}
        bind_nodes: dict = {}
        for owner in list(self.model_id):
            src = self.mesh_on.get(owner, (owner, None))[0]
            mesh_node = sc.nodes[src]
            if mesh_node.mesh is None:
                continue
            skin = mesh_node.skin if mesh_node.skin is not None and \
                0 <= mesh_node.skin < len(sc.skins) else None
            held = mesh_node.extras.get("morphWeights")     # a node's weights: its own geometry
            key = (mesh_node.mesh, skin, owner if skin is not None else None,
                   tuple(map(float, held)) if isinstance(held, (list, tuple)) else None)
            if key not in cache:
                rec = self.geometry(mesh_node.mesh, skin, owner, worlds, src)
                cache[key] = rec
                if rec is not None and skin is not None:
                    bind_nodes[owner] = rec
            rec = cache[key]
            if rec is None:
                continue
            self.oo(rec["id"], self.model_id[owner])
            for m in rec["materials"]:
                if m in material_ids:
                    self.oo(material_ids[m], self.model_id[owner])
            self.node_geometry[src] = rec
            self.node_geometry[owner] = rec
        if bind_nodes:
            self.bind_pose(bind_nodes)

    def geometry(self, mesh_index: int, skin: Optional[int], owner: int, worlds: np.ndarray,
                 src: int) -> Optional[dict]:
        sc = self.scene
        mesh = sc.meshes[mesh_index]
        prims = [p for p in mesh.primitives if p.mode == 4 and len(p.positions)]
        if len(prims) != len(mesh.primitives):
            self.warnings.append(f"mesh {mesh.name!r}: {len(mesh.primitives) - len(prims)} "
                                 "point/line/empty primitive(s) not written")
        if not prims:
            return None
        pos, nrm, cols, jts, wts, tris, tri_mat = [], [], [], [], [], [], []
        nuv = max(len(p.uvs) for p in prims)
        uvs: list = [[] for _ in range(nuv)]
        ntargets = max(len(p.targets) for p in prims)
        deltas: list = [[] for _ in range(ntargets)]
        has_nrm = any(p.normals is not None for p in prims)
        has_col = any(p.colors is not None for p in prims)
        has_skin = skin is not None and all(p.joints is not None for p in prims)
        kmax = max((np.asarray(p.joints).shape[1] for p in prims if p.joints is not None),
                   default=0)
        used_mats: list = []
        base = 0
        for p in prims:
            P = np.asarray(p.positions, np.float64)
            nv = len(P)
            idx = np.arange(nv) if p.indices is None else np.asarray(p.indices, np.int64)
            idx = idx.reshape(-1)[:len(idx) - len(idx) % 3]
            pos.append(P)
            if has_nrm:
                nrm.append(np.asarray(p.normals, np.float64) if p.normals is not None
                           else compute_normals(P, idx).astype(np.float64))
            for k in range(nuv):
                uvs[k].append(np.asarray(p.uvs[k], np.float64) if k < len(p.uvs)
                              else np.zeros((nv, 2)))
            if has_col:
                c = np.ones((nv, 4))
                if p.colors is not None:
                    a = unit_colors(p.colors)
                    c[:, :a.shape[1]] = a
                cols.append(c)
            if has_skin:
                j = np.zeros((nv, kmax), np.int64)
                w = np.zeros((nv, kmax))
                pj, pw = np.asarray(p.joints, np.int64), np.asarray(p.weights, np.float64)
                j[:, :pj.shape[1]], w[:, :pw.shape[1]] = pj, pw
                jts.append(j)
                wts.append(w)
            for k in range(ntargets):
                t = p.targets[k] if k < len(p.targets) else None
                deltas[k].append(np.zeros((nv, 3)) if t is None or t.positions is None
                                 else np.asarray(t.positions, np.float64))
            if p.material is not None and p.material not in used_mats:
                used_mats.append(p.material)
            local = used_mats.index(p.material) if p.material is not None else 0
            tris.append(idx + base)
            tri_mat.append(np.full(len(idx) // 3, local))
            base += nv
        P = np.concatenate(pos)
        corners = np.concatenate(tris)
        keys = [P]
        if has_skin:
            J, W = np.concatenate(jts), np.concatenate(wts)
            s = W.sum(axis=1, keepdims=True)
            W = W / np.where(s > 0, s, 1)
            keys += [J, W]
        D = [np.concatenate(d) for d in deltas]
        keys += D
        first, remap = weld(*keys)
        pvi = remap[corners].astype(np.int64)
        # importers that validate polygons (Blender) drop a triangle whose corners weld
        # into one control point and a second triangle on the same three points (a
        # double-sided face): give those corners control points of their own
        tri_cp = pvi.reshape(-1, 3)
        degenerate = (tri_cp[:, 0] == tri_cp[:, 1]) | (tri_cp[:, 1] == tri_cp[:, 2]) \
            | (tri_cp[:, 0] == tri_cp[:, 2])
        _, once = np.unique(np.sort(tri_cp, axis=1), axis=0, return_index=True)
        repeated = np.ones(len(tri_cp), bool)
        repeated[once] = False
        bad = np.flatnonzero(degenerate | repeated)
        if len(bad):
            slots = (3 * bad[:, None] + np.arange(3)).reshape(-1)
            pvi[slots] = len(first) + np.arange(len(slots))
            first = np.concatenate([first, corners[slots]])
            used, pvi = np.unique(pvi, return_inverse=True)   # drop points left unused
            first = first[used]
            pvi = pvi.reshape(-1).astype(np.int64)
        cp = P[first]
        pvi[2::3] = ~pvi[2::3]
        gid = self.ids.new()
        name = mesh.name or f"mesh{mesh_index}"
        kids = [_props70(), _n("GeometryVersion", _i(124)), _n("Vertices", _arr("d", cp)),
                _n("PolygonVertexIndex", _arr("i", pvi))]
        layer0 = []
        if has_nrm:
            N = np.concatenate(nrm)[corners]
            kids.append(_n("LayerElementNormal", _i(0), children=[
                _n("Version", _i(102)), _n("Name", _s("")),
                _n("MappingInformationType", _s("ByPolygonVertex")),
                _n("ReferenceInformationType", _s("Direct")), _n("Normals", _arr("d", N))]))
            layer0.append(("LayerElementNormal", 0))
        if has_col:
            C = np.concatenate(cols)
            kids.append(_n("LayerElementColor", _i(0), children=[
                _n("Version", _i(101)), _n("Name", _s("colorSet1")),
                _n("MappingInformationType", _s("ByPolygonVertex")),
                _n("ReferenceInformationType", _s("IndexToDirect")),
                _n("Colors", _arr("d", C)), _n("ColorIndex", _arr("i", corners))]))
            layer0.append(("LayerElementColor", 0))
        for k in range(nuv):
            U = np.concatenate(uvs[k]).copy()
            U[:, 1] = 1.0 - U[:, 1]
            kids.append(_n("LayerElementUV", _i(k), children=[
                _n("Version", _i(101)), _n("Name", _s("map1" if k == 0 else f"map{k + 1}")),
                _n("MappingInformationType", _s("ByPolygonVertex")),
                _n("ReferenceInformationType", _s("IndexToDirect")),
                _n("UV", _arr("d", U)), _n("UVIndex", _arr("i", corners))]))
        mats = np.concatenate(tri_mat)
        same = len(mats) == 0 or bool(np.all(mats == mats[0]))
        kids.append(_n("LayerElementMaterial", _i(0), children=[
            _n("Version", _i(101)), _n("Name", _s("")),
            _n("MappingInformationType", _s("AllSame" if same else "ByPolygon")),
            _n("ReferenceInformationType", _s("IndexToDirect")),
            _n("Materials", _arr("i", mats[:1] if same else mats))]))
        layer0.append(("LayerElementMaterial", 0))
        if nuv:
            layer0.append(("LayerElementUV", 0))
        kids.append(_n("Layer", _i(0), children=[_n("Version", _i(100))] + [
            _n("LayerElement", children=[_n("Type", _s(t)), _n("TypedIndex", _i(ti))])
            for t, ti in layer0]))
        for k in range(1, nuv):
            kids.append(_n("Layer", _i(k), children=[_n("Version", _i(100)), _n(
                "LayerElement", children=[_n("Type", _s("LayerElementUV")),
                                          _n("TypedIndex", _i(k))])]))
        self.add("Geometry", _n("Geometry", _l(gid), _obj_name(name, "Geometry"), _s("Mesh"),
                                children=kids))
        rec = {"id": gid, "materials": used_mats, "channels": [], "ntargets": ntargets}
        if has_skin:
            self.skin_deformer(rec, skin, J[first], W[first], owner, worlds, name)
        elif skin is not None:
            self.warnings.append(f"mesh {name!r}: primitives without weights; skin not written")
        if ntargets:
            self.blend_shapes(rec, [d[first] for d in D], mesh, name,
                              default_morph_weights(sc.nodes[src], mesh))
        return rec

    def skin_deformer(self, rec: dict, skin_index: int, J: np.ndarray, W: np.ndarray,
                      owner: int, worlds: np.ndarray, name: str) -> None:
        sk = self.scene.skins[skin_index]
        sid = self.ids.new()
        self.add("Deformer", _n("Deformer", _l(sid), _obj_name(sk.name or name, "Deformer"),
                                _s("Skin"), children=[_n("Version", _i(101)),
                                                      _n("Link_DeformAcuracy", _d(50))]))
        self.oo(sid, rec["id"])
        G = self.geometry_world(owner, worlds)
        node_world = self.model_world(owner, worlds)
        ibms = np.tile(np.eye(4), (len(sk.joints), 1, 1)) if sk.inverse_bind_matrices is None \
            else np.asarray(sk.inverse_bind_matrices, np.float64).reshape(-1, 4, 4)
        rec["bind"] = {owner: node_world}
        for ji, joint in enumerate(sk.joints):
            if joint not in self.model_id:
                continue
            hit = (J == ji) & (W > 0)
            rows = np.flatnonzero(hit.any(axis=1))
            weights = (W * hit).sum(axis=1)[rows]
            link = G @ inverse_affine(ibms[ji])[0]      # (also a collapsed, scale-0 bind)
            # stored in bone space (mesh node -> bone at bind), as Autodesk's SDK,
            # Blender, ufbx and this package's reader read it; the SDK's
            # GetTransformMatrix (mesh world) is TransformLink times this
            mesh_to_bone = inverse_affine(link)[0] @ node_world
            cid = self.ids.new()
            self.add("Deformer", _n("Deformer", _l(cid), _obj_name(
                self.scene.nodes[joint].name or f"joint{ji}", "SubDeformer"), _s("Cluster"),
                children=[_n("Version", _i(100)), _n("UserData", _s(""), _s("")),
                          _n("Indexes", _arr("i", rows)), _n("Weights", _arr("d", weights)),
                          _n("Transform", _arr("d", mat4_to_gltf(mesh_to_bone))),
                          _n("TransformLink", _arr("d", mat4_to_gltf(link)))]))
            self.oo(cid, sid)
            self.oo(self.model_id[joint], cid)
            rec["bind"][joint] = link

    def geometry_world(self, owner: int, worlds: np.ndarray) -> np.ndarray:
        """The FBX-space world of the geometry's vertices: identity for a skinned
        mesh written at the root, else the model's world times its folded
        geometric transform."""
        src, geo = self.mesh_on.get(owner, (owner, None))
        if src == owner:              # glTF: a skinned mesh's node transform is ignored
            return np.eye(4) if owner in self.free_skinned else worlds[owner]
        g = worlds[owner]
        if geo is not None:
            g = g @ trs_to_matrix(*geo)
        return g

    def model_world(self, owner: int, worlds: np.ndarray) -> np.ndarray:
        """The world of the Model the geometry hangs on (its geometric transform
        not applied): what the BindPose and the cluster's ``Transform`` refer to."""
        src, geo = self.mesh_on.get(owner, (owner, None))
        if src == owner and owner in self.free_skinned:
            return np.eye(4)
        return worlds[owner]

    def bind_pose(self, records: dict) -> None:
        pid = self.ids.new()
        mats: dict = {}
        for rec in records.values():
            for node, m in rec.get("bind", {}).items():
                mats.setdefault(node, m)
        kids = [_n("Type", _s("BindPose")), _n("Version", _i(100)),
                _n("NbPoseNodes", _i(len(mats)))]
        for node, m in mats.items():
            kids.append(_n("PoseNode", children=[_n("Node", _l(self.model_id[node])),
                                                  _n("Matrix", _arr("d", mat4_to_gltf(m)))]))
        self.add("Pose", _n("Pose", _l(pid), _obj_name("BindPose", "Pose"), _s("BindPose"),
                            children=kids))

    def blend_shapes(self, rec: dict, deltas: list, mesh: Any, name: str,
                     weights: Any = None) -> None:
        """A BlendShape with one channel per target, at the weights a glTF
        viewer holds them (the node's own over the mesh's) as DeformPercent."""
        bid = self.ids.new()
        self.add("Deformer", _n("Deformer", _l(bid), _obj_name(name, "Deformer"),
                                _s("BlendShape"), children=[_n("Version", _i(100))]))
        self.oo(bid, rec["id"])
        names = list(mesh.target_names or [])
        defaults = list(weights if weights is not None else mesh.weights or [])
        for k, d in enumerate(deltas):
            tname = names[k] if k < len(names) else f"target{k}"
            rows = np.flatnonzero(np.any(d != 0, axis=1))
            if not len(rows):
                rows = np.array([0])
            cid, shid = self.ids.new(), self.ids.new()
            pct = 100.0 * float(defaults[k]) if k < len(defaults) else 0.0
            self.add("Deformer", _n("Deformer", _l(cid), _obj_name(tname, "SubDeformer"),
                                    _s("BlendShapeChannel"), children=[
                                        _n("Version", _i(100)), _n("DeformPercent", _d(pct)),
                                        _n("FullWeights", _arr("d", [100.0])),
                                        _props70(_p("DeformPercent", "Number", "", "A",
                                                    _d(pct)))]))
            self.add("Geometry", _n("Geometry", _l(shid), _obj_name(tname, "Geometry"),
                                    _s("Shape"), children=[
                                        _n("Version", _i(100)),
                                        _n("Indexes", _arr("i", rows)),
                                        _n("Vertices", _arr("d", d[rows]))]))
            self.oo(cid, bid)
            self.oo(shid, cid)
            rec["channels"].append(cid)

    def build(self) -> FbxNode:
        self.fold_reader_nodes()
        worlds = self.fbx_worlds()
        self.models()
        material_ids = self.materials()
        self.geometries(material_ids, worlds)
        names, stop = self.animations()
        root = FbxNode(b"", [], [])
        root.children = (self.header() + [self.global_settings(stop)]
                         + self.documents(names[0][0] if names else "")
                         + [self.definitions(), _n("Objects", children=self.objects),
                            _n("Connections", children=self.connections), self.takes(names)])
        return root


def scene_to_fbx(scene: Scene, *, version: int = 7400, binary: bool = True, fps: float = 30.0,
                 embed_textures: bool = True, creator: str = "",
                 time_stamp: Optional[datetime.datetime] = None) -> Document:
    """An FBX document (binary ``fbx`` or ``fbx-ascii``) of ``scene``.

    ``version`` 7100-7700 (7.5+ has 64-bit record offsets in binary);
    ``fps`` is the rate rotations and cubic splines are resampled at and the
    file's TimeMode; ``embed_textures`` puts image bytes in Video/Content.
    Output is deterministic (object ids count up; the creation time is fixed
    unless ``time_stamp`` is given).  Lossy choices go to ``scene.warnings``.
    """
    from ...._version import __version__
    if not 7100 <= int(version) <= 7700:
        raise EncodeError(f"FBX {version} cannot be written from a scene: 7100-7700 only")
    if not (fps > 0 and math.isfinite(fps)):
        raise EncodeError(f"frame rate must be positive, not {fps}")
    require_finite(scene)
    scene = from_time_zero(scene)
    w = _FbxWriter(scene, version=int(version), fps=float(fps), embed_textures=embed_textures,
                   creator=creator or f"potsherd {__version__} FBX writer",
                   time_stamp=time_stamp)
    root = w.build()
    from ..transcode import _ensure_binary_header_nodes, to_ascii
    stamp = w.stamp.strftime("%Y-%m-%d %H:%M:%S:") + f"{w.stamp.microsecond // 1000:03d}"
    root.children.insert(1, FbxNode(b"CreationTime", [("S", stamp.encode())]))
    _ensure_binary_header_nodes(root)
    doc = Document("fbx", root, {"version": int(version), "endian_byte": 0, "byte21": 0x1A,
                                 "terminated": True, "footer": "sdk", "file_id": "derived"},
                   b"", [])
    if not binary:
        doc = to_ascii(doc, int(version))
    return doc
