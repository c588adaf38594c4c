"""Minimal inputs that once crashed a decoder (found by fuzzing), each pinned
to the clean FormatError it must give now: exact class and offset."""
import pytest

import potsherd
from potsherd import registry
from potsherd.core.errors import FormatError, InternalDecodeError


def refuse(data: bytes, fmt: str) -> FormatError:
    if fmt not in {c.name for c in registry.codecs()}:
        pytest.skip(f"codec {fmt} is not available")
    with pytest.raises(FormatError) as ei:
        potsherd.read(data, format=fmt)
    assert not isinstance(ei.value, InternalDecodeError), ei.value
    return ei.value


@pytest.mark.parametrize("data,offset", [
    (b'A: "abc', 3),        # unterminated string as a value
    (b"A: :", 3),           # a lone ':' as a value
    (b":", 0),              # a lone ':' where a node name is expected
    (b'"x', 0),             # an unterminated string where a node name is expected
    (b"A: 1 {\n :\n}", 8),  # inside a block
])
def test_fbx_ascii_unmatched_token_is_a_format_error(data, offset):
    # was: AttributeError: 'NoneType' object has no attribute 'lastgroup' (fbx/ascii.py)
    e = refuse(data, "fbx-ascii")
    assert type(e) is FormatError and e.offset == offset
    assert "unexpected" in e.message and e.expected


def test_fbx_json_node_without_children_key_builds():
    # was: KeyError 'children' in fbx/jsonform.py tree_from_json, surfacing as a
    # JsonFormatError without a path; a node without "children" is a null record
    if "fbx" not in {c.name for c in registry.codecs()}:
        pytest.skip("codec fbx is not available")
    doc = {"potsherd": 1, "format": "fbx", "form": "wire", "params": {"version": 7400},
           "root": {"nodes": [{"name": "A", "props": []}]}}
    data = potsherd.from_json(doc).encode()
    back = potsherd.read(data)
    assert [(c.name, c.children) for c in back.root.children] == [(b"A", None)]


def test_json_float_array_value_beyond_f32_is_refused():
    # was: silently stored as +inf (numpy overflow warning) in layout._np_from_json
    import numpy as np
    from potsherd.core.errors import JsonFormatError
    from potsherd.core.layout import JsonCtx, _np_from_json
    with pytest.raises(JsonFormatError) as ei:
        _np_from_json([1.0, 1e308], np.dtype("<f4"), (), JsonCtx("readable"), "$.root.v")
    assert ei.value.path == "$.root.v" and "out of range" in ei.value.message
    assert _np_from_json([1.5, float("inf")], np.dtype("<f4"), (), JsonCtx("readable"), "$")[1] \
        == float("inf")


def fbx_seed(name: str) -> bytes:
    import fuzz_fbx
    if "fbx" not in {c.name for c in registry.codecs()}:
        pytest.skip("codec fbx is not available")
    return potsherd.from_json(fuzz_fbx.seed_documents()[name]()).encode()


@pytest.mark.parametrize("damage", ["checksum", "count"])
def test_fbx_array_whose_payload_does_not_inflate_still_dumps_to_json(damage):
    # was: the file decodes (arrays inflate lazily) but to_json raised
    # "bad zlib stream in array" / "does not inflate to its declared count"
    import json
    import struct
    data = bytearray(fbx_seed("binary-7400"))
    z = data.index(b"\x78\x01")               # the first zlib array payload
    if damage == "checksum":
        data[z + 2] ^= 0x01                    # damages the deflate data
    else:
        count_at = z - 12                      # u32 count, u32 encoding, u32 length
        assert struct.unpack_from("<I", data, count_at + 4)[0] == 1
        struct.pack_into("<I", data, count_at, 1000)
    data = bytes(data)
    doc = potsherd.read(data, format="fbx")
    assert doc.encode() == data
    for form in ("wire", "readable"):
        text = json.dumps(doc.to_json(form))
        assert potsherd.from_json(text).encode() == data


def test_darkstar_info_of_a_shape_whose_material_slot_holds_another_class(corpus):
    # was: KeyError 'materials' in darkstar/info.py material_info (potsherd info /
    # validate on a damaged shape); built here from a real shape by the encoder
    import copy
    from potsherd import cli
    files = sorted((p for p in corpus("darkstar").rglob("*") if p.suffix.lower() == ".dts"),
                   key=lambda p: p.stat().st_size)
    for f in files:
        doc = potsherd.read(f)
        p = doc.root["payload"]
        if isinstance(p, dict) and isinstance(p.get("materials"), dict) and p["meshes"]:
            break
    else:
        pytest.skip("no Darkstar shape with a material list and a mesh")
    p["materials"] = copy.deepcopy(p["meshes"][0])     # a CelAnimMesh where the list goes
    data = doc.encode()
    damaged = potsherd.read(data)
    assert bytes(damaged.root["payload"]["materials"]["className"]) == b"TS::CelAnimMesh"
    info = cli.summary(str(f), data, damaged)
    assert info["material_list"].startswith("TS::CelAnimMesh") and "materials" not in info


