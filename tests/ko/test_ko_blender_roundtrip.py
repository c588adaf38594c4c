"""An unedited round trip through Blender gives back the original Knight Online files.

The modder's first step: export, open the glb in Blender, export it again with
Blender's defaults, import it with ``--like`` the original.  Blender drops every
glTF ``extras``, sorts each node's children by name, turns every bone towards
its child (rest rotations, children, keys and inverse bind matrices change
while the skin deforms as before), puts an armature object above the
skeleton, samples every clip at 24 fps up to its last whole frame and
interpolates rotations per component.  ``blender_sim.blender_like`` does the
same to a scene so the rules are tested without Blender; the Blender tier runs the real
thing.  The negative controls check that an edit still counts as one.
"""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import potsherd
import srgb_formula
from potsherd.export.gltf import write_glb
from potsherd.scene import quat_from_axis_angle
from potsherd.scene.gltf_read import read_gltf
from potsherd.scene.ops import sample_node_trs, world_matrices
from potsherd.scene.xform import trs_to_matrix
from blender_sim import blender_like, run_blender
from test_ko_import import CODEC, KO, corpus

BLENDER = shutil.which("blender")


def _original(name: str, near: Path | None = None) -> Path:
    """The corpus file of ``name`` (the client's folders are case-insensitive),
    beside ``near`` first (Chr/ and Item/ both hold a mob_deruvisy.n3chr)."""
    if near is not None:
        hits = [p for p in near.parent.iterdir() if p.name.lower() == name.lower()]
        if hits:
            return hits[0]
    hits = [p for p in KO.rglob("*") if p.name.lower() == name.lower()]
    assert hits, name
    return hits[0]


def _import(scene, like: Path, out_name: str):
    return CODEC[like.suffix[1:].lower()].from_scene(scene, like=potsherd.read(like),
                                                     out_name=out_name)


CHARACTERS = ["Chr/mob_kenta.n3chr", "Chr/mob_deruvisy.n3chr", "Intro/intro.n3chr",
              "Item/mob_deruvisy.n3chr"]      # (the last: its skeleton is not in the corpus)


@pytest.mark.parametrize("rel", CHARACTERS)
def test_character_through_blender_like_changes_comes_back_byte_exact(rel, tmp_path):
    path = corpus(rel)
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    files = _import(scene, path, path.name)
    assert len(files) >= 3                   # the character, its parts and skins, ...
    for name, out in files:
        assert out.encode() == _original(name, path).read_bytes(), name


def _world_at(scene, animation, t):
    local = np.stack([trs_to_matrix(*[x[0] for x in sample_node_trs(scene, animation, i, [t])])
                      for i in range(len(scene.nodes))])
    return world_matrices(scene, local)


