"""FBX maps that are node graphs (3ds Max OSL bitmaps, shader graphs, a
Physical material's map) and layered textures resolve to the bitmap behind
them, in the glTF slot of the property they hang on, as ufbx resolves them."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

import potsherd
from test_fbx_scene import QUAD


def _png(path: Path, colour: tuple) -> None:
    PILImage.new("RGB", (4, 4), colour).save(path, "PNG")


def _with(objects: str, connections: str) -> str:
    text = QUAD.replace("\tMaterial: 31,", objects + "\tMaterial: 31,")
    return text.replace('\tC: "OO",31,20\n', '\tC: "OO",31,20\n' + connections)


#: an OSL bitmap map: a Texture with no file of its own, naming it in a parameter
OSL = '''\tTexture: 40, "Texture::osl_albedo", "" {
\t\tType: "TextureVideoClip"
\t\tProperties70:  {
\t\t\tP: "3dsMax|params|Filename", "KString", "", "", "albedo.png"
\t\t}
\t}
'''

#: a shader graph: a map node with no file, a bitmap Texture connected into it
GRAPH = '''\tTexture: 50, "Texture::graph", "" {
\t\tType: "TextureVideoClip"
\t}
\tTexture: 51, "Texture::glow_bitmap", "" {
\t\tType: "TextureVideoClip"
\t\tFileName: "glow.png"
\t\tRelativeFilename: "glow.png"
\t}
\tLayeredTexture: 60, "LayeredTexture::layers", "" {
\t}
\tTexture: 61, "Texture::empty_layer", "" {
\t\tType: "TextureVideoClip"
\t}
\tTexture: 62, "Texture::normal_bitmap", "" {
\t\tType: "TextureVideoClip"
\t\tFileName: "normal.png"
\t}
'''


def test_node_graph_and_layered_maps_resolve_to_their_bitmaps(tmp_path):
    _png(tmp_path / "albedo.png", (200, 10, 10))
    _png(tmp_path / "glow.png", (10, 200, 10))
    _png(tmp_path / "normal.png", (128, 128, 255))
    text = _with(OSL + GRAPH,
                 '\tC: "OP",40,30, "3dsMax|Parameters|base_color_map"\n'
                 '\tC: "OP",50,30, "3dsMax|Parameters|emit_color_map"\n'
                 '\tC: "OP",51,50, "3dsMax|params|input"\n'
                 '\tC: "OP",60,30, "NormalMap"\n'
                 '\tC: "OO",61,60\n'
                 '\tC: "OO",62,60\n')
    path = tmp_path / "graph.fbx"
    path.write_text(text)
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc, source_path=str(path))
    red = sc.materials[0]

    def colour(ref):
        assert ref is not None
        img = sc.images[ref.image]
        return PILImage.open(io.BytesIO(img.data)).convert("RGB").getpixel((1, 1))

    assert colour(red.base_color_texture) == (200, 10, 10)
    assert colour(red.emissive_texture) == (10, 200, 10)
    assert colour(red.normal_texture) == (128, 128, 255)
    assert not any("not found" in w for w in sc.warnings), sc.warnings


def test_a_map_with_no_bitmap_anywhere_is_named_not_invented(tmp_path):
    """Negative control: a graph node with nothing behind it gives no image."""
    text = _with('''\tTexture: 50, "Texture::graph", "" {
\t\tType: "TextureVideoClip"
\t}
''', '\tC: "OP",50,30, "3dsMax|Parameters|base_color_map"\n')
    path = tmp_path / "empty.fbx"
    path.write_text(text)
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc, source_path=str(path))
    assert sc.materials[0].base_color_texture is None
    assert not sc.images
