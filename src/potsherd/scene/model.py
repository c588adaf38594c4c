"""The neutral scene dataclasses (see the package docstring for conventions)."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

#: glTF sampler constants, for :class:`TextureRef`
NEAREST, LINEAR_FILTER = 9728, 9729
LINEAR_MIPMAP_LINEAR = 9987
REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT = 10497, 33071, 33648


def unique_labels(names: list, digits: int = 0) -> list:
    """``names`` with later repeats made ``name.1``, ``name.2``... (empty and
    non-text names stay): the names :meth:`Scene.unique_names` gives; with
    ``digits=3``, ``name.001``..., the ones the glTF writer gives."""
    taken = set(names)
    seen: set = set()
    out = []
    for name in names:
        if not isinstance(name, str) or not name or name not in seen:
            seen.add(name)
            out.append(name)
            continue
        k = 1
        while f"{name}.{k:0{digits}d}" in taken:
            k += 1
        new = f"{name}.{k:0{digits}d}"
        taken.add(new)
        seen.add(new)
        out.append(new)
    return out


@dataclass
class Image:
    """An image, normally PNG bytes (``data``).

    ``uri`` instead of ``data`` references an external file as-is (not
    embedded, not copied).  Use :meth:`from_pil` to encode a Pillow image.
    """

    name: str = ""
    data: Optional[bytes] = None
    mime_type: str = "image/png"
    uri: Optional[str] = None
    extras: dict = field(default_factory=dict)

    @classmethod
    def from_pil(cls, img: Any, name: str = "", **kw: Any) -> "Image":
        import io
        buf = io.BytesIO()
        if img.mode not in ("RGB", "RGBA", "L", "LA"):
            img = img.convert("RGBA")
        img.save(buf, format="PNG")
        return cls(name=name, data=buf.getvalue(), mime_type="image/png", **kw)


@dataclass
class TextureRef:
    """A texture use inside a material: an index into ``Scene.images`` plus sampling."""

    image: int
    texcoord: int = 0                 #: which TEXCOORD_n set the primitive uses
    wrap_s: int = REPEAT
    wrap_t: int = REPEAT
    mag_filter: Optional[int] = None  #: NEAREST (9728) or LINEAR_FILTER (9729); None: viewer default
    min_filter: Optional[int] = None
    extras: dict = field(default_factory=dict)


@dataclass
class Material:
    """A metallic-roughness material reduced to what old game formats express.

    ``metallic`` defaults to 0 (glTF's default of 1 makes diffuse-only game
    assets render black in PBR viewers).  ``unlit`` emits
    ``KHR_materials_unlit`` (pre-lit vertex colours, fullbright textures).
    """

    name: str = ""
    base_color: tuple = (1.0, 1.0, 1.0, 1.0)   #: linear RGBA factor
    base_color_texture: Optional[TextureRef] = None
    alpha_mode: str = "OPAQUE"                 #: "OPAQUE", "MASK" or "BLEND"
    alpha_cutoff: float = 0.5                  #: only written for MASK
    double_sided: bool = False
    metallic: float = 0.0
    roughness: float = 1.0
    emissive: tuple = (0.0, 0.0, 0.0)
    unlit: bool = False
    extras: dict = field(default_factory=dict)
    #: further glTF texture slots, filled by the glTF reader (``scene.gltf_read``)
    #: for importers whose formats have them; normal ``scale`` and occlusion
    #: ``strength`` are in the ref's ``extras``
    normal_texture: Optional[TextureRef] = None
    metallic_roughness_texture: Optional[TextureRef] = None
    occlusion_texture: Optional[TextureRef] = None
    #: ``emissive_texture`` is added to the lit colour, scaled by ``emissive`` (which must then be non-zero)
    emissive_texture: Optional[TextureRef] = None


@dataclass
class MorphTarget:
    """Per-vertex DELTAS (not absolute values) for one morph target."""

    name: str = ""
    positions: Optional[np.ndarray] = None     #: (N, 3) float32 deltas
    normals: Optional[np.ndarray] = None       #: (N, 3) float32 deltas
    extras: dict = field(default_factory=dict)


@dataclass
class Primitive:
    """One draw call: vertex arrays (all with N rows), optional indices, one material.

    - ``positions`` (N, 3) float; ``normals`` (N, 3) (normalised by the writer);
    - ``uvs``: list of (N, 2) arrays, TEXCOORD_0, TEXCOORD_1...; glTF origin top-left;
    - ``colors``: (N, 3) or (N, 4), float in [0, 1] or uint8/uint16 (normalised);
    - ``joints``/``weights``: (N, k) skin influences; k may exceed 4 (the writer
      emits JOINTS_1/WEIGHTS_1...); joints index ``Skin.joints`` (not nodes);
      weights are renormalised by the writer;
    - ``indices``: flat (3*T,) triangle list, counter-clockwise front faces;
      None means non-indexed;
    - ``mode``: 4 triangles (default), 1 lines, 0 points.
    """

    positions: np.ndarray
    indices: Optional[np.ndarray] = None
    normals: Optional[np.ndarray] = None
    uvs: list = field(default_factory=list)
    colors: Optional[np.ndarray] = None
    joints: Optional[np.ndarray] = None
    weights: Optional[np.ndarray] = None
    material: Optional[int] = None             #: index into Scene.materials
    targets: list = field(default_factory=list)  #: list[MorphTarget]
    mode: int = 4
    extras: dict = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return int(len(self.positions))


@dataclass
class Mesh:
    """Primitives drawn together by one node.  ``weights`` are the default
    morph weights (one per target; every primitive must have the same number
    of targets)."""

    name: str = ""
    primitives: list = field(default_factory=list)   #: list[Primitive]
    weights: Optional[list] = None
    target_names: Optional[list] = None              #: written as extras.targetNames
    extras: dict = field(default_factory=dict)


@dataclass
class Node:
    """A scene-graph node.  Local transform is TRS (column vectors:
    ``M = T · R · S``) or, when ``matrix`` is set, that (4, 4) matrix
    (math layout, translation in ``matrix[:3, 3]``).  Nodes that are animated
    must use TRS.  ``children`` are node indices."""

    name: str = ""
    children: list = field(default_factory=list)
    translation: Optional[Any] = None    #: (3,) or None (zero)
    rotation: Optional[Any] = None       #: (4,) quaternion x, y, z, w or None (identity)
    scale: Optional[Any] = None          #: (3,) or None (one)
    matrix: Optional[np.ndarray] = None  #: (4, 4), exclusive with TRS
    mesh: Optional[int] = None
    skin: Optional[int] = None
    extras: dict = field(default_factory=dict)
    camera: Optional[int] = None         #: index into Scene.cameras (looks along -Z)
    light: Optional[int] = None          #: index into Scene.lights (KHR_lights_punctual)


@dataclass
class Camera:
    """A perspective camera (glTF ``cameras``): vertical field of view in
    radians; ``aspect`` None lets the viewer choose; ``zfar`` None is infinite."""

    yfov: float
    znear: float
    zfar: Optional[float] = None
    aspect: Optional[float] = None
    name: str = ""
    extras: dict = field(default_factory=dict)


@dataclass
class Light:
    """A punctual light (``KHR_lights_punctual``): ``type`` "point", "spot" or
    "directional"; linear RGB ``color``; ``range`` None is unlimited; spot cone
    half-angles in radians."""

    type: str
    color: tuple = (1.0, 1.0, 1.0)
    intensity: float = 1.0
    range: Optional[float] = None
    inner_cone: float = 0.0
    outer_cone: float = math.pi / 4
    name: str = ""
    extras: dict = field(default_factory=dict)


@dataclass
class Skin:
    """``joints`` are node indices; ``inverse_bind_matrices`` is (J, 4, 4) in
    math layout (inverse of each joint's world matrix at bind time).
    ``skeleton`` is an optional common-root node index."""

    joints: list
    inverse_bind_matrices: Optional[np.ndarray] = None
    skeleton: Optional[int] = None
    name: str = ""
    extras: dict = field(default_factory=dict)


@dataclass
class Channel:
    """One animated property of one node.

    ``path``: "translation" (K, 3), "rotation" (K, 4) xyzw, "scale" (K, 3) or
    "weights" (K, n_targets).  ``times`` (K,) seconds, strictly increasing
    (the writer drops repeated times, keeping the last).  ``interpolation``:
    "LINEAR" (rotations slerp), "STEP", or "CUBICSPLINE" (values then hold
    in-tangent, value, out-tangent per key: (3K, ...)).
    """

    node: int
    path: str
    times: np.ndarray
    values: np.ndarray
    interpolation: str = "LINEAR"


@dataclass
class Animation:
    name: str = ""
    channels: list = field(default_factory=list)      #: list[Channel]
    extras: dict = field(default_factory=dict)

    @property
    def duration(self) -> float:
        ends = [float(np.max(c.times)) for c in self.channels if len(c.times)]
        return max(ends, default=0.0)


@dataclass
class Scene:
    """A whole exportable scene.  Every cross reference is an index into the
    lists below.  ``roots`` are the top-level node indices (in order).
    ``warnings`` are human-readable notes about lossy choices (shown by
    ``potsherd convert``; also written to ``asset.extras.warnings``)."""

    name: str = ""
    nodes: list = field(default_factory=list)
    roots: list = field(default_factory=list)
    meshes: list = field(default_factory=list)
    materials: list = field(default_factory=list)
    images: list = field(default_factory=list)
    skins: list = field(default_factory=list)
    animations: list = field(default_factory=list)
    extras: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    cameras: list = field(default_factory=list)     #: list[Camera]
    lights: list = field(default_factory=list)      #: list[Light]

    # ---- builders: append and return the new index ------------------------
    def add_node(self, node: Node | None = None, *, parent: int | None = None,
                 **fields: Any) -> int:
        """Append ``node`` (or ``Node(**fields)``) under ``parent`` (None: a root)."""
        if node is None:
            node = Node(**fields)
        elif fields:
            node = dataclasses.replace(node, **fields)
        index = len(self.nodes)
        self.nodes.append(node)
        if parent is None:
            self.roots.append(index)
        else:
            self.nodes[parent].children.append(index)
        return index

    def add_mesh(self, mesh: Mesh) -> int:
        self.meshes.append(mesh)
        return len(self.meshes) - 1

    def add_material(self, material: Material) -> int:
        self.materials.append(material)
        return len(self.materials) - 1

    def add_image(self, image: Image) -> int:
        self.images.append(image)
        return len(self.images) - 1

    def add_skin(self, skin: Skin) -> int:
        self.skins.append(skin)
        return len(self.skins) - 1

    def add_animation(self, animation: Animation) -> int:
        self.animations.append(animation)
        return len(self.animations) - 1

    def add_camera(self, camera: Camera) -> int:
        self.cameras.append(camera)
        return len(self.cameras) - 1

    def add_light(self, light: Light) -> int:
        self.lights.append(light)
        return len(self.lights) - 1

    def unique_names(self, *kinds: str) -> "Scene":
        """Make names unique within each list (``nodes``, ``meshes``, ``skins``,
        ``animations`` by default): later repeats become ``name.1``, ``name.2``... and
        keep the stored name in ``extras.originalName`` so an importer can write it
        back (assimp refuses repeated node names; Blender renames them at random)."""
        for kind in kinds or ("nodes", "meshes", "skins", "animations"):
            items = getattr(self, kind)
            for x, name in zip(items, unique_labels([x.name for x in items])):
                if name != x.name:
                    x.extras.setdefault("originalName", x.name)
                    x.name = name
        return self

    def parents(self) -> list:
        """Parent index of every node (None for roots and unreachable nodes)."""
        out: list = [None] * len(self.nodes)
        for i, n in enumerate(self.nodes):
            for c in n.children:
                out[c] = i
        return out

    def wrap(self, *, name: str = "root", rotation: Any = None, scale: Any = None,
             translation: Any = None, extras: dict | None = None) -> int:
        """Put all current roots under one new root node carrying an axis/unit
        change (e.g. Z-up to Y-up: ``rotation=Z_UP_TO_Y_UP``).  Returns its index.

        Note: glTF viewers warn when a *skinned mesh* node is not a root; keep
        skinned-mesh nodes at the top level (skinning ignores their transform)
        and wrap only the skeleton and rigid parts, or apply the conversion to
        the vertex data instead.
        """
        old = list(self.roots)
        self.roots = []
        idx = self.add_node(Node(name=name, children=old, rotation=rotation, scale=scale,
                                 translation=translation, extras=dict(extras or {})))
        return idx
