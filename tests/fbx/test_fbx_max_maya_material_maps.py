"""Material maps as 3ds Max and Maya really write them (issue 44), checked
against ufbx over ufbx's own test files (``benchmarks/fbx_material_maps.py``)
and pinned here with small fixtures of the same shape: which file lands in
which glb slot.

* Maya FBX 6.1 keeps texture slots in the geometry (``LayerElementTexture``,
  ``LayerElementEmissive_Textures``, ...) whose ``TextureId`` indexes the
  textures connected to the model (``Connect: "OO", "Texture::file1",
  "Model::pCube1"``); the material has no texture connection at all;
* the 3ds Max glTF material names its maps ``3dsMax|main|metalnessMap``,
  ``roughnessMap``, ``emissionMap``, ``ambientOcclusionMap``, ``AlphaMap``;
* OpenPBR names them ``3dsMax|Parameters|base_metalness_map``,
  ``specular_roughness_map``, each a map node whose ``3dsMax|parameters|
  sourceMap`` is the bitmap; its (and the Physical material's)
  ``emission_map`` is the emission weight, not a colour;
* the 3ds Max PBR spec/gloss material's ``glossiness_map`` is the roughness
  slot, inverted when ``useGlossiness`` is 1.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

import potsherd
from test_fbx_scene import QUAD

COLOURS = {"diffuse": (200, 10, 10), "emissive": (10, 200, 10), "ambient": (10, 10, 200),
           "transparency": (90, 90, 90), "weight": (30, 60, 90), "metal": (250, 250, 250),
           "rough": (40, 40, 40), "normal": (128, 128, 255), "ao": (70, 70, 70),
           "clouds": (5, 100, 150)}


def _pictures(folder: Path) -> None:
    (folder / "textures").mkdir()
    for name, colour in COLOURS.items():
        PILImage.new("RGB", (4, 4), colour).save(folder / "textures" / f"{name}.png", "PNG")


def _scene(folder: Path, text: str, name: str = "m.fbx"):
    path = folder / name
    path.write_text(text)
    doc = potsherd.read(path)
    return doc.codec.to_scene(doc, source_path=str(path))


def _pixel(sc, ref, channel: str = "RGB"):
    assert ref is not None
    im = PILImage.open(io.BytesIO(sc.images[ref.image].data))
    return im.convert(channel).getpixel((1, 1))


def _source(sc, ref, key: str = "") -> str:
    extras = sc.images[ref.image].extras
    return extras["source_files"][key] if key else extras["source_file"]


# -- Maya FBX 6.1: slots in the geometry's layer elements ---------------------
def _texture6(name: str, file: str) -> str:
    return f'''\tTexture: "Texture::{name}", "" {{
\t\tType: "TextureVideoClip"
\t\tVersion: 202
\t\tTextureName: "Texture::{name}"
\t\tProperties60:  {{
\t\t\tProperty: "UVSet", "KString", "", "map1"
\t\t}}
\t\tMedia: "Video::{name}"
\t\tFileName: "D:/Dev/scenes/textures/{file}"
\t\tRelativeFilename: "textures\\{file}"
\t}}
'''


def _element6(kind: str, mapping: str, ids: str) -> str:
    return f'''\t\t{kind}: 0 {{
\t\t\tVersion: 101
\t\t\tName: ""
\t\t\tMappingInformationType: "{mapping}"
\t\t\tReferenceInformationType: "IndexToDirect"
\t\t\tBlendMode: "Normal"
\t\t\tTextureAlpha: 1
\t\t\tTextureId: {ids}
\t\t}}
'''


def _maya6(elements: str, materials: str, textures: list) -> str:
    """Two quads, two materials by polygon (``materials``), the textures
    connected to the model in the order given, as Maya's FBX 6.1 writes them."""
    objects = "".join(_texture6(n, f) for n, f in textures)
    connect = "".join(f'\tConnect: "OO", "Texture::{n}", "Model::pCube1"\n' for n, _ in textures)
    return f'''; FBX 6.1.0 project file
FBXHeaderExtension:  {{
\tFBXHeaderVersion: 1003
\tFBXVersion: 6100
}}
Objects:  {{
\tModel: "Model::pCube1", "Mesh" {{
\t\tVersion: 232
\t\tProperties60:  {{
\t\t}}
\t\tVertices: 0,0,0,1,0,0,1,1,0,0,1,0,2,0,0,2,1,0
\t\tPolygonVertexIndex: 0,1,2,-4,1,4,5,-3
\t\tLayerElementUV: 0 {{
\t\t\tVersion: 101
\t\t\tName: "map1"
\t\t\tMappingInformationType: "ByPolygonVertex"
\t\t\tReferenceInformationType: "IndexToDirect"
\t\t\tUV: 0,0,1,0,1,1,0,1
\t\t\tUVIndex: 0,1,2,3,0,1,2,3
\t\t}}
\t\tLayerElementMaterial: 0 {{
\t\t\tVersion: 101
\t\t\tName: ""
\t\t\tMappingInformationType: "ByPolygon"
\t\t\tReferenceInformationType: "IndexToDirect"
\t\t\tMaterials: {materials}
\t\t}}
{elements}\t}}
\tMaterial: "Material::Shared", "" {{
\t\tVersion: 102
\t\tShadingModel: "lambert"
\t\tProperties60:  {{
\t\t\tProperty: "Diffuse", "Color", "",0.8,0.8,0.8
\t\t}}
\t}}
\tMaterial: "Material::Special", "" {{
\t\tVersion: 102
\t\tShadingModel: "lambert"
\t\tProperties60:  {{
\t\t}}
\t}}
{objects}}}
Connections:  {{
\tConnect: "OO", "Model::pCube1", "Model::Scene"
\tConnect: "OO", "Material::Shared", "Model::pCube1"
\tConnect: "OO", "Material::Special", "Model::pCube1"
{connect}}}
'''


