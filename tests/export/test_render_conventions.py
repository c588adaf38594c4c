"""Each family's glTF export, rendered headlessly, follows glTF's conventions.

Real corpus models are converted with ``potsherd convert`` and drawn with
``potsherd.export.render`` (the renderer behind ``potsherd render``); the tests
measure, on the renders and on the posed world-space geometry the renderer
evaluates, that a model is

* not inside-out: few back-face (magenta) pixels among the covered pixels of
  the front view;
* upright: +Y is up (head above feet / flame above the base);
* facing +Z where the family has a front (toes, head vs tail);
* textured: the texture contributes real detail to the covered pixels;
* animated: a mid-animation frame differs from frame 0 in many pixels.

Every threshold was calibrated on the real outputs (the measured value is in
the comment beside it) and each measure has a negative control on the same
model (winding flipped, model turned, texture or animation removed) so that
no assertion here is one that cannot fail.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from potsherd.cli import main
from potsherd.export import render as rd
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT
SIZE = 96            # tile size: small keeps the file fast; every measure is a ratio
HEADER = 14          # caption strip above the tiles of a rendered sheet
BACKGROUND = np.array([0.22, 0.24, 0.27])    # the renderer's clear colour
BACK_TINT = np.array([0.5, 0.0, 0.5])        # a back face with black albedo


def corpus_file(family: str, rel: str) -> Path:
    folder = CORPUS / family
    if not folder.is_dir():
        pytest.skip(f"corpus {folder} absent")
    path = folder / rel
    if not path.is_file():
        pytest.skip(f"{path} absent")
    return path


class Model:
    """A converted corpus model: the .glb, the parsed glTF and its node names."""

    def __init__(self, glb: Path) -> None:
        self.glb = glb
        self.gltf = rd.Gltf(str(glb))
        images: dict = {}
        load = self.gltf.image          # decoded once, not once per primitive (TRLE atlases)
        self.gltf.image = lambda i: images[i] if i in images else images.setdefault(i, load(i))
        self.names = [n.get("name") for n in self.gltf.json.get("nodes", [])]

    def triangles(self, animation: int | None = None, t: float = 0.0) -> list:
        return rd.scene_triangles(self.gltf, animation, t)

    def points(self, animation: int | None = None, t: float = 0.0) -> np.ndarray:
        return np.concatenate([tr["pos"].reshape(-1, 3) for tr in self.triangles(animation, t)])

    def world(self, animation: int | None = None, t: float = 0.0) -> list:
        return rd.evaluate(self.gltf, animation, t)[0]

    def node(self, world: list, name: str) -> np.ndarray:
        """World position of the (first) node called ``name``."""
        return world[self.names.index(name)][:3, 3]

    def node_points(self, world: list, name: str) -> np.ndarray:
        """World vertices of the meshes on the nodes called ``name`` (the stored
        name: the writer makes repeated names unique and keeps it in extras)."""
        out = []
        for i, n in enumerate(self.gltf.json["nodes"]):
            stored = (n.get("extras") or {}).get("originalName", n.get("name"))
            if stored == name and "mesh" in n and world[i] is not None:
                for p in self.gltf.json["meshes"][n["mesh"]]["primitives"]:
                    pos = self.gltf.accessor(p["attributes"]["POSITION"]).astype(float)
                    out.append(pos @ world[i][:3, :3].T + world[i][:3, 3])
        assert out, name
        return np.concatenate(out)

    def duration(self, animation: int) -> float:
        clips = self.gltf.json.get("animations", [])
        assert animation < len(clips), f"{self.glb.name} has {len(clips)} animation(s)"
        an = clips[animation]
        return max(float(self.gltf.accessor(s["input"]).max()) for s in an["samplers"])


def convert(src: Path, out_dir: Path, *options: str) -> Model:
    """``potsherd convert SRC OUT.glb [--option k=v]`` (the user's path to glTF)."""
    out = out_dir / (src.stem + "".join("_" + o.split("=")[-1] for o in options) + ".glb")
    args = ["convert", str(src), str(out)]
    for o in options:
        args += ["--option", o]
    assert main(args) == 0
    return Model(out)


# ---- measures -----------------------------------------------------------------------

def front_view(tris: list, size: int = SIZE, view: str = "front (+Z)") -> tuple:
    """Rasterise ``tris`` in one of the renderer's views, framed like ``render`` does."""
    d, up = rd.VIEWS[view]
    basis = rd._basis(d, up)
    q = np.concatenate([t["pos"].reshape(-1, 3) for t in tris]) @ basis.T
    return basis, (q.min(0), q.max(0))


def facing_masks(tris: list, size: int = SIZE) -> tuple:
    """(covered, back) pixel masks of the front view.

    Drawn with black albedo, a front face is exactly black and a back face
    exactly the renderer's magenta tint, so the classification is exact (no
    colour guessing on textured pixels)."""
    basis, bounds = front_view(tris, size)
    # opaque: the renderer now cuts MASK/BLEND fragments by alpha, and black has alpha 0
    black = [dict(t, color=np.zeros_like(t["color"]), tex=None, alpha="OPAQUE") for t in tris]
    img = rd._raster(black, basis, size, bounds)
    covered = ~np.all(np.abs(img - BACKGROUND) < 1e-9, axis=2)
    back = np.all(np.abs(img - BACK_TINT) < 1e-9, axis=2)
    return covered, back


def back_face_fraction(tris: list) -> float:
    covered, back = facing_masks(tris)
    return float(back.sum() / covered.sum())


def texture_detail(tris: list, size: int = SIZE) -> tuple:
    """How much the texture varies the colour of the covered front-facing pixels.

    Returns (textured, untextured): the per-channel standard deviation, over
    those pixels, of the render divided by the same render without textures.
    Shading, vertex colours and material factors cancel in the ratio, so an
    untextured render measures exactly 0 and a textured one measures the spread
    of the texels actually sampled (UVs collapsed to one texel would give 0 too)."""
    basis, bounds = front_view(tris, size)
    covered, back = facing_masks(tris, size)
    plain = rd._raster([dict(t, tex=None) for t in tris], basis, size, bounds)
    lit = covered & ~back & (plain.min(axis=2) > 0.05)

    def spread(img):
        return float((img[lit] / plain[lit]).std(axis=0).mean())
    return spread(rd._raster(tris, basis, size, bounds)), spread(plain)


def animated_fraction(model: Model, animation: int, t: float) -> float:
    """Pixels of the front view that change between frame 0 and time ``t``, as a
    fraction of the pixels the model covers at frame 0 (framed on frame 0, so a
    moving root counts as motion too)."""
    start = model.triangles(animation, 0.0)
    basis, bounds = front_view(start)
    a = rd._raster(start, basis, SIZE, bounds)
    b = rd._raster(model.triangles(animation, t), basis, SIZE, bounds)
    covered = ~np.all(np.abs(a - BACKGROUND) < 1e-9, axis=2)
    changed = np.any(np.abs(a - b) > 8 / 255, axis=2)
    return float(changed.sum() / covered.sum())


def flipped(tris: list) -> list:
    """Negative control: every triangle's winding reversed."""
    return [dict(t, pos=t["pos"][:, ::-1], nrm=None if t["nrm"] is None else t["nrm"][:, ::-1],
                 uv=None if t["uv"] is None else t["uv"][:, ::-1], color=t["color"][:, ::-1])
            for t in tris]


def up_direction(head: np.ndarray, feet: np.ndarray) -> np.ndarray:
    v = head - feet.mean(0)
    return v / np.linalg.norm(v)


def height_fraction(y: float, points: np.ndarray) -> float:
    lo, hi = points[:, 1].min(), points[:, 1].max()
    return float((y - lo) / (hi - lo))


TURN_Y = np.diag([-1.0, 1.0, -1.0])          # negative control: half a turn about +Y
TIP_X = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])   # +Y -> +Z: a Z-up model unfixed


