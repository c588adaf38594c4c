"""scene.compare: a scene draws and plays what another does, through what Blender
changes, and every kind of edit still counts as one."""
from __future__ import annotations

import copy
import io

import numpy as np
import pytest

from blender_sim import blender_like
from export_scenes import morph_scene, skinned_cube_scene, textured_quad_scene

from potsherd.export.gltf import write_glb
from potsherd.scene.compare import scene_difference
from potsherd.scene.gltf_read import read_gltf


def via_glb(scene, tmp_path, name="x.glb"):
    write_glb(scene, tmp_path / name)
    return read_gltf(tmp_path / name)


@pytest.mark.parametrize("make", [skinned_cube_scene, morph_scene, textured_quad_scene])
def test_a_scene_matches_its_glb_and_its_blender_round_trip(make, tmp_path):
    src = make()
    glb = via_glb(src, tmp_path)
    assert scene_difference(glb, src) is None
    assert scene_difference(blender_like(glb), src) is None


def _edit_vertex(s):
    s.meshes[0].primitives[0].positions[3] += np.float32(0.05)


def _edit_key(s):
    ch = next(c for c in s.animations[0].channels if c.path == "rotation")
    ch.values[2] = ch.values[1]


def _edit_translation_key(s):
    ch = next(c for c in s.animations[0].channels if c.path == "translation")
    ch.values[-1] = ch.values[-1] + np.float32(0.2)


def _shorten(s):
    for c in s.animations[0].channels:
        keep = c.times <= c.times[-1] * 0.6
        c.times, c.values = c.times[keep], c.values[keep]


def _recolour(s):
    s.materials[0].base_color = (0.2, 0.5, 0.1, 1.0)


def _rename_material(s):
    s.materials[0].name = "other"


def _add_clip(s):
    s.animations.append(copy.deepcopy(s.animations[0]))
    s.animations[-1].name = "again"


def _reweight(s):
    p = s.meshes[0].primitives[0]
    p.weights = p.weights.copy()
    p.weights[p.joints[:, 0] == 1, 0] = 0.2
    p.weights[p.joints[:, 0] == 1, 1] = 0.8


def _uv(s):
    p = s.meshes[0].primitives[0]
    p.uvs = [p.uvs[0] + np.float32(0.25)]


def _repaint(s):
    from PIL import Image
    img = s.images[0]
    with Image.open(io.BytesIO(img.data)) as im:
        im = im.convert("RGBA")
        im.putpixel((0, 0), (1, 2, 3, 255))
        buf = io.BytesIO()
        im.save(buf, "PNG")
    img.data = buf.getvalue()


def _morph_key(s):
    ch = s.animations[0].channels[0]
    ch.values[1] = np.float32([0.5, 0.5])


@pytest.mark.parametrize("make,edit,expect", [
    (skinned_cube_scene, _edit_vertex, "triangles"),
    (skinned_cube_scene, _edit_key, "animation 'bend'"),
    (skinned_cube_scene, _edit_translation_key, "animation 'bend'"),
    (skinned_cube_scene, _shorten, "length"),
    (skinned_cube_scene, _recolour, "material 'orange'"),
    (skinned_cube_scene, _rename_material, "materials"),
    (skinned_cube_scene, _add_clip, "animations"),
    (skinned_cube_scene, _reweight, "animation 'bend'"),
    (textured_quad_scene, _uv, "triangles"),
    (textured_quad_scene, _repaint, "texture"),
    (textured_quad_scene, _edit_vertex, "triangles"),
    (morph_scene, _morph_key, "morph weights"),
])
def test_every_edit_counts_even_through_blender(make, edit, expect, tmp_path):
    src = make()
    glb = via_glb(src, tmp_path)
    edit(glb)
    why = scene_difference(blender_like(glb), src)
    assert why is not None and expect in why, why