def test_maya_6100_slots_come_from_the_geometry(tmp_path):
    """maya_textured_cube_6100: ``TextureId`` (AllSame) indexes the model's
    textures in connection order, which is not the order of the objects."""
    _pictures(tmp_path)
    text = _maya6(_element6("LayerElementTexture", "AllSame", "0")
                  + _element6("LayerElementEmissive_Textures", "AllSame", "1")
                  + _element6("LayerElementAmbientTextures", "AllSame", "2"),
                  "0,0", [("file1", "diffuse.png"), ("file4", "emissive.png"),
                          ("file3", "ambient.png")])
    sc = _scene(tmp_path, text)
    (shared,) = [m for m in sc.materials if m.name == "Shared"]
    assert _pixel(sc, shared.base_color_texture) == COLOURS["diffuse"]
    assert _source(sc, shared.base_color_texture) == "diffuse.png"
    assert _source(sc, shared.emissive_texture) == "emissive.png"
    assert shared.occlusion_texture is None   # ambient colour is no occlusion map
    assert not any("not found" in w for w in sc.warnings), sc.warnings


def test_maya_6100_per_polygon_texture_ids_follow_the_materials(tmp_path):
    """maya_shared_textures_6100: ``ByPolygon`` texture ids, -1 for none,
    give each material the textures of its own polygons."""
    _pictures(tmp_path)
    text = _maya6(_element6("LayerElementTexture", "ByPolygon", "1,0")
                  + _element6("LayerElementEmissive_Textures", "ByPolygon", "2,-1"),
                  "0,1", [("file1", "diffuse.png"), ("file10", "clouds.png"),
                          ("file4", "emissive.png")])
    sc = _scene(tmp_path, text)
    by_name = {m.name: m for m in sc.materials}
    assert _source(sc, by_name["Shared"].base_color_texture) == "clouds.png"
    assert _source(sc, by_name["Shared"].emissive_texture) == "emissive.png"
    assert _source(sc, by_name["Special"].base_color_texture) == "diffuse.png"
    assert by_name["Special"].emissive_texture is None


# -- 3ds Max materials (7.x) ---------------------------------------------------
def _with(objects: str, connections: str) -> str:
    text = QUAD.replace("\tMaterial: 31,", objects + "\tMaterial: 31,")
    return text.replace('\tC: "OO",31,20\n', '\tC: "OO",31,20\n' + connections)


def _bitmap(oid: int, file: str) -> str:
    """A 3ds Max bitmap: a Texture with its file names."""
    return f'''\tTexture: {oid}, "Texture::Map #{oid}", "" {{
\t\tType: "TextureVideoClip"
\t\tVersion: 202
\t\tTextureName: "Texture::Map #{oid}"
\t\tFileName: "D:\\Dev\\scene\\textures\\{file}"
\t\tRelativeFilename: "textures\\{file}"
\t}}
'''