@pytest.mark.parametrize("value,tail", [([[]], (4,)), ([[], []], (4,)), ([[], []], ())])
def test_json_numeric_array_of_empty_rows_is_refused(value, tail):
    # was: ValueError "cannot reshape array of size 0 into shape (1,4)" in
    # layout._np_from_json (a quat array given as [[]]), or silently read as empty
    import numpy as np
    from potsherd.core.errors import JsonFormatError
    from potsherd.core.layout import JsonCtx, _np_from_json
    with pytest.raises(JsonFormatError) as ei:
        _np_from_json(value, np.dtype("<f4"), tail, JsonCtx("readable"), "$.root.keys")
    assert ei.value.path == "$.root.keys" and "rows must have shape" in ei.value.message
    assert _np_from_json([], np.dtype("<f4"), tail, JsonCtx("readable"), "$").shape == (0,) + tail


def test_fbx_json_with_a_short_creation_time_and_derived_file_id_is_an_encode_error():
    # was: ValueFormatError from model._time_bytes while encoding (not an EncodeError)
    import json
    data = fbx_seed("binary-7400")
    doc = json.loads(json.dumps(potsherd.read(data, format="fbx").to_json("readable")))
    doc["params"]["file_id"] = "derived"
    doc["root"]["nodes"].insert(0, {"name": "FileId", "props": [["R", {"base64": "AA=="}]],
                                    "children": None})
    doc["root"]["nodes"].insert(1, {"name": "CreationTime", "props": [["S", "2021-09-02 12:31:52:7"]],
                                    "children": None})
    with pytest.raises(potsherd.EncodeError) as ei:
        potsherd.from_json(doc).encode()
    assert ei.value.path == "CreationTime" and "YYYY-MM-DD" in ei.value.message


@pytest.mark.parametrize("change,path", [
    ({"verts": [0.0] * 8}, "Objects/Geometry/Vertices"),       # not x, y, z triples
    ({"translation": ("S", "x")}, "Objects/Model::tri/Lcl Translation"),  # not a number
    ({"up_axis": ("S", "")}, "GlobalSettings/UpAxis"),          # not an integer
])
def test_fbx_scene_of_damaged_values_is_a_format_error(change, path):
    # was: ValueError (reshape / float() / int()) in fbx/scene.py, reported by
    # `potsherd convert` as "internal error in fbx to_scene"
    import fuzz_fbx
    from potsherd.core.errors import ValueFormatError
    from potsherd.export.gltf import document_scene
    fbx_seed("binary-7400")  # skips when the codec is absent
    good = potsherd.read(potsherd.from_json(fuzz_fbx.scene_document()).encode())
    assert len(document_scene(good).meshes) == 1
    bad = potsherd.read(potsherd.from_json(fuzz_fbx.scene_document(**change)).encode())
    with pytest.raises(ValueFormatError) as ei:
        document_scene(bad)
    assert ei.value.path == path


def dts_whose_material_slot_holds_a_mesh() -> bytes:
    """A shape made by the .dts importer, its material list replaced by a copy
    of its first mesh (a CelAnimMesh where the list goes), encoded."""
    import copy
    from export_scenes import textured_quad_scene
    from potsherd.importer import target_codec
    doc = target_codec("x.dts", "dts").from_scene(textured_quad_scene(), like=None,
                                                  out_name="quad.dts", out_dir=".")
    doc = doc[0][1] if isinstance(doc, list) else doc
    p = doc.root["payload"]
    assert bytes(p["materials"]["className"]) == b"TS::MaterialList" and p["meshes"]
    p["materials"] = copy.deepcopy(p["meshes"][0])
    return doc.encode()


def test_darkstar_scene_of_a_shape_whose_material_slot_holds_another_class():
    # was: KeyError 'materials' in darkstar/scene.py _materials, reported as
    # "SceneExportError: internal error in dts to_scene" (the info summary had
    # the same bug, fixed before; both now take pers.class_payload)
    from potsherd.export.gltf import document_scene
    damaged = potsherd.read(dts_whose_material_slot_holds_a_mesh(), format="dts")
    scene = document_scene(damaged)
    assert not scene.materials and len(scene.meshes) == 1
    assert "material list (b'TS::CelAnimMesh' v3) is not a decoded TS::MaterialList; " \
        "no materials" in scene.warnings


