"""``EXT_mesh_gpu_instancing`` for the glTF reader: each instance of a node's
mesh becomes a node of its own, so importers (which know nothing of GPU
instancing) see every copy.  A mixin of :class:`~.gltf_read._Reader`, on the
checked access of :mod:`.gltf_access`."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ..core.errors import CountError, LimitError
from .gltf_access import GltfAccess, _kind
from .model import Node, Scene

#: per-instance attributes of EXT_mesh_gpu_instancing: (components, default value)
_INSTANCE_ATTRIBUTES = {"TRANSLATION": (3, (0.0, 0.0, 0.0)), "ROTATION": (4, (0.0, 0.0, 0.0, 1.0)),
                        "SCALE": (3, (1.0, 1.0, 1.0))}


#: vertices as drawn (every node's mesh, every instance) per byte of input (+1 MiB):
#: a few bytes per instance or per node can copy a big mesh, and importers bake
#: every copy; stored geometry alone never comes near (at least 4 bytes a vertex)
DRAWN_PER_BYTE = 16


def drawn_budget(limits, input_size: int) -> int:
    """Most vertices a glTF of ``input_size`` bytes may draw (instances x vertices,
    nodes sharing a mesh x its vertices): the element limit, and 16 x the input."""
    return min(limits.max_elements, DRAWN_PER_BYTE * (input_size + (1 << 20)))


class Instancing(GltfAccess):
    """Reading and expanding a node's instances."""

    def instance_trs(self, i: int) -> Optional[tuple]:
        """``(translation (N, 3), rotation (N, 4), scale (N, 3))`` float64 of the
        ``EXT_mesh_gpu_instancing`` instances on node ``i`` (absent attributes
        filled with their defaults), or None without the extension.  Integer
        accessors are read as KHR_mesh_quantization allows (normalized or not;
        ROTATION only float or normalized); rotations are normalised."""
        d = self.items("nodes")[i]
        ext = d.get("extensions")
        if not isinstance(ext, dict) or "EXT_mesh_gpu_instancing" not in ext:
            return None
        path = f"$.nodes[{i}].extensions.EXT_mesh_gpu_instancing"
        inst = ext["EXT_mesh_gpu_instancing"]
        if not isinstance(inst, dict):
            raise self.fail(path, "must be an object", found=_kind(inst))
        attrs = self.get(inst, "attributes", path, "object", required=True)
        apath = path + ".attributes"
        arrays: dict = {}
        for key, (ncomp, _) in _INSTANCE_ATTRIBUTES.items():
            ai = self.index(attrs, key, apath, "accessors")
            if ai is None:
                continue
            raw, norm = self.accessor(ai)
            if key == "ROTATION" and raw.dtype.kind != "f" and not norm:
                raise self.fail(f"{apath}.ROTATION", "ROTATION must be float or normalized "
                                "integers", found=str(raw.dtype))
            arr = self.floats(ai, f"{apath}.{key}", (ncomp,)).astype(np.float64)
            if not np.isfinite(arr).all():
                raise self.fail(f"{apath}.{key}", f"{key} values must be finite")
            arrays[key] = arr
        if not arrays:
            raise self.fail(apath, "no TRANSLATION, ROTATION or SCALE attribute",
                            expected="at least one")
        counts = {len(a) for a in arrays.values()}
        if len(counts) > 1:
            raise CountError("instance attributes differ in count", path=apath,
                             expected="one count", found={k: len(a) for k, a in arrays.items()})
        n = counts.pop()
        if "ROTATION" in arrays:
            q = arrays["ROTATION"]
            length = np.linalg.norm(q, axis=1)
            if np.any(length < 1e-6):
                k = int(np.argmax(length < 1e-6))
                raise self.fail(f"{apath}.ROTATION", "zero-length instance rotation",
                                found=f"instance {k}")
            arrays["ROTATION"] = q / length[:, None]
        t, r, sc = (arrays[k] if k in arrays else np.tile(default, (n, 1))
                    for k, (_, default) in _INSTANCE_ATTRIBUTES.items())
        return t, r, sc

    def expand_instances(self, scene: Scene) -> None:
        """Each ``EXT_mesh_gpu_instancing`` instance as a node of its own: a child of
        the instanced node with the instance's translation, rotation and scale and
        the node's mesh (and skin), which the instanced node then no longer draws
        itself, as a viewer draws the mesh only at the instances.  The new nodes
        come after the file's, so every index read so far stays valid; the
        instanced node's ``extras["EXT_mesh_gpu_instancing"]`` lists them.  An
        animation of the node's morph weights is given to each copy too.

        A few bytes per instance can copy a large mesh: the copies' vertices are
        bounded by :func:`drawn_budget`, checked before any copy is made."""
        budget = drawn_budget(self.limits, len(self.data))
        copied = 0
        for i in range(len(scene.nodes)):
            trs = self.instance_trs(i)
            if trs is None:
                continue
            node = scene.nodes[i]
            if node.mesh is None:
                self.warnings.append(f"$.nodes[{i}]: EXT_mesh_gpu_instancing on a node "
                                     "without a mesh ignored")
                continue
            t, r, sc = trs
            nv = sum(len(p.positions) for p in scene.meshes[node.mesh].primitives)
            copied += len(t) * max(nv, 1)
            if copied > budget:
                raise LimitError("instanced copies have more vertices than the limit",
                                 path=f"$.nodes[{i}].extensions.EXT_mesh_gpu_instancing",
                                 expected=f"<= {budget}", found=copied)
            first = len(scene.nodes)
            weights = node.extras.get("morphWeights")
            base = node.name or f"node{i}"
            for k in range(len(t)):
                extras = {"instanceOf": i, "instance": k}
                if weights is not None:
                    extras["morphWeights"] = list(weights)
                scene.nodes.append(Node(name=f"{base}.instance{k}", translation=t[k],
                                        rotation=r[k], scale=sc[k], mesh=node.mesh,
                                        skin=node.skin, extras=extras))
            node.children.extend(range(first, len(scene.nodes)))
            node.extras["EXT_mesh_gpu_instancing"] = {"first": first, "count": len(t)}
            node.mesh = node.skin = None
            for a in scene.animations:     # the node's morph weight keys move its copies
                a.channels.extend(dataclasses.replace(c, node=k) for c in list(a.channels)
                                  if c.node == i and c.path == "weights"
                                  for k in range(first, len(scene.nodes)))


def check_drawn(scene: Scene, limits, input_size: int) -> None:
    """Refuse a scene whose nodes draw more vertices than :func:`drawn_budget`
    (many nodes naming one big mesh amplify as instances do)."""
    budget = drawn_budget(limits, input_size)
    per_mesh = [sum(len(p.positions) for p in m.primitives) for m in scene.meshes]
    drawn = 0
    for i, n in enumerate(scene.nodes):
        if n.mesh is not None and 0 <= n.mesh < len(per_mesh):
            drawn += per_mesh[n.mesh]
            if drawn > budget:
                raise LimitError("the scene draws more vertices than the limit (nodes x "
                                 "their meshes' vertices)", path=f"$.nodes[{i}].mesh",
                                 expected=f"<= {budget}", found=drawn)
