"""Issue 44: what a sweep of small public glTF files (the Khronos samples: Box,
BoxVertexColors, SimpleSkin, RiggedSimple, BoxAnimated, SimpleMorph...) through
every import target and back found coming back wrong without a word.  Each
test builds the feature the sample had here, small, and measures the way back
with the renderer's own glTF reader."""
from __future__ import annotations

from pathlib import Path

import potsherd
from potsherd.export.gltf import export_document, write_glb
from potsherd.importer import import_gltf
from potsherd.scene.import_prep import Holds, prepare
from test_import_colours import coloured_scene, colour_errors


def _tr_round_trip(scene, tmp: Path) -> tuple:
    tmp.mkdir(parents=True, exist_ok=True)
    src = tmp / "src.glb"
    write_glb(scene, src)
    summary = import_gltf(src, tmp / "out.trwad")
    back = tmp / "back.glb"
    export_document(potsherd.read(tmp / "out.trwad"), back)
    return src, back, summary


# ---- BoxVertexColors: COLOR_0 beside NORMAL on a TR moveable -------------------------

def test_tr_bakes_vertex_colours_that_have_normals(tmp_path):
    """A moveable's vertex colours are shades, read only where a primitive has no
    normals; beside normals they went nowhere and nothing was said (errors of
    76 levels).  They are baked into the textures, as for the other formats
    without vertex colours, within a level of the source."""
    for texture in (False, True):
        src, back, summary = _tr_round_trip(coloured_scene(texture, "own"),
                                            tmp_path / str(texture))
        said = [w for w in summary["warnings"] if "vertex colours" in w]
        assert len(said) == 1 and "baked" in said[0], summary["warnings"]
        errs, _ = colour_errors(src, back)
        assert len(errs) >= 12 and errs.max() <= 1.5, errs


def test_tr_shades_are_still_shades(tmp_path):
    """Negative control: colours without normals stay the moveable's shades
    (nothing baked, nothing said).  (Colours beside normals on a moveable
    potsherd exported are its shades too: tests/trle/test_trle_import.py.)"""
    scene = coloured_scene(False, "own")
    p = scene.meshes[0].primitives[0]
    p.normals = None
    p.colors[:, :3] = p.colors[:, :1]             # (grey: a shade loses nothing of it)
    out = prepare(scene, Holds("t", shades=True, texture=True))
    assert out.meshes[0].primitives[0].colors is not None and not out.images
    assert not scene.warnings
    _, _, summary = _tr_round_trip(scene, tmp_path / "shades")
    assert not any("vertex colours" in w for w in summary["warnings"]), summary["warnings"]
    doc = potsherd.read(tmp_path / "shades" / "out.trwad")
    assert doc.root["meshes"] and all(int(m["normal_count"]) < 0 for m in doc.root["meshes"])
    # the same primitive without the mark is baked
    baked = prepare(coloured_scene(False, "own"), Holds("t", shades=True, texture=True))
    assert baked.meshes[0].primitives[0].colors is None and len(baked.images) == 1


def test_tr_names_what_shades_lose(tmp_path):
    """Shades are one brightness per vertex, on a mesh without normals: the hue
    of coloured shades, and shades on a bone whose mesh also has parts with
    normals, went without a word."""
    scene = coloured_scene(False, "own")
    scene.meshes[0].primitives[0].normals = None
    _, _, summary = _tr_round_trip(scene, tmp_path / "hue")
    said = [w for w in summary["warnings"] if "vertex colours" in w]
    assert len(said) == 1 and "hue" in said[0], summary["warnings"]
    # grey shades lose nothing: nothing said
    grey = coloured_scene(False, "own")
    p = grey.meshes[0].primitives[0]
    p.normals = None
    p.colors[:, :3] = p.colors[:, :1]
    _, _, summary = _tr_round_trip(grey, tmp_path / "grey")
    assert not any("vertex colours" in w for w in summary["warnings"]), summary["warnings"]
    # shades beside a part with normals on the same (only) bone: dropped, and said
    mixed = coloured_scene(False, "own", plain=True)
    p = mixed.meshes[0].primitives[0]
    p.normals = None
    p.colors[:, :3] = p.colors[:, :1]
    _, _, summary = _tr_round_trip(mixed, tmp_path / "mixed")
    said = [w for w in summary["warnings"] if "vertex colours" in w]
    assert len(said) == 1 and "dropped" in said[0] and "normals" in said[0], summary["warnings"]


# ---- BoxTextured: a bare mesh file holds no material ------------------------------------

def _textured_plane(texture: bool = True, factor: tuple = (1.0, 1.0, 1.0, 1.0)):
    """BoxTextured's kind of scene, small: a plane whose one material has a texture."""
    import numpy as np
    from potsherd.scene import Image, Material, Mesh, Primitive, Scene, TextureRef
    from test_import_colours import _gradient_png, _grid
    s = Scene(name="textured")
    if texture:
        s.add_image(Image(name="grad", data=_gradient_png()))
    s.add_material(Material(base_color=factor,
                            base_color_texture=TextureRef(image=0) if texture else None))
    pos, idx, uv = _grid(2)
    s.add_node(name="plane", mesh=s.add_mesh(Mesh(name="plane", primitives=[Primitive(
        positions=pos, indices=idx, normals=np.tile([0, 0, 1.0], (len(pos), 1)), uvs=[uv],
        material=0)])))
    return s


