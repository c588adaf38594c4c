"""Hostile values reaching the FBX scene export and the JSON loader: a word
where an ASCII file needs a number is a ValueFormatError naming the node
path (never a ValueError out of ``to_scene``), and a readable-form f32 value
beyond float32 range is refused instead of silently becoming inf."""
from __future__ import annotations

import json

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import FormatError, JsonFormatError, ValueFormatError
from potsherd.formats.fbx import FbxArray, FbxNode

from test_fbx_binary import make_doc
from test_fbx_scene import QUAD

TAKE6 = """; FBX 6.1.0 project file
FBXHeaderExtension:  {
\tFBXVersion: 6100
}
Objects:  {
\tModel: "Model::Cube", "Mesh" {
\t\tProperties60:  {
\t\t\tProperty: "Lcl Translation", "Lcl Translation", "A",0,0,0
\t\t}
\t\tVertices: 0,0,0,1,0,0,0,1,0
\t\tPolygonVertexIndex: 0,1,-3
\t}
}
Connections:  {
\tConnect: "OO", "Model::Cube", "Model::Scene"
}
Takes:  {
\tTake: "Take 001" {
\t\tModel: "Model::Cube" {
\t\t\tChannel: "Transform" {
\t\t\t\tChannel: "T" {
\t\t\t\t\tChannel: "X" {
\t\t\t\t\t\tDefault: 1
\t\t\t\t\t\tKeyVer: 4005
\t\t\t\t\t\tKeyCount: 2
\t\t\t\t\t\tKey: 4618615800,0,L,46186158000,2,L
\t\t\t\t\t}
\t\t\t\t}
\t\t\t}
\t\t}
\t}
}
"""


def _scene(text: str):
    doc = potsherd.read(text.encode())
    return doc.codec.to_scene(doc)


def test_unedited_texts_export():
    assert len(_scene(QUAD).meshes) == 1
    sc = _scene(TAKE6)
    assert len(sc.meshes) == 1
    x = [c for c in sc.animations[0].channels if c.path == "translation"][0]
    assert x.values[0].tolist() == [0, 0, 0] and x.values[-1].tolist() == [2, 0, 0]


# (text, replaced, replacement, path named by the error); the sites the fuzzer
# reported: transforms (build), material factors and colours, the unit and
# axis settings, Vertices / PolygonVertexIndex (mesh), layer data and
# indices (layer_node), Materials, and a 6.x Take's channel Default
QUAD_CASES = {
    "translation": ('"A",1,2,3', '"A",one,2,3', "Objects/Model::Quad/Lcl Translation"),
    "translation_quoted": ('"A",1,2,3', '"A","1",2,3', "Objects/Model::Quad/Lcl Translation"),
    "rotation_order": ('"A",0,0,90\n', '"A",0,0,90\n\t\t\tP: "RotationOrder", "enum", "", "",XYZ\n',
                       "Objects/Model::Quad/RotationOrder"),
    "opacity": ('"Number", "",0.5', '"Number", "",half', "Objects/Material::Blue/Opacity"),
    "diffuse_color": ('"A",1,0,0', '"A",red,0,0', "Objects/Material::Red/DiffuseColor"),
    "unit": ('"Number", "",100', '"Number", "",cm', "GlobalSettings/UnitScaleFactor"),
    "up_axis_sign": ('"UpAxisSign", "int", "Integer", "",1', '"UpAxisSign", "int", "Integer", "",up',
                     "GlobalSettings/UpAxisSign"),
    "up_axis_inf": ('"UpAxis", "int", "Integer", "",2', '"UpAxis", "double", "Number", "",1e400',
                    "GlobalSettings/UpAxis"),
    "vertices": ("a: 0,0,0,1,0,0", "a: 0,0,0,one,0,0", "/Objects/Geometry/Vertices"),
    "vertices_string": ("a: 0,0,0,1,0,0", 'a: 0,0,0,"x",0,0', "Objects/Geometry::Quad/Vertices"),
    "polygon_index": ("a: 0,1,2,-4,1,4,-3", "a: 0,1,2,-4,1,four,-3",
                      "/Objects/Geometry/PolygonVertexIndex"),
    "normals": ("a: 0,0,1,0,0,1,0,0,1,0,0,1,0,0,1,0,0,1,0,0,1",
                "a: 0,0,1,0,0,1,0,0,1,0,0,1,0,0,1,0,0,1,0,0,up",
                "/Objects/Geometry/LayerElementNormal/Normals"),
    "uv_index": ("a: 0,1,2,3,1,1,2", "a: 0,1,2,3,1,1,two", "/Objects/Geometry/LayerElementUV/UVIndex"),
    "materials": ("a: 0,1\n", "a: 0,blue\n", "/Objects/Geometry/LayerElementMaterial/Materials"),
}