def convert_once(factory, family: str, rel: str, *options: str) -> Model:
    src = corpus_file(family, rel)
    return convert(src, factory.mktemp(family), *options)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Converted lazily, once per module: name -> Model."""
    cache: dict = {}
    specs = {
        "kenta": ("ko", "data/Chr/mob_kenta.n3chr"),
        "deruvisy": ("ko", "data/Chr/mob_deruvisy.n3chr"),
        "intro": ("ko", "data/Intro/intro.n3chr"),
        "lamp": ("ko", "data/Object/obj_ka_01_lamp.n3shape"),
        "larmor": ("dts", "tribesrebirth/entities_vol/larmor.dts", "skin=0"),
        "kenney": ("fbx", "ufbx__maya_kenney_character_7700_binary.fbx"),
        "box": ("fbx", "assimp__embedded_ascii_box.FBX"),
        "baddy": ("tr4wad", "tut1/tut1.WAD", "moveable=BADDY_1", "skin=0"),  # rigid form
    }

    def get(name: str) -> Model:
        if name not in cache:
            family, rel, *options = specs[name]
            cache[name] = convert_once(tmp_path_factory, family, rel, *options)
        return cache[name]
    return get


def check_closed_front(model: Model, limit: float) -> float:
    """Back-face fraction of the rest pose's front view, below ``limit``; with the
    winding reversed nearly every covered pixel turns magenta."""
    tris = model.triangles()
    frac = back_face_fraction(tris)
    assert frac < limit, frac
    assert back_face_fraction(flipped(tris)) > 0.95
    return frac


def check_upright(head: np.ndarray, feet: np.ndarray, points: np.ndarray, *,
                  min_up: float, min_head: float, max_feet: float) -> None:
    """Head above the feet along +Y (``min_up``: cosine to +Y), the head near the top
    and the feet near the bottom of the model's Y range; a model left Z-up fails."""
    up = up_direction(head, feet)
    assert up[1] > min_up, up
    assert height_fraction(head[1], points) > min_head
    assert np.mean([height_fraction(f[1], points) for f in feet]) < max_feet
    assert up_direction(TIP_X @ head, feet @ TIP_X.T)[1] < min_up   # control: Z-up unfixed


