"""The rigid node tree of an exported shape rebound as skinned meshes.

Darkstar meshes are rigid on one node each, so the exact glTF form is a node
tree with meshes on the nodes.  Blender turns such a tree into one action per
node per clip and shows no armature, which is useless for editing a character.
:func:`skin_rigid_scene` keeps the same tree as a skeleton (every shape node
and every object node a joint) and moves the geometry into skinned meshes with
rigid weights: one mesh per material for the static objects, one per object
whose mesh has frames (its morph targets and their weight tracks stay its
own).  Vertices are posed at rest, so the picture is unchanged; object
visibility (scale to zero on the object node) still works through its joint.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...scene import Mesh, MorphTarget, Primitive, Scene, Skin, flip_winding, trs_to_matrix
from ...scene.geometry import rigid_influences
from ...scene.xform import inverse_affine


def world_matrices(scene: Scene) -> list[np.ndarray]:
    """Rest world matrix of every node (parents before children is not assumed;
    a cycle in the child lists is cut where it closes)."""
    parents = scene.parents()
    out: list[Any] = [None] * len(scene.nodes)

    def world(i: int) -> np.ndarray:
        chain = []
        on_chain: set = set()
        j: Any = i
        while j is not None and out[j] is None:
            if j in on_chain:            # a child list that loops: the loop starts at the top
                j = None
                break
            chain.append(j)
            on_chain.add(j)
            j = parents[j]
        m = np.eye(4) if j is None else out[j]
        for k in reversed(chain):
            n = scene.nodes[k]
            m = m @ (np.asarray(n.matrix, np.float64) if n.matrix is not None
                     else trs_to_matrix(n.translation, n.rotation, n.scale))
            out[k] = m
        return out[i]

    for i in range(len(scene.nodes)):
        world(i)
    return out


def _posed(prim: Primitive, m: np.ndarray, joint: int) -> Primitive:
    """``prim`` moved by world matrix ``m``, all vertices bound to ``joint``."""
    lin = m[:3, :3]
    pos = (prim.positions.astype(np.float64) @ lin.T + m[:3, 3]).astype(np.float32)
    normals = None
    if prim.normals is not None:
        with np.errstate(all="ignore"):
            nm = np.linalg.inv(lin).T if abs(np.linalg.det(lin)) > 1e-12 else lin
        n = prim.normals.astype(np.float64) @ nm.T
        length = np.linalg.norm(n, axis=1, keepdims=True)
        normals = np.where(length > 0, n / np.where(length > 0, length, 1), 0).astype(np.float32)
    indices = prim.indices
    if indices is not None and np.linalg.det(lin) < 0:
        indices = flip_winding(indices)
    joints, weights = rigid_influences(np.full(len(pos), joint))
    targets = [MorphTarget(name=t.name, positions=(t.positions.astype(np.float64) @ lin.T)
                           .astype(np.float32)) for t in prim.targets]
    return Primitive(positions=pos, normals=normals, uvs=list(prim.uvs), indices=indices,
                     joints=joints, weights=weights, material=prim.material,
                     targets=targets, extras=dict(prim.extras))


def _merge(parts: list[tuple[Primitive, int]]) -> Primitive:
    """Primitives of one material concatenated; ``extras.parts`` lists
    ``[dts_object, first vertex, vertex count]`` so an importer can tell the
    objects apart even without the joints."""
    pos, nrm, uv, idx, jo, we, where = [], [], [], [], [], [], []
    base = 0
    for prim, obj in parts:
        pos.append(prim.positions)
        nrm.append(prim.normals if prim.normals is not None else np.zeros_like(prim.positions))
        uv.append(prim.uvs[0] if prim.uvs else np.zeros((len(prim.positions), 2), np.float32))
        idx.append(prim.indices.astype(np.int64) + base)
        jo.append(prim.joints)
        we.append(prim.weights)
        where.append([obj, base, len(prim.positions)])
        base += len(prim.positions)
    first = parts[0][0]
    extras = {k: v for k, v in first.extras.items()}
    extras["parts"] = where
    return Primitive(positions=np.concatenate(pos), normals=np.concatenate(nrm), uvs=[np.concatenate(uv)],
                     indices=np.concatenate(idx).astype(np.uint32), joints=np.concatenate(jo),
                     weights=np.concatenate(we), material=first.material, extras=extras)


def skin_rigid_scene(scene: Scene, wrap: int) -> int | None:
    """Rebind the meshes of the rigid tree under root ``wrap`` to one skin
    (see the module docstring).  Returns the skin index, or None when no node
    carries a mesh.  Morph weight tracks move to the new mesh nodes."""
    holders = [i for i, n in enumerate(scene.nodes) if n.mesh is not None]
    if not holders:
        return None
    worlds = world_matrices(scene)
    joints = [i for i in range(len(scene.nodes)) if i != wrap]
    joint_of = {node: j for j, node in enumerate(joints)}
    by_material: dict[Any, list[tuple[Primitive, int]]] = {}
    own_meshes: list[tuple[int, Mesh]] = []
    for i in holders:
        node = scene.nodes[i]
        mesh = scene.meshes[node.mesh]
        obj = int(node.extras.get("dts_object", -1))
        posed = [_posed(p, worlds[i], joint_of[i]) for p in mesh.primitives]
        if mesh.weights:                 # mesh frames: keep the object's own mesh
            own_meshes.append((i, Mesh(name=node.name, primitives=posed, weights=list(mesh.weights),
                                       target_names=list(mesh.target_names or []),
                                       extras={**mesh.extras, "dts_object": obj})))
        else:
            for p in posed:
                by_material.setdefault(p.material, []).append((p, obj))
        node.mesh = None
    # the skeleton root is the one top joint (none when several share the axis
    # wrapper): naming the wrapper made Blender apply its axis turn twice to the
    # rest of every channel a clip does not key
    parents = scene.parents()
    tops = [j for j in joints if parents[j] not in joint_of]
    skin = scene.add_skin(Skin(joints=joints, skeleton=tops[0] if len(tops) == 1 else None,
                               name="skeleton",
                               inverse_bind_matrices=inverse_affine(np.stack([worlds[j] for j in joints]))[0]))
    scene.meshes = []                     # the rigid meshes are replaced, not kept beside
    for material, parts in by_material.items():
        name = (scene.materials[material].name if material is not None else "untextured")
        mi = scene.add_mesh(Mesh(name=name, primitives=[_merge(parts)],
                                 extras={"dts_objects": sorted({o for _, o in parts})}))
        scene.add_node(name=name, mesh=mi, skin=skin)
    retarget: dict[int, int] = {}
    for holder, mesh in own_meshes:
        mi = scene.add_mesh(mesh)
        retarget[holder] = scene.add_node(name=mesh.name, mesh=mi, skin=skin)
    for anim in scene.animations:
        for ch in anim.channels:
            if ch.path == "weights" and ch.node in retarget:
                ch.node = retarget[ch.node]
    return skin