def _map_node(oid: int) -> str:
    """A 3ds Max map node with no file: its bitmap hangs on ``sourceMap``."""
    return f'''\tTexture: {oid}, "Texture::Map #{oid}", "" {{
\t\tType: "TextureVideoClip"
\t\tVersion: 202
\t\tTextureName: "Texture::Map #{oid}"
\t\tProperties70:  {{
\t\t\tP: "3dsMax|ClassIDa", "int", "Integer", "",-1989217540
\t\t\tP: "3dsMax|ClassIDb", "int", "Integer", "",1153266751
\t\t\tP: "3dsMax|parameters|sourceMap", "Reference", "", "A"
\t\t}}
\t\tFileName: ""
\t\tRelativeFilename: ""
\t}}
'''


def _max_material(props: str) -> str:
    """Material 30 (``Red``) replaced by a 3ds Max material with ``props``."""
    return QUAD.replace('''\t\t\tP: "DiffuseColor", "Color", "", "A",1,0,0\n''', props, 1)


def test_max_gltf_material_maps(tmp_path):
    """max_gltf_material: ``...Map`` names, every slot (alpha packed into the
    base colour, metallic and roughness into one image)."""
    _pictures(tmp_path)
    names = {"baseColorMap": "diffuse.png", "AlphaMap": "transparency.png",
             "metalnessMap": "metal.png", "roughnessMap": "rough.png",
             "normalMap": "normal.png", "ambientOcclusionMap": "ao.png",
             "emissionMap": "emissive.png"}
    base = _max_material('''\t\t\tP: "3dsMax|ClassIDa", "int", "Integer", "",943849874
\t\t\tP: "3dsMax|ClassIDb", "int", "Integer", "",1174294043
\t\t\tP: "3dsMax|main|metalness", "Float", "", "A",0.05
\t\t\tP: "3dsMax|main|roughness", "Float", "", "A",0.06
''')
    objects = "".join(_bitmap(100 + i, f) for i, f in enumerate(names.values()))
    connect = "".join(f'\tC: "OO",{100 + i},0\n\tC: "OP",{100 + i},30, "3dsMax|main|{p}"\n'
                      for i, p in enumerate(names))
    text = base.replace("\tMaterial: 31,", objects + "\tMaterial: 31,").replace(
        '\tC: "OO",31,20\n', '\tC: "OO",31,20\n' + connect)
    sc = _scene(tmp_path, text)
    red = sc.materials[0]
    assert _source(sc, red.base_color_texture, "rgb") == "diffuse.png"
    assert _source(sc, red.base_color_texture, "alpha") == "transparency.png"
    assert _source(sc, red.metallic_roughness_texture, "metallic") == "metal.png"
    assert _source(sc, red.metallic_roughness_texture, "roughness") == "rough.png"
    assert _source(sc, red.normal_texture) == "normal.png"
    assert _source(sc, red.occlusion_texture) == "ao.png"
    assert _source(sc, red.emissive_texture) == "emissive.png"
    assert _pixel(sc, red.metallic_roughness_texture)[1:] == (40, 250)


def test_openpbr_maps_behind_source_map_nodes(tmp_path):
    """max_openpbr_material: ``base_metalness_map`` and ``specular_roughness_map``
    are map nodes whose bitmap hangs on ``sourceMap``; ``emission_map`` (the
    Physical material's emission weight) is no colour map."""
    _pictures(tmp_path)
    base = _max_material('''\t\t\tP: "3dsMax|ClassIDa", "int", "Integer", "",-246014413
\t\t\tP: "3dsMax|ClassIDb", "int", "Integer", "",939201335
\t\t\tP: "3dsMax|Parameters|base_metalness", "Float", "", "A",0
\t\t\tP: "3dsMax|Parameters|specular_roughness", "Float", "", "A",0.3
''')
    maps = {"base_color_map": (200, 300, "diffuse.png"),
            "base_metalness_map": (201, 301, "metal.png"),
            "specular_roughness_map": (202, 302, "rough.png"),
            "emission_map": (203, 303, "weight.png")}
    objects = "".join(_map_node(n) + _bitmap(b, f) for n, b, f in maps.values())
    connect = "".join(f'\tC: "OP",{n},30, "3dsMax|Parameters|{p}"\n'
                      f'\tC: "OP",{b},{n}, "3dsMax|parameters|sourceMap"\n'
                      for p, (n, b, _) in maps.items())
    text = base.replace("\tMaterial: 31,", objects + "\tMaterial: 31,").replace(
        '\tC: "OO",31,20\n', '\tC: "OO",31,20\n' + connect)
    sc = _scene(tmp_path, text)
    red = sc.materials[0]
    assert _source(sc, red.base_color_texture) == "diffuse.png"
    assert _source(sc, red.metallic_roughness_texture, "metallic") == "metal.png"
    assert _source(sc, red.metallic_roughness_texture, "roughness") == "rough.png"
    assert red.emissive_texture is None


