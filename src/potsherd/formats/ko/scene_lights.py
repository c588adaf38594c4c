"""Lights, cameras and scenes of the N3 engine as glTF (KHR_lights_punctual and
glTF cameras), with the axis change of every KO export (mirror X: the engine is
left-handed, Y up).

* ``.n3light`` / ``.glo``: one node per light at its position, turned so its -Z
  is the light's direction; colour = diffuse (sRGB-decoded: D3D lights in display
  space, glTF's light colour is linear); the D3D light's other parameters
  (ambient, specular, attenuation, on flag, light number) in the node's extras.
  D3D spot angles (theta, phi) are full cone angles; glTF's are half angles.
* ``.n3camera``: a node at the eye (the transform position), looking at the
  look-at point with the transform's scale as the up vector (CN3Camera keeps its
  up vector there); the lens from ``__CameraData`` (``fFOV`` is vertical, as
  D3DXMatrixPerspectiveFovLH takes it).
* ``.n3scene``: its cameras, lights, shapes and characters, each loaded like the
  file alone and placed under one root.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np

from ...scene import Camera, Light, Scene
from ...scene.bake_colors import srgb_to_linear
from ...scene.xform import mirror_x
from .scene import SCENES, _scene, _transform_trs, add_shape
from .text import text

_TYPES = {1: "point", 2: "spot", 3: "directional"}


def _quat_looking(forward: np.ndarray, up: np.ndarray | None = None) -> list[float] | None:
    """The rotation turning -Z to ``forward`` (and +Y towards ``up``), x y z w."""
    f = np.asarray(forward, np.float64)
    n = np.linalg.norm(f)
    if not np.isfinite(n) or n < 1e-12:
        return None
    f = f / n
    u = np.array([0.0, 1.0, 0.0]) if up is None else np.asarray(up, np.float64)
    if not np.isfinite(u).all() or np.linalg.norm(np.cross(f, u)) < 1e-6:
        u = np.array([0.0, 1.0, 0.0]) if abs(f[1]) < 0.99 else np.array([0.0, 0.0, 1.0])
    r = np.cross(f, u)
    r /= np.linalg.norm(r)
    u2 = np.cross(r, f)
    m = np.column_stack([r, u2, -f])           # columns: local x, y, z in world
    t = m[0, 0] + m[1, 1] + m[2, 2]
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [s / 4, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, s / 4, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, s / 4, (m[1, 0] - m[0, 1]) / s]
    q = np.asarray(q) / np.linalg.norm(q)
    return [float(x) for x in q]


def _finite(v: Any, default: float) -> float:
    x = float(v)
    return x if math.isfinite(x) else default


def add_light(scene: Scene, rec: dict, parent: int | None = None) -> int:
    """One CN3Light record as a light node."""
    d = rec["light"]
    kind = _TYPES.get(int(d["type"]))
    name = text(rec["transform"]["name"]) or f"light{int(d['number'])}"
    extras = {"d3dType": int(d["type"]), "on": bool(d["on"]), "number": int(d["number"]),
              "ambient": [_finite(x, 0.0) for x in d["ambient"]],
              "specular": [_finite(x, 0.0) for x in d["specular"]],
              "attenuation": [_finite(d[k], 0.0) for k in ("attenuation0", "attenuation1",
                                                             "attenuation2")],
              "falloff": _finite(d["falloff"], 1.0)}
    if kind is None:
        scene.warnings.append(f"{name}: light type {int(d['type'])} is not a D3D light type; "
                              "exported as a point light")
        kind = "point"
    # D3D lights in display space; KHR_lights_punctual's colour is linear
    color = tuple(float(c) for c in srgb_to_linear(np.array(
        [min(max(_finite(x, 1.0), 0.0), 1.0) for x in list(d["diffuse"])[:3]])))
    rng = _finite(d["range"], 0.0)
    light = Light(type=kind, color=color, intensity=1.0, range=rng if rng > 0 else None,
                  inner_cone=_finite(d["theta"], 0.0) / 2, outer_cone=_finite(d["phi"], 0.0) / 2,
                  name=name, extras=extras)
    if kind == "spot" and not 0 < light.outer_cone <= math.pi / 2:
        scene.warnings.append(f"{name}: spot cone {light.outer_cone * 2:.3f} rad out of range; "
                              "clamped")
    li = scene.add_light(light)
    pos = mirror_x(np.asarray(d["position"], np.float64)) if kind != "directional" else None
    rot = None
    if kind in ("spot", "directional"):
        rot = _quat_looking(mirror_x(np.asarray(d["direction"], np.float64)))
    fields: dict = {}
    if pos is not None and np.isfinite(pos).all():
        fields["translation"] = pos.tolist()
    if rot is not None:
        fields["rotation"] = rot
    return scene.add_node(name=name, parent=parent, light=li, **fields)


def scene_light(doc: Any, **options: Any) -> Scene:
    scene, _, _ = _scene(doc, options)
    add_light(scene, doc.root)
    return scene


def scene_glo(doc: Any, **options: Any) -> Scene:
    scene, _, _ = _scene(doc, options)
    root = scene.add_node(name="lights", extras={"version": int(doc.root["version"])})
    for rec in doc.root["lights"]:
        add_light(scene, rec, root)
    return scene


def add_camera(scene: Scene, doc: Any, parent: int | None = None) -> int:
    """One CN3Camera as a camera node."""
    r = doc.root
    t = r["transform"]
    c = r["camera"]
    name = text(t["name"]) or "camera"
    eye = mirror_x(np.asarray(t["position"], np.float64))
    at = mirror_x(np.asarray(r["at"], np.float64))
    up = mirror_x(np.asarray(t["scale"], np.float64))
    fov, near, far, aspect = (float(c[k]) for k in ("fov", "nearPlane", "farPlane", "aspect"))
    if doc.trailing or not (math.isfinite(fov) and 0 < fov < math.pi):
        scene.warnings.append(f"{name}: the camera's lens data is not the engine's layout; "
                              "exported with a 55 degree lens")
        fov, near, far, aspect = math.radians(55.0), 0.1, None, None
    cam = scene.add_camera(Camera(yfov=fov, znear=near if near > 0 else 0.1,
                                  zfar=far if far and far > near else None,
                                  aspect=aspect if aspect and aspect > 0 else None, name=name,
                                  extras={"fog": bool(r["fogUse"]),
                                          "fogColor": int(r["fogColor"])}))
    fields: dict = {}
    if np.isfinite(eye).all():
        fields["translation"] = eye.tolist()
    rot = _quat_looking(at - eye, up)
    if rot is not None:
        fields["rotation"] = rot
    return scene.add_node(name=name, parent=parent, camera=cam, **fields)


def scene_camera(doc: Any, **options: Any) -> Scene:
    scene, _, _ = _scene(doc, options)
    add_camera(scene, doc)
    return scene


def graft(dst: Scene, src: Scene, parent: int | None) -> None:
    """Append ``src`` to ``dst`` under ``parent`` (every index remapped)."""
    n0, m0, mat0, img0, sk0 = (len(dst.nodes), len(dst.meshes), len(dst.materials),
                               len(dst.images), len(dst.skins))
    c0, l0 = len(dst.cameras), len(dst.lights)
    dst.images.extend(src.images)
    for mat in src.materials:
        mat = copy.copy(mat)
        for f in ("base_color_texture", "normal_texture", "metallic_roughness_texture",
                  "occlusion_texture", "emissive_texture"):
            ref = getattr(mat, f, None)
            if ref is not None:
                setattr(mat, f, dataclasses.replace(ref, image=ref.image + img0))
        dst.materials.append(mat)
    for mesh in src.meshes:
        mesh = copy.copy(mesh)
        mesh.primitives = [dataclasses.replace(p, material=None if p.material is None
                                               else p.material + mat0) for p in mesh.primitives]
        dst.meshes.append(mesh)
    for sk in src.skins:
        dst.skins.append(dataclasses.replace(sk, joints=[j + n0 for j in sk.joints],
                                             skeleton=None if sk.skeleton is None
                                             else sk.skeleton + n0))
    dst.cameras.extend(src.cameras)
    dst.lights.extend(src.lights)
    for node in src.nodes:
        dst.nodes.append(dataclasses.replace(
            node, children=[c + n0 for c in node.children],
            mesh=None if node.mesh is None else node.mesh + m0,
            skin=None if node.skin is None else node.skin + sk0,
            camera=None if node.camera is None else node.camera + c0,
            light=None if node.light is None else node.light + l0))
    for r in src.roots:
        if parent is None:
            dst.roots.append(r + n0)
        else:
            dst.nodes[parent].children.append(r + n0)
    for anim in src.animations:
        dst.animations.append(dataclasses.replace(
            anim, channels=[dataclasses.replace(ch, node=ch.node + n0) for ch in anim.channels]))
    dst.warnings.extend(src.warnings)


def scene_n3scene(doc: Any, **options: Any) -> Scene:
    """Cameras, lights, shapes and characters of a CN3Scene, each where its own
    file places it; what is not found is named in one warning."""
    scene, resolver, mats = _scene(doc, options)
    r = doc.root
    root = scene.add_node(name=scene.name or "scene",
                          extras={"frames": [_finite(r["frameStart"], 0.0),
                                             _finite(r["frameEnd"], 0.0)],
                                  "activeCamera": int(r["activeCamera"])})
    missing: list[str] = []

    def load(ref: Any, what: str):
        before = len(scene.warnings)
        d = resolver.load(ref, scene, what)
        if d is None and text(ref):
            scene.warnings[before:] = [w for w in scene.warnings[before:]
                                       if not w.endswith("not found")]
            missing.append(f"{what} {text(ref)!r}")
        return d

    for ref in r["cameras"]:
        d = load(ref, "camera")
        if d is not None and d.format == "n3camera":
            add_camera(scene, d, root)
    for ref in r["lights"]:
        d = load(ref, "light")
        if d is not None and d.format == "n3light":
            add_light(scene, d.root, root)
    for ref in r["shapes"]:
        d = load(ref, "shape")
        if d is not None and d.format == "n3shape" and not d.params.get("opaque"):
            add_shape(scene, resolver, mats, d.root, root)
    for ref in r["characters"]:
        d = load(ref, "character")
        if d is None or d.format != "n3chr":
            continue
        try:
            sub = SCENES["n3chr"](d, **{k: v for k, v in options.items()
                                        if k in ("lod", "data_root", "fx_meshes")})
        except Exception as e:  # noqa: BLE001 - one character's refusal is a warning here
            from ...core.errors import FormatError
            if not isinstance(e, FormatError):
                raise
            scene.warnings.append(f"character {text(ref)!r}: {e.message}")
            continue
        # at the top level: glTF ignores a skinned mesh node's parents (and the
        # validator warns), and a character's skinned parts are roots of its scene
        graft(scene, sub, None)
    if missing:
        scene.warnings.append(f"{len(missing)} referenced files missing, exported without them "
                              f"({'; '.join(missing)})")
    return scene.unique_names("nodes", "animations")


def scene_vmesh(doc: Any, **options: Any) -> Scene:
    """A collision / climb mesh (.n3vmesh) as a mesh in an invisible material
    (as the zone export shows the opd's collision triangles).  Without indices
    the vertices are a triangle list (CN3VMesh's picking reads them so); indices
    that name no vertex drop their triangle, with a warning."""
    from ...scene import Material, Mesh, Primitive, flip_winding
    scene, _, _ = _scene(doc, options)
    r = doc.root
    name = text(r["name"]) or "collision"
    pos = np.asarray(r["vertices"], np.float32).reshape(-1, 3)
    idx = np.asarray(r["indices"], np.int64)
    if not len(idx):                    # CN3VMesh: no indices = a plain triangle list
        idx = np.arange(len(pos) // 3 * 3, dtype=np.int64)
    idx = idx[:len(idx) // 3 * 3].reshape(-1, 3)
    bad = (idx >= len(pos)).any(axis=1)
    if bad.any():
        scene.warnings.append(f"{name}: {int(bad.sum())} triangles name missing vertices; "
                              "dropped")
        idx = idx[~bad]
    finite = np.isfinite(pos).all()
    node = scene.add_node(name=name, extras={"collision": True})
    if len(idx) and finite:
        mat = scene.add_material(Material(name="collision", base_color=(1.0, 0.0, 1.0, 0.0),
                                          alpha_mode="BLEND", double_sided=True, unlit=True,
                                          extras={"hidden": True}))
        tri = flip_winding(idx.reshape(-1)).astype(np.uint32)
        scene.nodes[node].mesh = scene.add_mesh(Mesh(name=name, primitives=[Primitive(
            positions=mirror_x(pos).astype(np.float32), indices=tri, material=mat)]))
    elif not finite:
        scene.warnings.append(f"{name}: non-finite vertices; no mesh exported")
    return scene
