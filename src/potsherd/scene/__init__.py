"""Neutral scene model: what a family's ``to_scene`` returns and the glTF writer reads.

A codec exports to glTF by implementing ``to_scene(doc, **options) -> Scene``
(in ``potsherd/formats/<family>/scene.py``).  ``potsherd convert`` and
:func:`potsherd.export.gltf.export_document` call it and write .glb/.gltf.
Options arrive as keyword arguments from the CLI (``detail``, ``lod``,
``data_root``, ...) plus others; accept ``**options`` and ignore unknown ones.

Conventions (ALREADY glTF's; convert in ``to_scene``, the writer does not):
- right-handed, +Y up, metres, counter-clockwise front faces; the asset's
  front looks toward +Z (glTF spec), so a Y-forward Z-up model needs
  (x, y, z) -> (-x, z, y) (root rotation ``Z_UP_Y_FORWARD_TO_GLTF``), not
  just ``Z_UP_TO_Y_UP`` (which makes it face -Z); Y-down +Z-forward data
  (TR) needs ``Y_DOWN_Z_FORWARD_TO_GLTF`` rather than ``Y_DOWN_TO_Y_UP``;
- UV origin top-left (same as Direct3D/bitmaps: no V flip for those; FBX and
  OpenGL-style data need ``v' = 1 - v``);
- quaternions are (x, y, z, w); matrices are numpy (4, 4) in math layout
  (column vectors, translation in ``m[:3, 3]``); :func:`mat4_from_gltf` reads
  16 column-major floats (which is also a D3D row-vector matrix in file order);
- local transform of a node = ``T · R · S``; world = parent world · local;
- animation times in seconds (float), LINEAR rotation = slerp.

Every cross reference is an INDEX into a ``Scene`` list (``Node.mesh``,
``Node.children``, ``Node.skin``, ``Primitive.material``,
``TextureRef.image``, ``Skin.joints`` -> nodes, ``Channel.node``).  Bulk data
are numpy arrays (any numeric dtype; the writer picks the glTF component type).
Every object has an ``extras`` dict (JSON-able: numbers, strings, lists,
dicts; numpy arrays and bytes are converted) for data glTF cannot express.
Add ``scene.warnings`` for lossy choices (e.g. truncated skin influences).

Minimal example::

    from potsherd.scene import Scene, Mesh, Primitive, Material, Node
    s = Scene(name="box")
    mat = s.add_material(Material(name="red", base_color=(1, 0, 0, 1)))
    mesh = s.add_mesh(Mesh(name="box", primitives=[
        Primitive(positions=pos, normals=nrm, uvs=[uv], indices=idx, material=mat)]))
    root = s.add_node(name="root", rotation=Z_UP_TO_Y_UP)    # axis change
    s.add_node(name="box", mesh=mesh, parent=root, translation=(0, 1, 0))

Skinning: ``Skin(joints=[node indices], inverse_bind_matrices=(J,4,4))``;
primitives carry ``joints`` (indices into ``Skin.joints``) and ``weights``
(N, k); the node holding the mesh sets ``skin=``.  Keep that node a ROOT
(glTF ignores its transform; validators warn otherwise).  Rigid hierarchies
(DTS, TRLE) need no skin: put meshes on the bone nodes.

Morph targets: ``Primitive.targets = [MorphTarget(positions=deltas)]``;
``Mesh.weights`` defaults; animate with ``Channel(node, "weights", times,
values (K, n_targets), "STEP")``.

Helpers: quaternions/matrices/axes in :mod:`.xform` (``quat_multiply``,
``quat_from_euler``, ``quat_continuous``, ``mirror_z``, ``mirror_z_quat``,
``mirror_z_matrix``, ``z_up_to_y_up``, ``Z_UP_TO_Y_UP``, ``Z_UP_Y_FORWARD_TO_GLTF``, ``Y_DOWN_TO_Y_UP``,
``trs_to_matrix``, ``decompose_matrix``); geometry in :mod:`.geometry`
(``flip_winding``, ``fan_triangulate``, ``weld`` for splitting on unique
(position, uv) pairs, ``compute_normals``, ``limit_influences``,
``rigid_influences``).

Reading glTF back (importers): :func:`.gltf_read.read_gltf` gives the same
Scene; :mod:`.ops` has world matrices, fixed-rate animation sampling,
world-space triangle sets, rigid parts by dominant joint and vertex welding.
"""
from .model import (CLAMP_TO_EDGE, LINEAR_FILTER, LINEAR_MIPMAP_LINEAR, MIRRORED_REPEAT,
                    NEAREST, REPEAT, Animation, Camera, Channel, Image, Light, Material, Mesh,
                    MorphTarget, Node, Primitive, Scene, Skin, TextureRef)
from .xform import (IDENTITY_QUAT, Y_DOWN_TO_Y_UP, Y_DOWN_Z_FORWARD_TO_GLTF, Z_UP_TO_Y_UP,
                    Z_UP_Y_FORWARD_TO_GLTF,
                    decompose_matrix, mat4_from_gltf, mat4_to_gltf, matrix_to_quat, mirror_z, mirror_z_matrix,
                    mirror_z_quat, quat_conjugate, quat_continuous, quat_from_axis_angle,
                    quat_from_euler, quat_multiply, quat_normalize, quat_slerp, quat_to_matrix,
                    transform_points, trs_to_matrix, z_up_to_y_up)
from .geometry import (compute_normals, fan_triangulate, flip_winding, limit_influences,
                       rigid_influences, weld)
from .gltf_read import read_gltf
from .ops import (frame_times, sample_channel, sample_node_trs, skin_matrices,
                  split_by_dominant_joint, triangle_sets, weld_primitive, world_matrices)

__all__ = [
    "Camera", "Light",
    "Scene", "Node", "Mesh", "Primitive", "MorphTarget", "Material", "TextureRef", "Image",
    "Skin", "Animation", "Channel",
    "NEAREST", "LINEAR_FILTER", "LINEAR_MIPMAP_LINEAR", "REPEAT", "CLAMP_TO_EDGE",
    "MIRRORED_REPEAT",
    "IDENTITY_QUAT", "Y_DOWN_TO_Y_UP", "Y_DOWN_Z_FORWARD_TO_GLTF", "Z_UP_TO_Y_UP",
    "Z_UP_Y_FORWARD_TO_GLTF", "decompose_matrix", "mat4_from_gltf",
    "mat4_to_gltf", "matrix_to_quat", "mirror_z", "mirror_z_matrix", "mirror_z_quat",
    "quat_conjugate", "quat_continuous", "quat_from_axis_angle", "quat_from_euler",
    "quat_multiply", "quat_normalize", "quat_slerp", "quat_to_matrix", "transform_points",
    "trs_to_matrix", "z_up_to_y_up",
    "compute_normals", "fan_triangulate", "flip_winding", "limit_influences",
    "rigid_influences", "weld",
    "read_gltf", "frame_times", "sample_channel", "sample_node_trs", "skin_matrices",
    "split_by_dominant_joint", "triangle_sets", "weld_primitive", "world_matrices",
]