@pytest.mark.parametrize("case", sorted(QUAD_CASES))
def test_word_values_in_ascii_quad_are_value_format_errors(case):
    old, new, path = QUAD_CASES[case]
    assert QUAD.count(old) == 1
    with pytest.raises(ValueFormatError) as e:
        _scene(QUAD.replace(old, new))
    assert e.value.path == path


TAKE_CASES = {
    "take_default": ("Default: 1", "Default: one", "Takes/Take/Model::Cube/Channel/X/Default"),
    "scalar_list_vertices": ("Vertices: 0,0,0,1", "Vertices: 0,0,zero,1",
                             "Objects/Model::Cube/Vertices"),
    "scalar_list_index": ("PolygonVertexIndex: 0,1,-3", "PolygonVertexIndex: 0,one,-3",
                          "Objects/Model::Cube/PolygonVertexIndex"),
}


@pytest.mark.parametrize("case", sorted(TAKE_CASES))
def test_word_values_in_ascii_6x_are_value_format_errors(case):
    old, new, path = TAKE_CASES[case]
    assert TAKE6.count(old) == 1
    with pytest.raises(ValueFormatError) as e:
        _scene(TAKE6.replace(old, new))
    assert e.value.path == path


def test_every_word_substitution_is_a_format_error():
    """A word in place of each number of the quad file, one at a time: the
    export either works or refuses with a FormatError, nothing else."""
    import re
    refused = 0
    numbers = list(re.finditer(r"(?<=[ ,])-?\d+(\.\d+)?(?=[,\n])", QUAD))
    assert len(numbers) > 60
    for m in numbers:
        text = QUAD[:m.start()] + "word" + QUAD[m.end():]
        try:
            _scene(text)
        except FormatError:
            refused += 1
    assert refused > len(numbers) // 2


def _f32_json(values: list) -> dict:
    doc = make_doc([FbxNode(b"Objects", [], [
        FbxNode(b"W", [("f", FbxArray("f", np.array([1.5, 2.0], "<f4")))])])])
    doc = potsherd.read(potsherd.write(doc))
    obj = json.loads(json.dumps(doc.codec.to_json(doc, form="readable")))
    obj["root"]["nodes"][0]["children"][0]["props"][0][1]["values"] = values
    return obj


def test_f32_value_beyond_float32_range_is_refused_with_its_path():
    with pytest.raises(JsonFormatError) as e:
        potsherd.from_json(_f32_json([1.5, 1e39]))
    assert e.value.path == "$.root.nodes[0].children[0].props[0].values[1]"
    assert e.value.found == 1e39


def test_f32_values_in_range_and_explicit_inf_load():
    doc = potsherd.from_json(_f32_json([3e38, -3.4e38]))
    vals = doc.root.children[0].children[0].props[0][1].values
    assert vals.dtype == np.float32 and vals.tolist() == [np.float32(3e38), np.float32(-3.4e38)]
    obj = _f32_json([1.0, 2.0])
    obj["root"]["nodes"][0]["children"][0]["props"][0][1]["values"] = [float("inf"), 2.0]
    doc = potsherd.from_json(json.loads(json.dumps(obj)))
    assert np.isinf(doc.root.children[0].children[0].props[0][1].values[0])


def test_far_key_time_does_not_size_the_sampling_grid():
    # was (fuzz, --derived scene): a mutated KTime made the 30 fps grid
    # billions of samples long; such a span keeps the key times only
    far = TAKE6.replace("46186158000,2,L", "4618615800000000,2,L")
    sc = _scene(far)
    x = [c for c in sc.animations[0].channels if c.path == "translation"][0]
    assert x.times.tolist() == [np.float32(0.1), np.float32(100000.0)]
    assert x.values.tolist() == [[0, 0, 0], [2, 0, 0]]
    assert any("sampled at its key times only" in w for w in sc.warnings)
    near = _scene(TAKE6)
    assert len([c for c in near.animations[0].channels if c.path == "translation"][0].times) == 28