def check_textured(model: Model, images: int, minimum: float) -> float:
    """``images`` embedded images, and texture detail above ``minimum``."""
    assert len(model.gltf.json.get("images", [])) == images
    textured, plain = texture_detail(model.triangles())
    assert plain == 0.0                     # control: the same view without textures
    assert textured > minimum, textured
    return textured


def check_animated(model: Model, animation: int, name: str, count: int,
                   minimum: float) -> float:
    """``count`` clips, clip ``animation`` called ``name``; its mid-time frame differs
    from its frame 0 in more than ``minimum`` of the covered pixels."""
    clips = [a.get("name") for a in model.gltf.json.get("animations", [])]
    assert len(clips) == count and clips[animation] == name, clips[:animation + 1]
    mid = model.duration(animation) / 2
    frac = animated_fraction(model, animation, mid)
    assert frac > minimum, frac
    assert animated_fraction(model, animation, 0.0) == 0.0        # control: same frame
    return frac


def toes_forward(foot_points: np.ndarray, ankle: np.ndarray) -> tuple:
    """(forward, backward) reach of a foot mesh along Z from its ankle joint."""
    return (float(foot_points[:, 2].max() - ankle[2]), float(ankle[2] - foot_points[:, 2].min()))


# ---- Knight Online ----------------------------------------------------------------------

MIRROR_Z_OF_X = np.diag([-1.0, 1.0, -1.0])   # negative control: the former Z mirror (X mirror undone)