def test_spec_gloss_glossiness_map_is_inverted_roughness(tmp_path):
    """max_pbr_spec_gloss: ``glossiness_map`` fills the roughness (green)
    channel, inverted since ``useGlossiness`` is 1."""
    _pictures(tmp_path)
    base = _max_material('''\t\t\tP: "3dsMax|ClassIDa", "int", "Integer", "",-804315648
\t\t\tP: "3dsMax|ClassIDb", "int", "Integer", "",31173939
\t\t\tP: "3dsMax|main|useGlossiness", "Integer", "", "A",1
''')
    text = base.replace("\tMaterial: 31,", _bitmap(100, "rough.png") + "\tMaterial: 31,").replace(
        '\tC: "OO",31,20\n', '\tC: "OO",31,20\n\tC: "OP",100,30, "3dsMax|main|glossiness_map"\n')
    sc = _scene(tmp_path, text)
    red = sc.materials[0]
    assert _source(sc, red.metallic_roughness_texture, "roughness") == "rough.png"
    assert _pixel(sc, red.metallic_roughness_texture)[1] == 255 - 40
    assert np.isclose(red.roughness, 1.0)


# -- transparency maps: FBX's TransparentColor is transparency, not opacity ---
def _picture(path: Path, mode: str, top: tuple, bottom: tuple) -> None:
    """A 4x4 picture (the diffuse's size: no resampling) of two rows of ``top``
    over two of ``bottom``, in ``mode``."""
    im = PILImage.new(mode, (4, 4))
    im.putdata([top] * 8 + [bottom] * 8)
    im.save(path, "PNG")


def _alpha_rows(sc, ref) -> tuple:
    im = PILImage.open(io.BytesIO(sc.images[ref.image].data)).convert("RGBA")
    return im.getpixel((1, 0))[3], im.getpixel((2, 3))[3]


def _maya_transparency(tmp_path: Path, file: str, prop: str = "TransparentColor"):
    """Material Red with textures/diffuse.png as DiffuseColor and ``file`` as
    ``prop``, connected the way Maya's exporter writes them (7.x)."""
    objects = _bitmap(100, "diffuse.png") + _bitmap(101, file)
    connect = ('\tC: "OO",100,0\n\tC: "OP",100,30, "DiffuseColor"\n'
               f'\tC: "OO",101,0\n\tC: "OP",101,30, "{prop}"\n')
    sc = _scene(tmp_path, _with(objects, connect))
    return sc, sc.materials[0].base_color_texture


def test_a_transparency_map_gives_its_alpha_or_its_inverted_colour(tmp_path):
    """A picture with alpha connected to TransparentColor (a game's diffuse with
    alpha, connected to both slots) gives that alpha, as Blender's importer
    reads it, not its luminance; one without alpha is a transparency (Maya:
    white is clear), so its luminance inverted; the same RGB picture as a 3ds
    Max opacity map (``AlphaMap``) keeps its luminance (the control)."""
    _pictures(tmp_path)
    tex = tmp_path / "textures"
    # luminance and alpha disagree: dark opaque, light clear
    _picture(tex / "rgba.png", "RGBA", (20, 20, 20, 255), (240, 240, 240, 0))
    _picture(tex / "grey.png", "RGB", (200, 200, 200), (50, 50, 50))
    sc, ref = _maya_transparency(tmp_path, "rgba.png")
    assert _source(sc, ref, "alpha") == "rgba.png"
    assert _alpha_rows(sc, ref) == (255, 0)
    assert _pixel(sc, ref) == COLOURS["diffuse"]
    sc, ref = _maya_transparency(tmp_path, "grey.png")
    assert _alpha_rows(sc, ref) == (55, 205)
    sc, ref = _maya_transparency(tmp_path, "grey.png", "3dsMax|main|AlphaMap")
    assert _alpha_rows(sc, ref) == (200, 50)