def test_an_edited_key_is_kept_and_the_rest_still_fits(tmp_path):
    """Negative control: one clip's key of one joint turned 20 degrees.  The
    skeleton is rewritten with the edit (its world pose at that time is the
    edited one) in the original's joint order and frames, so the parts and
    the plug stay the original files."""
    path = corpus("Chr/mob_kenta.n3chr")
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    clip = next(a for a in scene.animations if a.name == "walk")
    joint = next(i for i, n in enumerate(scene.nodes) if n.name == "Larm")
    ch = next(c for c in clip.channels if c.node == joint and c.path == "rotation")
    k = 4 * (len(ch.times) // 8)              # k/24 s: a frame of the 30 fps rewrite too
    turn = quat_from_axis_angle((0, 0, 1), math.radians(20)).reshape(4)
    from potsherd.scene.xform import quat_multiply
    ch.values[k] = quat_multiply(np.asarray(ch.values[k], np.float64), turn).astype(np.float32)
    t = float(ch.times[k])
    want = _world_at(scene, clip, t)[joint]
    files = dict(_import(scene, path, path.name))
    changed = sorted(n for n, d in files.items() if d.encode() != _original(n).read_bytes())
    assert changed == ["mob_kenta.n3anim", "mob_kenta.n3joint"]
    out = tmp_path / "out"
    (out / "Chr").mkdir(parents=True)
    (out / "Item").mkdir()
    for name, d in files.items():
        (out / ("Chr" if name.startswith("mob_kenta.") else "Item") / name).write_bytes(d.encode())
    for src in _original("mob_kenta.n3chr").parent.parent.joinpath("Item").glob("*.dxt"):
        (out / "Item" / src.name).write_bytes(src.read_bytes())
    back_doc = potsherd.read(out / "Chr" / "mob_kenta.n3chr")
    back = back_doc.codec.to_scene(back_doc, source_path=str(out / "Chr" / "mob_kenta.n3chr"))
    bclip = next(a for a in back.animations if a.name == "walk")
    bjoint = next(i for i, n in enumerate(back.nodes) if n.name == "Larm")
    got = _world_at(back, bclip, t)[bjoint]
    # the engine frame is the original's, Blender's turn undone: compare positions and
    # the joint's turn away from the unedited pose
    assert np.allclose(got[:3, 3], want[:3, 3], atol=1e-4)
    base = _world_at(back, next(a for a in back.animations if a.name == "walk"), 0.0)
    assert not np.allclose(got, base, atol=1e-3)
    orig_doc = potsherd.read(path)
    orig = orig_doc.codec.to_scene(orig_doc, source_path=str(path))
    ref = _world_at(orig, next(a for a in orig.animations if a.name == "walk"), t)[
        next(i for i, n in enumerate(orig.nodes) if n.name == "Larm")]
    angle = math.degrees(math.acos(np.clip((np.trace(ref[:3, :3].T @ got[:3, :3]) - 1) / 2, -1, 1)))
    assert abs(angle - 20) < 0.5


def test_joint_order_and_names_follow_the_original(tmp_path):
    """A .n3joint whose motion was edited is rewritten in the original's joint
    order (the numbers its skins are bound to) with its stored names, not in
    Blender's sorted order with the export's ``end_site.1`` names."""
    path = corpus("Chr/mob_snowman.n3joint")
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    assert _import(scene, path, path.name).encode() == path.read_bytes()
    a = scene.animations[0]
    a.channels[0].values = a.channels[0].values * np.float32(1.5)       # an edit
    new = _import(scene, path, path.name)
    assert new.encode() != path.read_bytes()

    def names(root):
        out, stack = [], [root]
        while stack:
            r = stack.pop()
            out.append(bytes(r["name"]))
            stack.extend(reversed(r["children"]))
        return out
    assert names(new.root) == names(doc.root)
    assert names(new.root) != sorted(names(doc.root))             # (not Blender's order)


@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
@pytest.mark.parametrize("rel", ["Chr/mob_kenta.n3chr", "Chr/mob_snowman.n3joint",
                                 "Item/Mob_Harppy.n3cskins", "ChrSelect/wea_el_long_sword.n3cplug",
                                 "Object/obj_co_xmastree_gift.n3pmesh"])
def test_real_blender_round_trip_is_byte_exact(rel, tmp_path):
    path = corpus(rel)
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    run_blender(tmp_path / "x.glb", tmp_path / "b.glb", tmp_path)
    files = _import(read_gltf(tmp_path / "b.glb"), path, path.name)
    files = files if isinstance(files, list) else [(path.name, files)]
    for name, out in files:
        assert out.encode() == _original(name).read_bytes(), name


def test_a_rewritten_clip_table_keeps_what_gltf_cannot_say(tmp_path):
    """Blender drops animation extras.  When an edit rewrites the clips, each
    keeps the original's name, frame rate (45 and 40 fps here, not the default
    30), trace and sound frames, blend time, flags and strike frames."""
    path = corpus("Chr/mob_deruvisy.n3chr")
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    ch = next(c for c in scene.animations[0].channels if c.path == "translation")
    ch.values = ch.values + np.float32(0.05)                           # an edit
    files = dict(_import(scene, path, path.name))
    old_clips = potsherd.read(_original("mob_deruvisy.n3anim")).root["clips"]
    new_clips = files["mob_deruvisy.n3anim"].root["clips"]
    assert files["mob_deruvisy.n3anim"].encode() != _original("mob_deruvisy.n3anim").read_bytes()
    for key in ("name", "fps", "flags"):
        assert [c[key] for c in new_clips] == [c[key] for c in old_clips], key
    for key in ("metadata", "strikeValues"):
        assert np.array_equal([c[key] for c in new_clips], [c[key] for c in old_clips]), key
    assert {float(c["fps"]) for c in old_clips} - {30.0}                   # (not vacuous)
    assert any(np.any(c["metadata"][2:4]) for c in old_clips)


def _repaint(scene, image: int) -> np.ndarray:
    """Paint the top-left 8x8 texels of ``scene.images[image]`` red; the new RGBA."""
    import io
    from PIL import Image
    img = scene.images[image]
    with Image.open(io.BytesIO(img.data)) as im:
        px = np.array(im.convert("RGBA"))
    px[:8, :8] = (255, 0, 0, 255)
    buf = io.BytesIO()
    Image.fromarray(px).save(buf, "PNG")
    img.data = buf.getvalue()
    return px


def test_a_repainted_texture_and_a_recoloured_plug_are_written(tmp_path):
    """Under --like, an edited picture is not the original's: it is written as a
    new .dxt under the original texture's name (the part's reference stays),
    and a plug's changed colour becomes its diffuse.  Unedited, neither is."""
    from potsherd.formats.ko.textures import record_rgba
    path = corpus("Chr/mob_kenta.n3chr")
    doc = potsherd.read(path)
    write_glb(doc.codec.to_scene(doc, source_path=str(path)), tmp_path / "x.glb")
    scene = blender_like(read_gltf(tmp_path / "x.glb"))
    assert not any(n.endswith(".dxt") for n, _ in _import(scene, path, path.name))   # control
    upper = next(i for i, n in enumerate(scene.nodes) if n.name == "upper")
    prim = scene.meshes[scene.nodes[upper].mesh].primitives[0]
    image = scene.materials[prim.material].base_color_texture.image
    want = _repaint(scene, image)
    plug = next(i for i, n in enumerate(scene.nodes) if n.mesh is not None and n.skin is None)
    pmat = scene.materials[scene.meshes[scene.nodes[plug].mesh].primitives[0].material]
    pmat.base_color = (0.25, 0.5, 0.75, 1.0)
    files = dict(_import(scene, path, path.name))
    part = potsherd.read(_original("mob_kenta_upper.n3cpart"))
    ref = bytes(part.root["texture"]).decode("cp949").split("\\")[-1]
    assert ref in files and files["mob_kenta_upper.n3cpart"].encode() == \
        _original("mob_kenta_upper.n3cpart").read_bytes()         # (its reference stays)
    got = record_rgba(files[ref].root)
    assert got.shape == want.shape
    assert np.abs(got[:8, :8].astype(int) - [255, 0, 0, 255]).max() <= 8   # (DXT's 5:6:5 colours)
    assert np.abs(got[16:, 16:].astype(int) - want[16:, 16:]).mean() < 8
    plug_doc = next(d for n, d in files.items() if n.endswith(".n3cplug"))
    # Blender's linear factor, as the display-space diffuse D3D multiplies by
    assert np.allclose(plug_doc.root["material"]["diffuse"][:3],
                       srgb_formula.encode([0.25, 0.5, 0.75]), atol=1e-6)


@pytest.mark.skipif(BLENDER is None, reason="Blender not installed")
def test_a_character_authored_in_blender_plays_in_knight_online_as_in_blender(tmp_path):
    """The guide's first workflow from scratch: a rig built in Blender (bones,
    weights blended between two bones, a 24 frame/s action) saved as glTF,
    imported as .n3chr and exported back.  At every key of Blender's clip, every
    posed corner is where Blender's glTF puts it.  The clip was sampled at 30
    frames/s before, and its 24 frame/s keys between two frames drifted by 1.3%
    of the model's height."""
    from blender_sim import AUTHOR_RIG_SCRIPT, run_blender_script
    from test_ko_import import _clip_corners, _corner_drift, export, write_all
    run_blender_script(AUTHOR_RIG_SCRIPT, [tmp_path / "authored.glb"], tmp_path)
    source = read_gltf(tmp_path / "authored.glb")
    files = CODEC["n3chr"].from_scene(read_gltf(tmp_path / "authored.glb"), out_name="rig.n3chr")
    out = tmp_path / "out"
    out.mkdir()
    write_all(files, out)
    anim = potsherd.read(out / "rig.n3anim").root["clips"][0]
    assert anim["fps"] == 24.0                               # Blender's rate, kept
    back = export(out / "rig.n3chr", data_root=str(out))
    (a,), (b,) = source.animations, back.animations
    keys = np.unique(np.concatenate([np.asarray(c.times, np.float64) for c in a.channels]))
    assert len(keys) >= 20
    drift = max(_corner_drift(_clip_corners(source, a, t), _clip_corners(back, b, t))
                for t in keys)
    assert drift < 1e-5 * 3.0, drift                          # (the rig is 3 units tall)