def test_ko_character_kenta(models):
    """mob_kenta.n3chr: a centaur (skinned, 11 clips, 3 textures).  Under the engine's
    rule (N3 x -> glTF -x) its left side is its left, and its mesh is authored with
    the human front on N3 -Z (the head lies behind the tail along +Z)."""
    m = models("kenta")
    # 0.0032 measured: only the single-sided blade of the weapon shows its back
    check_closed_front(m, 0.03)
    world = m.world()
    pts = m.points()
    head = m.node(world, "head")
    ankles = np.array([m.node(world, n) for n in ("FLankle", "FRankle", "RLankle", "RRankle")])
    check_upright(head, ankles, pts, min_up=0.85, min_head=0.7, max_feet=0.2)
    height = np.ptp(pts[:, 1])
    tail = m.node(world, "tail1")
    # -0.55 of the height measured: this mob's file faces N3 -Z
    assert (head[2] - tail[2]) / height < -0.3
    assert ankles[:2, 2].mean() < ankles[2:, 2].mean() - 1.0       # front legs toward -Z (1.61)
    # chirality: facing -Z, the character's left is glTF -X (Lshoulder -0.48, Rshoulder +0.54)
    left, right = m.node(world, "Lshoulder"), m.node(world, "Rshoulder")
    assert left[0] < -0.3 and right[0] > 0.3
    assert (MIRROR_Z_OF_X @ left)[0] > 0.3     # control: the old Z mirror swaps the sides
    # 0.169 measured (3 DXT textures)
    check_textured(m, 3, 0.08)
    # walk at mid-cycle: 0.997 of the covered pixels change
    check_animated(m, 0, "walk", 11, 0.3)
    names = [a.get("name") for a in m.gltf.json["animations"]]
    assert len(set(names)) == len(names) and "run.1" in names        # unique clip names
    joint_names = [n.get("name") for n in m.gltf.json["nodes"]]
    assert len(set(joint_names)) == len(joint_names) and "end_site.7" in joint_names


def test_ko_character_deruvisy_faces_plus_z(models):
    """mob_deruvisy.n3chr: a hooded mob on a Biped rig; its toes are ahead of its
    feet along +Z and its left limbs on +X, as glTF's front (+Z) wants."""
    m = models("deruvisy")
    assert back_face_fraction(m.triangles()) < 0.01                # 0.0 measured
    world = m.world()
    for side in "LR":
        foot, toe = m.node(world, f"Bip01 {side} Foot"), m.node(world, f"Bip01 {side} Toe0")
        assert toe[2] - foot[2] > 0.15                              # 0.208, 0.208 measured
        assert (TURN_Y @ toe)[2] - (TURN_Y @ foot)[2] < -0.15       # control: half a turn
    # facing +Z in a right-handed frame, the left is +X: thighs at +0.127 / -0.06
    assert m.node(world, "Bip01 L Thigh")[0] > m.node(world, "Bip01 R Thigh")[0] + 0.1
    assert m.node(world, "Bip01 L Hand")[0] > 0.3                   # 0.398 measured
    assert (MIRROR_Z_OF_X @ m.node(world, "Bip01 L Hand"))[0] < -0.3   # control: old mirror
    check_textured(m, 1, 0.1)                                        # 0.198 measured


def test_ko_intro_monster_faces_minus_z_with_an_open_back(models):
    """Intro/intro.n3chr, the login-screen monster, was authored facing N3 -Z: the
    client's login camera stands at z = -1.63 looking toward +Z.  It has no back,
    so glTF's front view (+Z) sees the inside of its chest; the export keeps the
    file's frame (docs/formats/knight-online.md, Axes)."""
    m = models("intro")
    tris = m.triangles()
    turned = [dict(t, pos=t["pos"] @ TURN_Y.T, nrm=None if t["nrm"] is None else t["nrm"] @ TURN_Y.T)
              for t in tris]
    assert back_face_fraction(tris) > 0.2                          # 0.277 measured: the open back
    assert back_face_fraction(turned) < 0.01                       # 0.0009 from -Z: its closed front
    world = m.world()
    eyes = np.concatenate([m.node_points(world, n) for n in ("Leye", "Reye")])
    teeth, hair = m.node_points(world, "upTeeth"), m.node_points(world, "hair01")
    # eyes -0.239, upper teeth -0.257, the hair behind the head +0.139
    assert eyes[:, 2].mean() < hair[:, 2].mean() - 0.3
    assert teeth[:, 2].mean() < hair[:, 2].mean() - 0.3
    # facing -Z, its left eye is on glTF -X (-0.059 vs +0.038), as mob_kenta's left shoulder
    left, right = m.node_points(world, "Leye").mean(0), m.node_points(world, "Reye").mean(0)
    assert left[0] < right[0] - 0.05
    assert (MIRROR_Z_OF_X @ left)[0] > (MIRROR_Z_OF_X @ right)[0]   # control: the old Z mirror


