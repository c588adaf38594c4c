"""Importer crashes found by test_import_unusual.py, each pinned by a small scene:
every importable codec refuses them cleanly or imports them sensibly."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from potsherd import registry
from potsherd.core.errors import FormatError
from potsherd.export.gltf import glb_bytes, scene_to_gltf
from potsherd.scene import Animation, Channel, Material, Mesh, Primitive, Scene, Skin
from potsherd.scene.finite import NonFiniteError
from potsherd.scene.geometry import weld
from potsherd.scene.gltf_read import read_gltf

from import_check import TARGETS, check_import

MESH_TARGETS = ("n3pmesh", "n3cskins", "n3cpart", "n3cplug", "dts", "tr4wad", "trwad", "fbx",
                "fbx-ascii")


def codec(name: str):
    return next(c for c in registry.codecs() if c.name == name)


def triangle_scene(**node) -> Scene:
    s = Scene(name="tri")
    s.add_material(Material(name="red", base_color=(1.0, 0.0, 0.0, 1.0)))
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    s.add_mesh(Mesh(name="tri", primitives=[Primitive(
        positions=pos, normals=np.tile(np.float32([0, 0, 1]), (3, 1)),
        indices=np.array([0, 1, 2], np.uint32), material=0)]))
    s.add_node(name="tri", mesh=0, **node)
    return s


def poisoned_glb(scene: Scene, attribute: str, value: float) -> Scene:
    """The scene through a .glb whose first ``attribute`` float is ``value`` (as
    a tool that does not check would write it)."""
    gl, b = scene_to_gltf(scene, True)
    b = bytearray(b)
    acc = gl["accessors"][gl["meshes"][0]["primitives"][0]["attributes"][attribute]]
    view = gl["bufferViews"][acc["bufferView"]]
    at = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    b[at:at + 4] = struct.pack("<f", value)
    return read_gltf(glb_bytes(gl, bytes(b)))


# ---- NaN / inf --------------------------------------------------------------------------

@pytest.mark.parametrize("target", MESH_TARGETS)
@pytest.mark.parametrize("attribute,value", [("POSITION", float("nan")),
                                             ("POSITION", float("inf")),
                                             ("NORMAL", float("-inf"))])
def test_non_finite_vertex_data_is_refused_by_name(target, attribute, value):
    scene = poisoned_glb(triangle_scene(), attribute, value)
    with pytest.raises(NonFiniteError, match=f"mesh 'tri' primitive 0: {attribute} of vertex 0 is non-finite"):
        codec(target).from_scene(scene, out_name="out" + codec(target).extensions[0])


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "dml"])   # (materials only)
def test_non_finite_node_transform_is_refused_by_name(target):
    scene = triangle_scene(translation=(0.0, float("nan"), 0.0))
    with pytest.raises(NonFiniteError, match=r"node 'tri': translation is non-finite \(nan\)"):
        codec(target).from_scene(scene, out_name="out" + codec(target).extensions[0])


def test_finite_scene_passes_the_check(tmp_path):
    for target in MESH_TARGETS:
        assert check_import(target, triangle_scene(), tmp_path) == "ok"


def test_non_finite_is_a_user_facing_error():
    assert issubclass(NonFiniteError, FormatError)


# ---- degenerate geometry ------------------------------------------------------------------

def degenerate_scene() -> Scene:
    """Only a triangle with a repeated corner: nothing is left to draw once it is dropped."""
    s = triangle_scene()
    s.meshes[0].primitives[0].indices = np.array([0, 0, 1], np.uint32)
    return s


@pytest.mark.parametrize("target", MESH_TARGETS)
def test_only_degenerate_triangles(target, tmp_path):
    """n3cskins/n3cpart once failed welding the empty face list (numpy reshape of
    size 0); the KO formats now say there is nothing to write."""
    result = check_import(target, degenerate_scene(), tmp_path)
    assert result == ("refused" if target.startswith("n3") else "ok")


def test_character_part_of_only_degenerate_triangles_is_left_out(tmp_path):
    """...and an .n3chr wrote that part empty, a character its own export refused
    ("none of its parts has geometry")."""
    s = rig_scene("none")
    s.add_mesh(Mesh(name="flat", primitives=[Primitive(
        positions=np.zeros((3, 3), np.float32), indices=np.array([0, 1, 2], np.uint32),
        joints=np.zeros((3, 4), np.uint16), weights=np.tile(np.float32([1, 0, 0, 0]), (3, 1)))]))
    s.add_node(name="flat", mesh=2, skin=0)
    files = codec("n3chr").from_scene(s, out_name="hero.n3chr")
    assert [n for n, _ in files if "flat" in n] == []
    assert any("part flat: 1 degenerate triangles dropped; none is left" in w for w in s.warnings)
    assert check_import("n3chr", s, tmp_path) == "ok"


def test_weld_of_nothing():
    first, remap = weld(np.zeros((0, 3), np.float32), np.zeros((0, 2)))
    assert first.shape == remap.shape == (0,)


# ---- huge coordinates --------------------------------------------------------------------

@pytest.mark.parametrize("target", ["n3pmesh", "n3cplug", "dts"])
def test_huge_but_finite_coordinates(target, tmp_path):
    """Bounding radii of a model 1e30 across were squared in float32 (overflow, an inf
    radius or LOD distance in the file)."""
    s = triangle_scene()
    s.meshes[0].primitives[0].positions = np.array(
        [[-3e30, 0, 0], [3e30, 1e30, 0], [0, -2e30, 1e30], [1e30, 1e30, 1e30]], np.float32)
    s.meshes[0].primitives[0].indices = np.array([0, 1, 2, 1, 3, 2], np.uint32)
    s.meshes[0].primitives[0].normals = None
    assert check_import(target, s, tmp_path) == "ok"


# ---- zero scale (a part hidden by scaling it away) -----------------------------------------

def rig_scene(hidden: str) -> Scene:
    """A two-root skeleton (hip, then a second root "prop"), a skinned box on the hip
    and a rigid "sword" under it; ``hidden`` names the node scaled to 0 on one axis."""
    s = Scene(name="rig")
    s.add_material(Material(name="grey"))
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    tris = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], np.uint32)
    box = s.add_mesh(Mesh(name="box", primitives=[Primitive(
        positions=pos, indices=tris, material=0, joints=np.zeros((4, 4), np.uint16),
        weights=np.tile(np.float32([1, 0, 0, 0]), (4, 1)))]))
    sword = s.add_mesh(Mesh(name="sword", primitives=[Primitive(
        positions=pos * 2, indices=tris, material=0)]))
    flat = {"scale": (1.0, 0.0, 1.0)}
    hip = s.add_node(name="hip", translation=(0.0, 1.0, 0.0), **(flat if hidden == "hip" else {}))
    prop = s.add_node(name="prop", translation=(1.0, 0.0, 0.0))
    s.add_node(name="sword", parent=hip, mesh=sword, **(flat if hidden == "sword" else {}))
    skin = s.add_skin(Skin(joints=[hip, prop], name="rig", inverse_bind_matrices=np.stack([
        np.linalg.inv(np.array([[1, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1.0]])),
        np.linalg.inv(np.array([[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]))])))
    s.add_node(name="body", mesh=box, skin=skin)
    return s


@pytest.mark.parametrize("target", ["n3chr", "n3joint", "n3cplug", "dts", "tr4wad", "fbx"])
@pytest.mark.parametrize("hidden", ["hip", "sword"])
def test_zero_scale_nodes_import(target, hidden, tmp_path):
    """np.linalg.inv of a zero-scaled node's world matrix was a LinAlgError (an
    internal error) in the plug, skeleton and Darkstar importers, and in the
    export of the .n3joint made of it."""
    scene = rig_scene(hidden)
    if target == "n3cplug":
        scene.nodes[3].mesh = scene.nodes[3].skin = None          # the sword alone
    assert check_import(target, scene, tmp_path) == "ok"


def test_inverse_affine_flattens_only_the_collapsed_axis():
    from potsherd.scene.xform import inverse_affine, trs_to_matrix
    m = trs_to_matrix((1.0, 2.0, 3.0), (0.0, 0.0, 0.38268343, 0.92387953), (2.0, 0.0, 1.0))
    inv, flat = inverse_affine(np.stack([np.eye(4), m]))
    assert flat.tolist() == [False, True]
    assert np.allclose(inv[1] @ m, np.diag([1.0, 0.0, 1.0, 1.0]))
    assert np.allclose(m @ inv[1] @ m, m)


def test_inverse_affine_of_a_matrix_whose_bottom_row_is_not_affine():
    """A glTF matrix's bottom row should be 0 0 0 1; a hostile one is not, and the
    4 x 4 can then be singular while its 3 x 3 part is not: np.linalg.inv raised
    LinAlgError (fuzzing the import: 'internal error in fbx from_scene: Singular
    matrix', and the same in .n3joint, .n3chr...).  The affine inverse is kept."""
    from potsherd.scene.xform import inverse_affine, trs_to_matrix
    m = trs_to_matrix((1.0, 2.0, 3.0), (0.0, 0.0, 0.38268343, 0.92387953), (2.0, 1.0, 1.0))
    bad = m.copy()
    bad[3] = 0.0                                        # singular as a 4 x 4
    inv, flat = inverse_affine(np.stack([m, bad]))
    assert flat.tolist() == [False, False]
    assert np.allclose(inv[1], np.linalg.inv(m)) and np.array_equal(inv[0], np.linalg.inv(m))


@pytest.mark.parametrize("target", ["fbx", "fbx-ascii", "n3chr", "n3joint", "dts", "trwad"])
def test_bind_matrix_with_a_bottom_row_that_is_not_affine(target, tmp_path):
    scene = rig_scene(None)
    scene.skins[0].inverse_bind_matrices[0][3] = 0.0
    assert check_import(target, scene, tmp_path) == "ok"


@pytest.mark.parametrize("target", ["fbx", "fbx-ascii", "n3chr", "dts", "trwad"])
def test_collapsed_bind_matrix(target, tmp_path):
    """A joint scaled to 0 at bind time has no inverse bind matrix; a tool writes a
    singular one (here the pseudo-inverse).  FBX inverted it back (LinAlgError)."""
    scene = rig_scene("hip")
    flat = np.diag([1.0, 0.0, 1.0, 1.0])
    flat[1, 3] = 1.0                                    # hip: at y = 1, scale (1, 0, 1)
    scene.skins[0].inverse_bind_matrices[0] = np.linalg.pinv(flat)
    assert check_import(target, scene, tmp_path) == "ok"


# ---- names ------------------------------------------------------------------------------

def test_character_parts_and_plugs_of_one_name_are_separate_files(tmp_path):
    """Two skinned meshes named "body" (and a plug of that name) were all written as
    hero_body.*: the character referenced one part twice and lost the other mesh."""
    s = rig_scene("none")
    s.add_material(Material(name="blue"))
    other = s.add_mesh(Mesh(name="body", primitives=[Primitive(
        positions=s.meshes[0].primitives[0].positions + 5, indices=s.meshes[0].primitives[0].indices,
        material=1, joints=s.meshes[0].primitives[0].joints,
        weights=s.meshes[0].primitives[0].weights)]))
    s.add_node(name="Body", mesh=other, skin=0)
    s.nodes[2].name = "body"                                # the plug too
    files = codec("n3chr").from_scene(s, out_name="hero.n3chr")
    names = [n for n, _ in files]
    assert len({n.lower() for n in names}) == len(names)
    chr_root = files[0][1].root
    refs = [bytes(r).decode() for r in list(chr_root["parts"]) + list(chr_root["plugs"])]
    assert refs == ["item\\hero_body.n3cpart", "item\\hero_Body_2.n3cpart",
                    "item\\hero_body_3.n3cplug"]
    assert check_import("n3chr", s, tmp_path) == "ok"


def test_long_node_names_make_file_names_a_file_system_holds(tmp_path):
    s = rig_scene("none")
    s.nodes[3].name = "x" * 300
    files = codec("n3chr").from_scene(s, out_name="hero.n3chr")
    assert max(len(n) for n, _ in files) < 100
    assert check_import("n3chr", s, tmp_path) == "ok"


# ---- animation timing --------------------------------------------------------------------

def clip_scene(times, interpolation: str = "LINEAR") -> Scene:
    """The rig with its hip turning about Y at ``times`` (keys before 0 s allowed)."""
    s = rig_scene("none")
    times = np.asarray(times, np.float64)
    angles = np.linspace(0.0, 1.5, len(times))
    q = np.stack([np.zeros_like(angles), np.sin(angles / 2), np.zeros_like(angles),
                  np.cos(angles / 2)], axis=1)
    if interpolation == "CUBICSPLINE":
        q = np.stack([np.zeros_like(q), q, np.zeros_like(q)], axis=1).reshape(-1, 4)
    s.animations.append(Animation(name="turn", channels=[
        Channel(0, "rotation", times, q, interpolation),
        Channel(2, "translation", times[:1], np.zeros((1, 3)) if interpolation != "CUBICSPLINE"
                else np.zeros((3, 3)), interpolation)]))
    return s


@pytest.mark.parametrize("target", ["n3chr", "n3joint", "n3anim", "dts", "trwad", "fbx",
                                    "fbx-ascii"])
@pytest.mark.parametrize("times,interpolation", [([-1.0, -0.5, 0.5, 1.0], "LINEAR"),
                                                 ([-2.0, -1.0], "STEP"),
                                                 ([-0.5, 0.25, 1.0], "CUBICSPLINE"),
                                                 ([0.0], "LINEAR"), ([0.25], "STEP")])
def test_keys_before_zero_single_keys_and_zero_length_clips(target, times, interpolation,
                                                             tmp_path):
    """.dts wrote keys before 0 s as negative keyframe positions and FBX as negative
    key times; their export was then refused ("negative key time").  Keys before 0
    now fold into a key at 0 (glTF clips start there), one warning saying so."""
    s = clip_scene(times, interpolation)
    assert check_import(target, s, tmp_path) == "ok"
    assert (sum("keys before 0 s" in w for w in s.warnings) == 1) == (times[0] < 0)


def test_folding_at_zero_keeps_the_motion_from_zero_on():
    from potsherd.scene.ops import from_time_zero, sample_channel
    for interpolation in ("LINEAR", "STEP", "CUBICSPLINE"):
        s = clip_scene([-1.0, -0.25, 0.5, 2.0], interpolation)
        folded = from_time_zero(s)
        assert folded is not s and folded.nodes is s.nodes and folded.warnings is s.warnings
        before, after = s.animations[0].channels[0], folded.animations[0].channels[0]
        assert after.times.tolist() == [0.0, 0.5, 2.0]
        at = np.linspace(0.0, 2.5, 31)
        assert np.allclose(sample_channel(before, at), sample_channel(after, at), atol=1e-12)
    still = clip_scene([0.0, 1.0])
    assert from_time_zero(still) is still


@pytest.mark.parametrize("target", ["tr4wad", "trwad"])
def test_far_root_bone_fits_the_tr_range_or_is_refused_by_name(target, tmp_path):
    """A root bone 1e30 m away with a mesh of lines only (no vertex to fit the unit
    to) overflowed the 16-bit keyframe offset: a numpy cast warning, then a wrapped
    'OverflowError: Python integer ... out of bounds for int16'."""
    s = clip_scene([0.0, 1.0])
    s.nodes[0].translation = (1e30, 0.0, 0.0)
    for p in s.meshes[0].primitives + s.meshes[1].primitives:
        p.mode, p.indices = 1, p.indices[:4]
    assert check_import(target, s, tmp_path) == "ok"              # the unit fits the bone
    assert any("imported at" in w for w in s.warnings)
    flung = triangle_scene()                  # an animation that throws the model 1e30 m
    flung.animations.append(Animation(name="fling", channels=[Channel(
        0, "translation", np.array([0.0, 1.0]), np.array([[0.0, 0, 0], [1e30, 0, 0]]))]))
    with pytest.raises(FormatError, match="moves the root bone .* pass a larger unit_scale"):
        codec(target).from_scene(flung)


def test_character_with_a_line_mesh_under_a_joint(tmp_path):
    """A helper mesh of lines under a bone made the whole .n3chr a refusal ("no
    triangles to make plug sword from"); it is skipped (triangles only), as in a part."""
    s = rig_scene("none")
    s.meshes[1].primitives[0].mode = 1
    s.meshes[1].primitives[0].indices = s.meshes[1].primitives[0].indices[:4]
    files = codec("n3chr").from_scene(s, out_name="hero.n3chr")
    assert not any("sword" in n for n, _ in files)
    assert any("point/line primitive(s) skipped" in w for w in s.warnings)
    assert check_import("n3chr", s, tmp_path) == "ok"


# ---- several glTF scenes -----------------------------------------------------------------

def two_scene_glb(scene: Scene, shown: list) -> Scene:
    """``scene`` through a .glb of two glTF scenes, the second (``shown`` roots) the
    one read; the first scene's nodes stay in the node list, no root reaching them."""
    gl, b = scene_to_gltf(scene, True)
    others = [r for r in gl["scenes"][0]["nodes"] if r not in shown]
    gl["scenes"] = [{"nodes": others}, {"nodes": shown}]
    gl["scene"] = 1
    return read_gltf(glb_bytes(gl, b))


@pytest.mark.parametrize("target", ["tr4wad", "trwad"])
def test_joints_no_root_reaches_get_their_world_matrices(target, tmp_path, monkeypatch):
    """The TR4 animation sampler filled world matrices from the roots down into
    np.empty_like: joints of a skin in the other glTF scene kept uninitialised
    memory (garbage poses; a NaN there was a numpy cast warning and a wrapped
    OverflowError).  Uninitialised memory is made NaN here so that shows."""
    s = clip_scene([0.0, 1.0])
    s.add_node(name="crate", mesh=1)                  # what the shown scene draws
    s = two_scene_glb(s, shown=[4, 1])
    real = np.empty_like
    monkeypatch.setattr(np, "empty_like", lambda a, *args, **kw: real(a, *args, **kw) * np.nan
                        if np.asarray(a).dtype.kind == "f" else real(a, *args, **kw))
    assert check_import(target, s, tmp_path) == "ok"


def test_plug_geometry_past_float32_in_its_frame_is_refused_by_name():
    """A plug is in its first mesh node's frame: one scaled by 1e-5 puts another
    node's vertices 1e37 away past float32 there; the cast overflowed to inf (a
    numpy warning, an inf vertex)."""
    s = triangle_scene(scale=(1e-5, 1e-5, 1e-5))
    s.add_mesh(Mesh(name="far", primitives=[Primitive(
        positions=np.float32([[0, 0, 0], [1e37, 0, 0], [0, 3e37, 0]]),
        indices=np.array([0, 1, 2], np.uint32))]))
    s.add_node(name="far", mesh=1)
    with pytest.raises(FormatError, match="n3cplug: 2 vertices have non-finite positions "
                                          r"\(or beyond float32's range\)"):
        codec("n3cplug").from_scene(s, out_name="sword.n3cplug")


def test_places_float32_cannot_hold_are_refused_by_name():
    """Near float32's largest value, a joint relative to its N3 parent (here 6e38 m
    from it) and a shape's bounds overflowed float32 on the cast (inf in the file)."""
    s = clip_scene([0.0, 1.0])
    s.nodes[0].translation = (-3e38, 0.0, 0.0)
    s.nodes[1].translation = (3e38, 0.0, 0.0)
    for target in ("n3joint", "n3chr"):
        with pytest.raises(FormatError, match="joint 'prop' is placed or scaled past float32"):
            codec(target).from_scene(s, out_name="hero" + codec(target).extensions[0])
    far = triangle_scene()
    far.meshes[0].primitives[0].positions = np.float32([[-3e38, 0, 0], [3e38, 0, 0], [0, 1, 0]])
    with pytest.raises(FormatError, match=r"object 'tri': non-finite positions \(or past 1e38\)"):
        codec("dts").from_scene(far)


# ---- the command line on the worst of them --------------------------------------------------

def _negative_time_glb() -> bytes:
    """The clip's key times moved 1 s earlier in the file (a tool that does not
    check; potsherd's writer refuses to)."""
    gl, b = scene_to_gltf(clip_scene([0.0, 0.5, 1.5]), True)
    b = bytearray(b)
    for ch in gl["animations"][0]["channels"]:
        acc = gl["accessors"][gl["animations"][0]["samplers"][ch["sampler"]]["input"]]
        view = gl["bufferViews"][acc["bufferView"]]
        at = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        t = np.frombuffer(bytes(b[at:at + 4 * acc["count"]]), "<f4") - 1.0
        b[at:at + 4 * acc["count"]] = t.astype("<f4").tobytes()
        acc["min"], acc["max"] = [float(t.min())], [float(t.max())]
    return glb_bytes(gl, bytes(b))


def _worst_cases() -> dict:
    def glb(scene: Scene) -> bytes:
        return glb_bytes(*scene_to_gltf(scene, True))
    named = rig_scene("none")
    named.nodes[2].name = "body"
    gl, b = scene_to_gltf(rig_scene("none"), True)
    gl["scenes"] = [{"nodes": [0, 1]}, {"nodes": [3]}]
    gl["scene"] = 1
    nan = bytearray(glb(triangle_scene()))
    at = nan.index(struct.pack("<3f", 1.0, 0.0, 0.0))          # vertex 1 of the triangle
    nan[at:at + 4] = struct.pack("<f", float("nan"))
    return {"nan": bytes(nan), "zero_scale": glb(rig_scene("hip")), "names": glb(named),
            "degenerate": glb(degenerate_scene()), "two_scenes": glb_bytes(gl, b),
            "negative_times": _negative_time_glb()}


@pytest.mark.parametrize("ext", [".n3chr", ".n3cplug", ".n3cpart", ".n3pmesh", ".n3joint",
                                 ".n3anim", ".dts", ".dml", ".wad", ".trwad", ".fbx"])
def test_cli_convert_of_the_worst_cases(ext, tmp_path, capsys):
    from potsherd.cli import main
    for case, data in _worst_cases().items():
        src = tmp_path / f"{case}.glb"
        src.write_bytes(data)
        rc = main(["convert", str(src), str(tmp_path / f"{case}{ext}")])
        err = capsys.readouterr().err
        assert rc in (0, 1), (case, rc, err)
        assert "internal error" not in err and "Traceback" not in err, (case, err)
        assert rc == 0 or "potsherd: error: " in err, (case, err)


@pytest.mark.parametrize("target", TARGETS)
def test_a_gltf_without_nodes_is_refused_by_name(target, tmp_path):
    """A glTF of nothing but its asset (the Khronos validator's own test files
    hold many): n3shape and n3cplug crashed stacking zero node matrices.  An
    FBX may be empty; every game format needs something to hold."""
    scene = read_gltf(b'{"asset": {"version": "2.0"}, "meshes": []}')
    assert scene.nodes == []
    expected = "ok" if target.startswith("fbx") else "refused"
    assert check_import(target, scene, tmp_path) == expected


def big_and_small_triangle(span: float, with_small: bool = True) -> Scene:
    """One triangle ``span`` across and, near its middle, one 1e-4 of it."""
    s = Scene(name="detail")
    s.add_material(Material(name="grey"))
    pos = [[0, 0, 0], [span, 0, 0], [0, span, 0]]
    if with_small:
        d = span * 1e-4
        pos += [[span / 3, span / 3, 0], [span / 3 + d, span / 3, 0], [span / 3, span / 3 + d, 0]]
    pos = np.array(pos, np.float32)
    s.add_mesh(Mesh(name="detail", primitives=[Primitive(
        positions=pos, normals=np.tile(np.float32([0, 0, 1]), (len(pos), 1)),
        indices=np.arange(len(pos), dtype=np.uint32), material=0)]))
    s.add_node(name="detail", mesh=0)
    return s


@pytest.mark.parametrize("target, span, says", [
    ("dts", 100.0, "1 of 2 triangles flatten to lines in the format's 8-bit vertices"),
    ("trwad", 1.0, "1 of 2 triangles flatten to lines at whole TR4 units"),
])
def test_detail_below_the_formats_precision_is_named(target, span, says, tmp_path):
    """3Space stores a mesh's vertices in 255 steps across it, TR4 in whole units:
    a triangle finer than that comes back as a line, and the import says how many."""
    from potsherd.importer import scene_to_files
    c = codec(target)
    lost = scene_to_files(big_and_small_triangle(span), tmp_path / f"a.{target}", c)["warnings"]
    assert any(says in w for w in lost), lost
    whole = scene_to_files(big_and_small_triangle(span, False), tmp_path / f"b.{target}", c)["warnings"]
    assert not any("flatten" in w for w in whole), whole          # the control


def test_flattened_triangles_counts_only_what_had_an_area():
    from potsherd.scene.geometry import flattened_triangles
    before = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 0], [0.3, 0.3, 0]], float)
    after = np.round(before)                   # the last two corners meet at the origin
    tris = np.array([[0, 1, 2], [0, 3, 1], [0, 3, 4], [3, 4, 3]])
    # [0,3,1] had an area and has none; [0,3,4] had none (collinear); [3,4,3] none either
    assert flattened_triangles(before, after, tris) == 1
    assert flattened_triangles(before, before, tris) == 0
    assert flattened_triangles(before, after, np.zeros((0, 3), int)) == 0
