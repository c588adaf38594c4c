"""The zone colour map (.tct) on the terrain of the zone glTF export.

A 33 x 33 zone (4 x 4 patches: one colour-map texture of 32 tiles a side) built
with potsherd's own encoders, every tile a colour-map tile; the colour map a
4 x 4 texture whose every pixel is distinct, so the placement (x across the
columns, z up the rows: the engine's v = 1 - z/32) is checked pixel by pixel."""
from __future__ import annotations

import io
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import potsherd
from potsherd.export import gltf
from potsherd.scene import Scene
from potsherd.formats.ko.zone_colormap import colormap_count, colormap_rgba
from corpus_paths import CORPUS_ROOT
from test_zone import f32, i32, name260, s   # the zone fixtures' byte helpers

A8R8G8B8 = 21
MAP = 33



def pixel_colour(row: int, col: int) -> tuple:
    return (16 * row + 8, 16 * col + 8, 77, 255)        # RGBA, distinct per pixel


def ntf_grid(side: int = 4) -> bytes:
    """An A8R8G8B8 NTF record whose pixel (row, col) is pixel_colour(row, col)."""
    body = b"".join(bytes((b, g, r, a)) for row in range(side) for col in range(side)
                    for r, g, b, a in [pixel_colour(row, col)])
    return s(b"cm") + b"NTF\x03" + struct.pack("<iiIi", side, side, A8R8G8B8, 0) + body


def gtd_bytes(size: int = MAP) -> bytes:
    """Flat terrain, every tile without a tile texture (tex1 1023: the colour map)."""
    word = 1 | 1023 << 11 | 1023 << 21
    pts = b"".join(f32(0.0) + struct.pack("<I", word) for _ in range(size * size))
    patches = f32(0, 10) * (((size - 1) // 8) ** 2)
    tiles = i32(0)                                       # no tile textures
    return (i32(2) + s(b"cm") + i32(size) + pts + patches + bytes(size * size) + name260(b"")
            + tiles + i32(0) + i32(0) + i32(0))


@pytest.fixture()
def zone(tmp_path: Path) -> Path:
    d = tmp_path / "data" / "Zones"
    d.mkdir(parents=True)
    for name, data, fmt in (("cm.gtd", gtd_bytes(), "gtd"), ("cm.tct", ntf_grid(), "tct")):
        assert potsherd.write(potsherd.read(data, format=fmt)) == data
        (d / name).write_bytes(data)
    return d / "cm.gtd"


def colour_prim(scene):
    mesh = next(m for m in scene.meshes if m.name == "terrain")
    mats = [scene.materials[p.material] for p in mesh.primitives]
    k = [m.name for m in mats].index("colour map")
    return mesh.primitives[k], mats[k]


def test_texture_count_follows_the_engine_rule():
    # patches * 32 / 128 textures a side: 8 tiles a patch, 32 tiles a texture
    assert [colormap_count(n) for n in (9, 17, 33, 257, 1025, 2049)] == [0, 0, 1, 8, 32, 64]


def test_joined_image_rows_follow_z_and_columns_x():
    tct = potsherd.read(ntf_grid() * 4, format="tct")
    sc = Scene(name="t")
    # 65 samples: 2 x 2 textures, [cx][cz] in file order x outer, z inner
    rgba = colormap_rgba(tct, 65, sc)
    assert rgba.shape == (8, 8, 4) and not sc.warnings
    for zrow in range(4):
        for xcol in range(4):
            # texture row 0 is the far z edge (v = 1 - z/32): flipped
            assert tuple(rgba[zrow, xcol]) == pixel_colour(3 - zrow, xcol)
    assert (rgba[4:, 4:] == rgba[:4, :4]).all()


def test_colour_map_is_applied_with_uvs_from_the_samples(zone):
    doc = potsherd.read(zone)
    sc = gltf.document_scene(doc, {})
    prim, mat = colour_prim(sc)
    assert mat.base_color_texture is not None and mat.extras["source"] == "cm.tct"
    assert mat.base_color == (1.0, 1.0, 1.0, 1.0)
    img = np.asarray(Image.open(io.BytesIO(sc.images[mat.base_color_texture.image].data)))
    assert img.shape == (4, 4, 3)
    assert tuple(img[0, 3]) == pixel_colour(3, 3)[:3] and tuple(img[3, 0]) == pixel_colour(0, 0)[:3]
    # each corner's UV is its sample (x, z) / 32; x is mirrored into glTF (-x)
    x = -prim.positions[:, 0] / 4.0
    z = prim.positions[:, 2] / 4.0
    assert np.allclose(prim.uvs[0][:, 0], x / 32) and np.allclose(prim.uvs[0][:, 1], z / 32)
    assert sc.nodes[0].extras["zone"]["terrain"]["colourMap"] == "cm.tct"


def test_colour_map_option_off_and_a_misfit_file(zone):
    doc = potsherd.read(zone)
    off = gltf.document_scene(doc, {"colormap": "0"})
    _, mat = colour_prim(off)
    assert mat.base_color_texture is None and mat.base_color != (1.0, 1.0, 1.0, 1.0)
    assert not off.images
    zone.with_suffix(".tct").write_bytes(ntf_grid() * 2)       # 2 textures: the terrain takes 1
    sc = gltf.document_scene(potsherd.read(zone), {})
    assert "colour map: 2 textures, the terrain of 33 samples takes 1 x 1; not applied" \
        in sc.warnings
    assert colour_prim(sc)[1].base_color_texture is None


def test_only_the_tct_beside_the_gtd_is_taken(zone, tmp_path):
    """The side-file rule of the light map: the gtd's name with .tct in its folder
    (any case); a .tct elsewhere in the tree is not looked for."""
    tct = zone.with_suffix(".tct")
    tct.rename(zone.parent / "CM.TCT")
    assert colour_prim(gltf.document_scene(potsherd.read(zone), {}))[1].base_color_texture \
        is not None
    (zone.parent / "CM.TCT").rename(zone.parent.parent / "cm.tct")
    sc = gltf.document_scene(potsherd.read(zone), {})
    assert colour_prim(sc)[1].base_color_texture is None and not sc.images


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for the glTF validator")
def test_colour_mapped_zone_passes_the_validator(zone, tmp_path):
    from potsherd.export.validate import validate_gltf, validator_available
    if not validator_available():
        pytest.skip("tools/gltf-validator not installed")
    out = tmp_path / "cm.glb"
    gltf.export_document(potsherd.read(zone), out)
    report = validate_gltf(out)
    assert report["errors"] == 0 and report["warnings"] == 0, report["messages"][:5]


@pytest.mark.corpus
def test_dungeon_a_takes_its_colour_map():
    gtd = CORPUS_ROOT / "ko" / "data" / "Zones" / "dungeon_a.gtd"
    if not gtd.is_file() or not gtd.with_suffix(".tct").is_file():
        pytest.skip("corpus zone with a colour map not present")
    doc = potsherd.read(gtd)
    sc = gltf.document_scene(doc, {"objects": False})
    _, mat = colour_prim(sc)
    img = Image.open(io.BytesIO(sc.images[mat.base_color_texture.image].data))
    assert img.size == (1024, 1024)              # 8 x 8 textures of 128 pixels
    assert sc.nodes[0].extras["zone"]["terrain"]["colourMap"] == "dungeon_a.tct"