def test_dts_import_like_a_shape_whose_material_slot_holds_another_class(tmp_path):
    # was: KeyError 'materials' in darkstar/importing material_list, reported as
    # "SceneImportError: internal error in dts from_scene"
    from export_scenes import textured_quad_scene
    from potsherd.export.gltf import glb_bytes, scene_to_gltf
    from potsherd.importer import import_gltf
    like = potsherd.read(dts_whose_material_slot_holds_a_mesh(), format="dts")
    glb = glb_bytes(*scene_to_gltf(textured_quad_scene(), True))
    out = import_gltf(glb, tmp_path / "o.dts", like=like)
    back = potsherd.read(tmp_path / "o.dts")
    assert out["format"] == "dts"
    assert bytes(back.root["payload"]["materials"]["className"]) == b"TS::MaterialList"


@pytest.mark.parametrize("item,missing", [
    ({"lead": "", "kind": "text"}, "['text']"),
    ({"kind": "field", "key": "a"}, "['value']"),
    ({"kind": "object", "body": None}, "['class']"),
])
def test_mission_json_item_without_its_kinds_keys_is_an_encode_error(item, missing):
    # was: KeyError 'text' in darkstar/mission.py _emit, surfacing as the
    # registry's "malformed document: KeyError" JsonFormatError at $
    if "mis" not in {c.name for c in registry.codecs()}:
        pytest.skip("codec mis is not available")
    doc = {"potsherd": 1, "format": "mis", "form": "wire", "params": {}, "meta": {},
           "trailing": "", "root": {"items": [{"lead": "", "kind": "text", "text": "x;"}, item],
                                    "end": ""}}
    with pytest.raises(potsherd.EncodeError) as ei:
        potsherd.from_json(doc)
    assert ei.value.path == "$.items[1]" and ei.value.message == f"missing {missing}"
    doc["root"]["items"][1] = {"kind": ["text"]}       # not a kind (nor hashable)
    with pytest.raises(potsherd.EncodeError) as ei:
        potsherd.from_json(doc)
    assert ei.value.path == "$.items[1].kind"


def test_json_document_without_a_parameter_its_layout_needs_is_an_encode_error(tmp_path):
    # was: FormatError (not EncodeError) "expression refers to unknown or absent
    # field 'mesh_pad'" encoding a tr4wad whose JSON envelope had lost its params
    # (core/expr.py Scope.lookup: a lookup while encoding is the document's lack)
    from export_scenes import textured_quad_scene
    from potsherd.export.gltf import glb_bytes, scene_to_gltf
    from potsherd.importer import import_gltf
    if "tr4wad" not in {c.name for c in registry.codecs()}:
        pytest.skip("codec tr4wad is not available")
    import_gltf(glb_bytes(*scene_to_gltf(textured_quad_scene(), True)), tmp_path / "q.wad")
    doc = potsherd.read(tmp_path / "q.wad", format="tr4wad")
    obj = doc.to_json("wire")
    assert potsherd.from_json(obj).encode() == doc.encode()
    obj["params"] = []                  # (read as no params)
    with pytest.raises(potsherd.EncodeError) as ei:
        potsherd.from_json(obj).encode()
    assert ei.value.path == "wad.meshes[0].pad" and "'mesh_pad'" in ei.value.message


def test_tr5_level_whose_level_chunk_did_not_parse_has_no_scene():
    # was: KeyError 'object_textures' in trle/levelscene.py _Builder, reported as
    # "SceneExportError: internal error in tr5level to_scene"
    import fuzz_trle
    from potsherd.export.gltf import document_scene
    if "tr5level" not in {c.name for c in registry.codecs()}:
        pytest.skip("codec tr5level is not available")
    data = fuzz_trle.minimal_level("tr5")
    good = potsherd.read(data, format="tr5level")
    assert document_scene(good).meshes == []             # (zero counts: an empty scene)
    size = good.root["level_size"]
    start = len(data) - 4 - size                          # the chunk, stored uncompressed
    bad = potsherd.read(data[:start] + b"\xff" * size + data[-4:], format="tr5level")
    assert "the level chunk did not parse; kept raw" in bad.warnings
    with pytest.raises(FormatError) as ei:
        document_scene(bad)
    assert type(ei.value) is FormatError and ei.value.path == "level"
    assert "did not parse (kept raw)" in ei.value.message