def test_bare_n3_meshes_name_the_material_they_drop(tmp_path):
    """.n3pmesh and .n3cskins hold geometry only (the part, plug or shape that uses
    them names the texture): BoxTextured came back untextured from both, and
    nothing was said.  Each names the texture or colour it drops, once, and
    where to import to keep it; a material that shows nothing is not named,
    and the formats that write the texture say nothing of it."""
    for target in ("n3pmesh", "n3cskins"):
        for texture, factor, shown in ((True, (1.0, 1.0, 1.0, 1.0), "base colour texture"),
                                       (False, (0.8, 0.8, 0.8, 1.0), "base colour")):
            src = tmp_path / f"{target}{texture}.glb"
            write_glb(_textured_plane(texture, factor), src)
            summary = import_gltf(src, tmp_path / f"{target}{texture}.{target}")
            said = [w for w in summary["warnings"] if "materials not written" in w]
            assert len(said) == 1 and shown in said[0] and ".n3cpart" in said[0], \
                summary["warnings"]
        src = tmp_path / f"{target}-white.glb"
        write_glb(_textured_plane(False), src)
        summary = import_gltf(src, tmp_path / f"white.{target}")
        assert not any("material" in w for w in summary["warnings"]), summary["warnings"]
    src = tmp_path / "part.glb"
    write_glb(_textured_plane(True), src)
    for target in ("n3cpart", "n3shape"):
        summary = import_gltf(src, tmp_path / f"out.{target}")
        assert not any("materials not written" in w for w in summary["warnings"]), \
            summary["warnings"]


# ---- Fox (a Blender re-export): a skinned body beside rigid meshes, as a plug ------------

def _body_and_stand(stand: bool = True, body: bool = True):
    """The skinned column of test_import_fidelity and a rigid box beside it."""
    import numpy as np
    from potsherd.scene import Mesh, Primitive
    from test_import_fidelity import _box, skinned_column
    s = skinned_column(2)
    if not body:
        s.nodes[-1].mesh = None
        s.nodes[-1].skin = None
    if stand:
        pos, idx = _box(0.5)
        s.add_node(name="stand", translation=(3.0, 0.0, 0.0), mesh=s.add_mesh(Mesh(
            name="stand", primitives=[Primitive(positions=pos, indices=idx.astype(np.uint32),
                                                material=0)])))
    return s


def test_a_plug_names_the_skinned_meshes_it_leaves_out(tmp_path):
    """A plug is made of the scene's rigid meshes when it has any (a weapon
    exported beside the body holding it); the Fox sample (skinned fox, rigid
    stand) came back from .n3cplug without the fox (576 of 3552 triangles), and
    the only word was "skin dropped; the mesh is written in its bind pose".
    Now the left-out skinned mesh is named with its triangle count and the
    bind-pose claim is not made; a rigid-only scene says neither, and a
    skinned-only one still takes its rest pose on its strongest joint."""
    import potsherd
    for name, scene, left_out, bind_pose in (
            ("mixed", _body_and_stand(), True, False),
            ("rigid", _body_and_stand(body=False), False, False),
            ("skinned", _body_and_stand(stand=False), False, True)):
        src = tmp_path / f"{name}.glb"
        write_glb(scene, src)
        (tmp_path / name).mkdir()
        summary = import_gltf(src, tmp_path / name / "out.n3cplug")
        said = [w for w in summary["warnings"] if "not written" in w and "skinned" in w]
        assert len(said) == (1 if left_out else 0), summary["warnings"]
        if left_out:
            assert "'body'" in said[0] and "24 triangles" in said[0] and ".n3cpart" in said[0]
        claims = [w for w in summary["warnings"] if "written in its bind pose" in w]
        assert len(claims) == (1 if bind_pose else 0), summary["warnings"]
        mesh = potsherd.read(next((tmp_path / name).glob("*.n3pmesh")))
        assert int(mesh.root["indexCount"]) == 3 * (24 if name == "skinned" else 12)


# ---- BrainStem: joints without names, on a TR moveable ----------------------------------

def test_tr_warnings_tell_unnamed_bones_apart_from_the_root():
    """BrainStem's 18 joints have no names; every per-bone TR warning (16
    "triangles flatten to lines" with different counts) called its mesh "the
    root mesh".  An unnamed bone is named by its node now; the root stays the root."""
    from potsherd.formats.trle.importing import _bone_name
    from potsherd.scene import Scene
    s = Scene(name="s")
    named, unnamed = s.add_node(name="hip"), s.add_node(name="")
    assert _bone_name(s, named) == "the mesh of bone 'hip'"
    assert _bone_name(s, unnamed) == f"the mesh of unnamed bone node {unnamed}"
    assert _bone_name(s, -1) == "the root mesh"