def test_ko_shape_lamp(models):
    """obj_ka_01_lamp.n3shape: a textured street lamp (body, horns, a flame billboard)."""
    m = models("lamp")
    # the flame is a Y billboard (renderFlags 0x8): it turns to the camera in game, so it
    # is exported double-sided and left out of the winding measure
    tris = m.triangles()
    double = [t for t in tris if t["double"]]
    assert len(double) == 1 and double[0]["pos"].shape[0] == 2   # the flame card
    single = [t for t in tris if not t["double"]]
    assert back_face_fraction(single) < 0.03                      # 0.0103 measured (horn tips)
    assert back_face_fraction(flipped(single)) > 0.95             # control
    world = m.world()
    pts = m.points()
    flame = m.node_points(world, "object\\obj_ka_01_lamp_fire.n3pmesh").mean(0)
    body = m.node_points(world, "object\\obj_ka_01_lamp_body.n3pmesh").mean(0)
    # upright: a post 4.79 tall on a 1.83 x 1.06 footprint, the flame on top
    ext = np.ptp(pts, axis=0)
    assert ext[1] > 2 * max(ext[0], ext[2]), ext
    assert height_fraction(flame[1], pts) > 0.8 > height_fraction(body[1], pts)
    assert (TIP_X @ flame)[1] < (TIP_X @ body)[1] + 0.5 * ext[1]   # control: tipped over
    # facing: a lamp post has no front; nothing to measure
    check_textured(m, 3, 0.1)                                        # 0.243 measured
    assert not m.gltf.json.get("animations")                      # a static shape


# ---- Darkstar ------------------------------------------------------------------------------

def test_darkstar_larmor(models):
    """larmor.dts: Tribes light armor (rigid node hierarchy, exported with skin=0 so
    meshes stay on their nodes; 12 sequences, the empty "damage" kept as a clip; no
    texture in the corpus, so the export is untextured and texture is not checked)."""
    m = models("larmor")
    check_closed_front(m, 0.01)                                   # 0.0 measured
    world = m.world()
    pts = m.points()
    head = m.node(world, "head75")
    feet = np.array([m.node(world, "lfoot75"), m.node(world, "rfoot75")])
    # measured: up (-0.13, 0.99, 0.05), head at 0.92 of the height, feet at 0.08
    check_upright(head, feet, pts, min_up=0.9, min_head=0.8, max_feet=0.15)
    # front: the feet reach forward (+Z) from the ankle much further than back:
    # left 0.246 vs 0.070, right 0.136 vs 0.067
    # (the object nodes share their node's name: unique naming made them ".1" and kept
    # the stored name, which node_points matches)
    for foot, mesh in (("lfoot75", "submesh_lfoot 75"), ("rfoot75", "submesh_rfoot 75")):
        ankle = m.node(world, foot)
        points = m.node_points(world, mesh)
        fwd, back = toes_forward(points, ankle)
        assert fwd > 1.5 * back, (foot, fwd, back)
        fwd, back = toes_forward(points @ TURN_Y.T, TURN_Y @ ankle)
        assert not fwd > 1.5 * back                               # control: turned round
    # and the run sequence carries the body forward: the root travels from z -1.78 to
    # +1.66 (3.44 along +Z, none along X) over the 0.667 s cycle
    travel = m.node(m.world(2, m.duration(2)), "mesh 75") - m.node(m.world(2, 0.0), "mesh 75")
    assert travel[2] > 2.0 and abs(travel[0]) < 0.1, travel
    check_animated(m, 2, "run", 12, 0.3)                          # 0.914 measured


# ---- FBX -------------------------------------------------------------------------------------

def test_fbx_skinned_character_kenney(models):
    """maya_kenney_character: a skinned Maya character with a run cycle, untextured."""
    m = models("kenney")
    check_closed_front(m, 0.01)                                   # 0.0 measured
    world = m.world()
    pts = m.points()
    head = m.node(world, "Head")
    feet = np.array([m.node(world, "LeftFoot"), m.node(world, "RightFoot")])
    # measured: up (-0.01, 0.97, 0.24) (a runner leans forward), the Head joint at 0.70
    # of the height (the big head's top is far above it), feet at 0.12
    check_upright(head, feet, pts, min_up=0.9, min_head=0.6, max_feet=0.2)
    # front: over the run cycle the toes point forward (+Z) from the feet on average,
    # and the head is ahead of the hips at every sample (a forward lean)
    reach, lean = [], []
    for t in np.linspace(0, m.duration(0), 8, endpoint=False):
        w = m.world(0, t)
        reach.append(sum(m.node(w, s + "Toes")[2] - m.node(w, s + "Foot")[2]
                         for s in ("Left", "Right")))
        lean.append(m.node(w, "Head")[2] - m.node(w, "Hips")[2])
    assert np.mean(reach) > 0.05, reach
    assert min(lean) > 0.2, lean
    check_animated(m, 0, "Take 001", 1, 0.3)                      # 0.593 measured


def test_fbx_textured_box(models):
    """embedded_ascii/box.FBX: a cube with an embedded texture (a digit "1" over a
    colour gradient) on every face, readable from outside."""
    m = models("box")
    assert check_closed_front(m, 1e-9) == 0.0                     # closed cube: exactly 0
    tris = m.triangles()
    check_textured(m, 1, 0.15)                                       # 0.301 measured
    # the front face shows the texture as drawn: not flipped in V (the FBX/glTF
    # V-origin convention) nor mirrored. Compare the shading-free front face with the
    # texture and its flips at 24x24: correlation 0.991 as drawn, 0.012 V-flipped,
    # 0.334 mirrored, -0.448 turned
    basis, bounds = front_view(tris)
    covered, _ = facing_masks(tris)
    img = rd._raster(tris, basis, SIZE, bounds)
    plain = rd._raster([dict(t, tex=None) for t in tris], basis, SIZE, bounds)
    ys, xs = np.nonzero(covered)
    face = (img / np.maximum(plain, 1e-6))[ys.min():ys.max() + 1, xs.min():xs.max() + 1]

    def small(a):
        im = Image.fromarray((np.clip(a, 0, 1) * 255).astype(np.uint8))
        return np.asarray(im.resize((24, 24), Image.BILINEAR), float).ravel()
    tex = m.gltf.image(0)[..., :3]
    corr = {k: float(np.corrcoef(small(face), small(v))[0, 1])
            for k, v in {"as drawn": tex, "v-flipped": tex[::-1],
                         "mirrored": tex[:, ::-1]}.items()}
    assert corr["as drawn"] > 0.9, corr
    assert corr["v-flipped"] < 0.5 and corr["mirrored"] < 0.6, corr


# ---- TRLE ------------------------------------------------------------------------------------

def test_trle_moveable_baddy(models):
    """tut1.WAD moveable BADDY_1: a textured ninja with 71 animations (8 without
    keyframes, kept as one rest-pose key), in the rigid node form (``skin=0``)."""
    m = models("baddy")
    check_closed_front(m, 0.01)                                   # 0.0 measured
    # rest pose (no animation): TR4 meshes have no joint names; the mesh tree says which
    # is which: BADDY_1_0 (hips, the root) has two 3-mesh chains, the legs ending in the
    # feet _3 and _6, and the torso _8 whose chain _23.._26 is the head and its headband
    world = m.world()
    pts = m.points()
    head = m.node(world, "BADDY_1_23")
    feet = np.array([m.node(world, "BADDY_1_3"), m.node(world, "BADDY_1_6")])
    # measured: up (-0.01, 1.00, -0.02), head at 0.90 of the height, feet at 0.06
    check_upright(head, feet, pts, min_up=0.9, min_head=0.8, max_feet=0.15)
    # front: each foot reaches 0.20 forward (+Z) of its ankle and 0.05 back
    for foot in ("BADDY_1_3", "BADDY_1_6"):
        ankle = m.node(world, foot)
        points = m.node_points(world, foot)
        fwd, back = toes_forward(points, ankle)
        assert fwd > 2 * back, (foot, fwd, back)
        fwd, back = toes_forward(points @ TURN_Y.T, TURN_Y @ ankle)
        assert not fwd > 2 * back                                 # control: turned round
    check_textured(m, 1, 0.08)                                    # 0.163 measured
    check_animated(m, 0, "anim000", 71, 0.3)                      # 1.04 measured
