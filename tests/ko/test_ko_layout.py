"""Knight Online record formats: exact bytes for every record type and variant.

Every fixture is laid out here by hand with ``struct`` from the format note
(never copied from the corpus); the codec must decode it, reproduce it byte
for byte, and build the same bytes from a document written in Python.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import potsherd
from potsherd import Document, FormatError
from potsherd.core.errors import CountError, TruncatedError
from potsherd.core.values import RawString
from potsherd.formats.ko.codecs import CODECS, LAYOUT, replay_pmesh
from ko_bytes import f32, i16, i32, s, u8, u16, u32   # independent of the layout engine


MATERIAL_VALUES = [0.5, 0.25, 1.0, 1.0] * 4 + [2.0]
MATERIAL = f32(*MATERIAL_VALUES) + u32(4, 2, 0, 0x5, 5, 6)


def material_doc() -> dict:
    return {"diffuse": [0.5, 0.25, 1.0, 1.0], "ambient": [0.5, 0.25, 1.0, 1.0],
            "specular": [0.5, 0.25, 1.0, 1.0], "emissive": [0.5, 0.25, 1.0, 1.0],
            "power": 2.0, "colorOp": 4, "colorArg1": 2, "colorArg2": 0, "renderFlags": 5,
            "sourceBlend": 5, "destinationBlend": 6}


def key_bytes(kind: int | None, values: list[list[float]], rate: float = 30.0) -> bytes:
    if kind is None:
        return i32(0)
    flat = [x for v in values for x in v]
    return i32(len(values)) + u32(kind) + f32(rate) + f32(*flat)


EMPTY_KEY = {"count": 0, "values": np.zeros((0, 0), np.float32)}


def transform_bytes(name: bytes) -> bytes:
    return (s(name) + f32(1, 2, 3) + f32(0, 0, 0, 1) + f32(1, 1, 1) + i32(0) * 3
            + s(b"col.n3vmesh") + s(b""))


def transform_doc(name: bytes) -> dict:
    return {"name": name, "position": [1.0, 2.0, 3.0], "rotation": [0.0, 0.0, 0.0, 1.0],
            "scale": [1.0, 1.0, 1.0], "keys": [dict(EMPTY_KEY) for _ in range(3)],
            "collisionMesh": b"col.n3vmesh", "climbMesh": b""}


def check(fmt: str, data: bytes, root: dict | None = None, params: dict | None = None,
          **decode_params) -> Document:
    """Decode ``data``, re-encode it exactly, build it from ``root`` (if given)
    and go through both JSON forms."""
    doc = potsherd.read(data, format=fmt, **decode_params)
    assert doc.encode() == data
    if root is not None:
        built = Document(fmt, root, dict(params if params is not None else doc.params)).encode()
        assert built == data
    for form in ("wire", "readable"):
        j = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.from_json(j).encode() == data
    return doc


def test_every_codec_is_registered_case_insensitively():
    names = {c.name for c in CODECS}
    assert {"n3cpart", "n3cplug", "n3cplug_cloak", "n3shape", "n3chr", "n3joint", "n3cskins",
            "n3skin", "n3imesh", "n3fxplug", "n3anim", "n3sky", "n3pmesh", "fxb", "gtd", "opd",
            "uif"} <= names
    from potsherd import registry
    assert registry.detect(b"", "X/Y/NPC_EL_RF_ROG.N3ANIM").name == "n3anim"
    assert registry.detect(b"", "a.N3CPLUG_CLOAK").name == "n3cplug_cloak"


# --- n3cpart / material ---------------------------------------------------------

def test_n3cpart_exact_bytes():
    data = s(b"part") + u32(7) + MATERIAL + s(b"tex.dxt") + s(b"skin.n3cskins")
    root = {"name": b"part", "reserved": 7, "material": material_doc(),
            "texture": b"tex.dxt", "geometry": b"skin.n3cskins"}
    doc = check("n3cpart", data, root)
    assert doc.root["material"]["destinationBlend"] == 6
    assert doc.info()["skins"] == "skin.n3cskins"


# --- n3pmesh ----------------------------------------------------------------------

def pmesh_bytes(name: bytes = b"m") -> bytes:
    verts = f32(*([0.0] * 8 * 4))
    # full detail: 4 vertices, 2 triangles; lowest detail: 3 vertices, 1 triangle
    return (s(name) + i32(1, 2, 4, 6, 3, 3) + verts + u16(0, 1, 2, 0, 2, 2)
            + i32(3, 2, 1, -4, 2) + u8(1) + b"\xaa\xbb\xcc"  # negative offset, raw padding
            + i32(4, 5) + i32(1) + f32(10.0) + i32(4))


def pmesh_doc(name: bytes = b"m") -> dict:
    return {"name": name, "collapseCount": 1, "changeCount": 2, "vertexCount": 4,
            "indexCount": 6, "minVertexCount": 3, "minIndexCount": 3,
            "vertices": np.zeros(32, np.float32), "indices": [0, 1, 2, 0, 2, 2],
            "collapses": [{"indicesToLose": 3, "indicesToChange": 2, "verticesToLose": 1,
                           "indexChangesOffset": -4, "collapseTo": 2, "shouldCollapse": 1,
                           "padding": b"\xaa\xbb\xcc"}],
            "indexChanges": [4, 5], "lodCount": 1, "lods": [{"distance": 10.0, "vertexCount": 4}]}


def test_n3pmesh_exact_bytes_and_full_detail_replay():
    data = pmesh_bytes()
    doc = check("n3pmesh", data, pmesh_doc())
    assert doc.root["collapses"][0]["indexChangesOffset"] == -4
    nv, ni, idx = replay_pmesh(doc.root)
    # the negative offset is clamped to 0 when replaying: indices 4 and 5 -> vertex 3
    assert (nv, ni) == (4, 6)
    assert idx.tolist() == [0, 1, 2, 0, 3, 3]
    info = doc.info()
    assert info["fullDetail"] == {"vertices": 4, "faces": 2}
    assert info["minFaces"] == 1 and info["lods"] == [{"distance": 10.0, "vertices": 4}]



def test_n3pmesh_collapses_and_lods_are_tables():
    """Fixed records decode as one structured array, dump as JSON columns, load
    from columns or rows, and encode edits and added rows with the count following."""
    data = pmesh_bytes()
    doc = potsherd.read(data, format="n3pmesh")
    c, lods = doc.root["collapses"], doc.root["lods"]
    assert isinstance(c, np.ndarray) and c.dtype.itemsize == 24 and len(c) == 1
    assert c.dtype.names == ("indicesToLose", "indicesToChange", "verticesToLose",
                             "indexChangesOffset", "collapseTo", "shouldCollapse", "padding")
    assert c["indexChangesOffset"].tolist() == [-4] and bytes(c["padding"][0]) == b"\xaa\xbb\xcc"
    assert lods.dtype.itemsize == 8 and lods["distance"].tolist() == [10.0]
    j = doc.to_json("wire")["root"]
    assert j["collapses"]["collapseTo"] == [2] and j["collapses"]["padding"] == ["aabbcc"]
    assert j["lods"] == {"distance": [0x41200000], "vertexCount": [4]}   # f32 bit patterns
    assert doc.to_json("readable")["root"]["lods"] == {"distance": [10.0], "vertexCount": [4]}
    # one object per row is accepted on load as well
    rows = doc.to_json("readable")
    rows["root"]["collapses"] = [{"indicesToLose": 3, "indicesToChange": 2, "verticesToLose": 1,
                                  "indexChangesOffset": -4, "collapseTo": 2, "shouldCollapse": 1,
                                  "padding": "aabbcc"}]
    assert potsherd.from_json(rows).encode() == data
    # a column edit reaches exactly its bytes; an appended row regenerates lodCount
    c["collapseTo"][0] = 7
    doc.root["lods"] = np.append(lods, lods[:1])
    out = doc.encode()
    at = data.index(i32(3, 2, 1, -4, 2))
    assert out[at:at + 20] == i32(3, 2, 1, -4, 7)
    assert out.endswith(i32(2) + f32(10.0) + i32(4) + f32(10.0) + i32(4))
    assert potsherd.read(out, format="n3pmesh").root["lodCount"] == 2


def test_every_array_of_fixed_records_is_a_table():
    """A guard for new rows: an array whose record could be one table row must be a
    table, and one whose record is fixed fields then counted numeric arrays a ragged
    table (except where the arrays are short and many: see below)."""
    from potsherd.core.layout import RaggedTable, Table, record_dtype
    from potsherd.core.layout.arrays import Array
    from potsherd.core.layout.ragged import _Plan
    tables, ragged, arrays_of_records, could_be_ragged = set(), set(), set(), set()
    for name, rec in LAYOUT.records.items():
        for f in getattr(rec, "fields", ()):
            st = f.storage
            if isinstance(st, RaggedTable):
                ragged.add(f"{name}.{f.name}")
            elif isinstance(st, Table):
                tables.add(f"{name}.{f.name}")
            elif type(st) is Array and hasattr(st.item, "fields"):
                assert record_dtype(st.item) is None, f"{name}.{f.name} should be a table"
                arrays_of_records.add(f"{name}.{f.name}")
                try:
                    _Plan(st.item)
                    could_be_ragged.add(f"{name}.{f.name}")
                except ValueError:
                    pass
    assert tables == {"n3pmesh.collapses", "n3pmesh.lods", "gtd.points", "gtd.patches",
                      "terrainTiles.tiles", "gev.events", "grs.grasses"}
    assert ragged == {"n3cskin.bindings"}
    # an opd cell's 16 subcells (a count and its triangles): per-cell column
    # arrays would cost more than the 16 dicts they replace
    assert could_be_ragged == {"maincell.subcells", "opdextCell.subcells"}
    # negative control: records with strings or conditions stay arrays
    assert {"n3sky.dayChanges", "n3anim.clips"} <= arrays_of_records - could_be_ragged


def test_n3pmesh_appended_bytes_are_kept_with_a_warning():
    data = pmesh_bytes() + b"APPENDED"
    doc = potsherd.read(data, format="n3pmesh")
    assert doc.trailing == b"APPENDED"
    assert "8 bytes after the end of the n3pmesh record" in doc.warnings[0]
    assert doc.encode() == data


def test_n3pmesh_truncated_raises_with_offset():
    data = pmesh_bytes()
    with pytest.raises(FormatError) as e:
        potsherd.read(data[:30], format="n3pmesh")
    # name (5 bytes) + 6 counts = 29; vertices need 128 bytes, 1 left
    assert e.value.offset == 29
    assert "vertices" in e.value.path


# --- n3cplug / n3cplug_cloak -------------------------------------------------------

PLUG_BASE = (s(b"plug") + u32(0) + i32(5) + f32(0, 1, 0)
             + f32(*[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]) + f32(1, 1, 1)
             + MATERIAL + s(b"sword.n3pmesh") + s(b"sword.dxt"))


def plug_doc() -> dict:
    return {"name": b"plug", "type": 0, "joint": 5, "position": [0.0, 1.0, 0.0],
            "rotation": [1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0],
            "scale": [1.0, 1.0, 1.0], "material": material_doc(),
            "geometry": b"sword.n3pmesh", "texture": b"sword.dxt"}


def test_n3cplug_without_use_vmesh():
    data = PLUG_BASE + i32(0)  # traceStep 0, file ends: useVMesh absent
    root = {**plug_doc(), "traceStep": 0}
    doc = check("n3cplug", data, root)
    assert doc.params == {"plugTrailer": 1}
    assert "useVMesh" not in doc.root and "vmesh" not in doc.root


def test_n3cplug_trace_and_use_vmesh_zero():
    data = PLUG_BASE + i32(4) + u32(0xFF102030) + f32(1.5, 9.0) + i32(0)
    root = {**plug_doc(), "traceStep": 4, "traceColor": 0xFF102030, "traceStart": 1.5,
            "traceEnd": 9.0, "useVMesh": 0}
    doc = check("n3cplug", data, root)
    assert doc.info()["useVMesh"] == 0


def test_n3cplug_with_inline_pmesh():
    data = PLUG_BASE + i32(0) + i32(1) + pmesh_bytes(b"vm")
    root = {**plug_doc(), "traceStep": 0, "useVMesh": 1, "vmesh": pmesh_doc(b"vm")}
    doc = check("n3cplug", data, root)
    assert doc.info()["vmesh"] == {"vertices": 4, "faces": 2}


def test_n3cplug_unexplained_tail_kept():
    data = PLUG_BASE + i32(0) + i32(0) + b"\x01\x02\x03"
    doc = potsherd.read(data, format="n3cplug")
    assert doc.trailing == b"\x01\x02\x03" and doc.warnings
    assert doc.encode() == data


def test_n3cplug_cloak_has_no_trailer():
    doc = check("n3cplug_cloak", PLUG_BASE, plug_doc())
    assert doc.params == {"plugTrailer": 0}
    assert "traceStep" not in doc.root


# --- n3shape ------------------------------------------------------------------------

SHAPE_PART = (f32(0, 0, 0) + s(b"a.n3pmesh") + MATERIAL + i32(2) + f32(15.0)
              + s(b"t0.dxt") + s(b"\x00"))  # a string that is a single NUL byte


def shape_part_doc() -> dict:
    return {"pivot": [0.0, 0.0, 0.0], "mesh": b"a.n3pmesh", "material": material_doc(),
            "textureCount": 2, "textureFps": 15.0, "textures": [b"t0.dxt", b"\x00"]}


def test_n3shape_full_metadata():
    data = transform_bytes(b"shape") + i32(1) + SHAPE_PART + i32(1, 2, 3, 4, 5)
    root = {"transform": transform_doc(b"shape"), "partCount": 1, "parts": [shape_part_doc()],
            "belong": 1, "eventID": 2, "eventType": 3, "npcID": 4, "npcStatus": 5}
    doc = check("n3shape", data, root)
    assert doc.info()["metadataInts"] == 5
    assert doc.root["parts"][0]["textures"][1] == b"\x00"


def test_n3shape_short_metadata_only_belong():
    data = transform_bytes(b"old") + i32(1) + SHAPE_PART + i32(2)
    root = {"transform": transform_doc(b"old"), "partCount": 1, "parts": [shape_part_doc()],
            "belong": 2}
    doc = check("n3shape", data, root)
    assert doc.info()["metadata"] == {"belong": 2}


def test_n3shape_truncated_inside_an_int_raises():
    data = transform_bytes(b"old") + i32(1) + SHAPE_PART + i32(2)
    with pytest.raises(TruncatedError) as e:
        potsherd.read(data[:-2], format="n3shape")
    assert e.value.offset == len(data) - 4


def test_n3shape_foreign_layout_is_opaque_with_warning():
    # a plausible name, then a part count that asks for 2**30 parts
    data = transform_bytes(b"repent") + i32(1 << 30) + bytes(64)
    doc = potsherd.read(data, format="n3shape")
    assert doc.params == {"opaque": 1} and doc.root == {"body": data}
    assert "unknown layout" in doc.warnings[0]
    assert doc.encode() == data
    j = json.loads(json.dumps(doc.to_json("readable")))
    assert potsherd.from_json(j).encode() == data


# --- n3chr ---------------------------------------------------------------------------

def chr_bytes(fx: bytes | None, tail: bytes = b"") -> bytes:
    out = (transform_bytes(b"chr") + s(b"c.n3joint") + i32(2) + s(b"a.n3cpart") + s(b"b.n3cpart")
           + i32(1) + s(b"w.n3cplug") + s(b"c.n3anim") + i32(3, -1) + i32(10, -1))
    return out + (fx if fx is not None else b"") + tail


def chr_doc() -> dict:
    return {"transform": transform_doc(b"chr"), "joint": b"c.n3joint", "partCount": 2,
            "parts": [b"a.n3cpart", b"b.n3cpart"], "plugCount": 1, "plugs": [b"w.n3cplug"],
            "animationControl": b"c.n3anim", "jointPartStarts": [3, -1], "jointPartEnds": [10, -1]}


def test_n3chr_without_fxplug():
    doc = check("n3chr", chr_bytes(None), chr_doc())
    assert "fxPlug" not in doc.root
    info = doc.info()
    assert info["parts"] == ["a.n3cpart", "b.n3cpart"] and info["jointPartStarts"] == [3, -1]


def test_n3chr_fxplug_negative_length_and_tail():
    data = chr_bytes(i32(-1), b"\xff" * 12)
    doc = check("n3chr", data)
    fx = doc.root["fxPlug"]
    assert fx == b"" and fx.raw_len == -1
    assert doc.trailing == b"\xff" * 12
    assert doc.to_json("readable")["root"]["fxPlug"] == {"len": -1}
    built = Document("n3chr", {**chr_doc(), "fxPlug": RawString(b"", -1)}, {}, b"\xff" * 12)
    assert built.encode() == data


# --- n3joint -------------------------------------------------------------------------

def joint_bytes(nkeys: int) -> bytes:
    def one(name: bytes, children: bytes, nchild: int) -> bytes:
        keys = key_bytes(0, [[1, 2, 3], [4, 5, 6]], 15.0) + key_bytes(1, [[0, 0, 0, 1]]) + key_bytes(None, [])
        if nkeys == 4:
            keys += key_bytes(None, [])
        return (s(name) + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1) + keys + i32(nchild)
                + children)
    return one(b"root", one(b"child", b"", 0), 1)


@pytest.mark.parametrize("nkeys", [4, 3])
def test_n3joint_key_variants(nkeys):
    data = joint_bytes(nkeys)
    doc = check("n3joint", data)
    assert doc.params == {"jointKeys": nkeys}
    assert len(doc.root["keys"]) == nkeys
    pos = doc.root["keys"][0]
    assert pos["keyType"] == 0 and pos["samplingRate"] == 15.0
    assert pos["values"].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert doc.root["keys"][1]["values"].shape == (1, 4)
    info = doc.info()
    assert info["joints"] == 2 and info["keysPerJoint"] == nkeys
    assert info["tree"]["children"][0] == {"index": 1, "name": "child",
                                           "keys": [2, 1, 0] + [0] * (nkeys - 3)}


def test_n3joint_built_from_python():
    key = lambda kind, vals, rate=30.0: {"count": len(vals), "keyType": kind, "samplingRate": rate,
                                         "values": np.array(vals, np.float32)}
    def joint(name, children):
        return {"name": name, "position": [0.0] * 3, "rotation": [0.0, 0.0, 0.0, 1.0],
                "scale": [1.0] * 3,
                "keys": [key(0, [[1, 2, 3], [4, 5, 6]], 15.0), key(1, [[0, 0, 0, 1]]),
                         dict(EMPTY_KEY)],
                "childCount": len(children), "children": children}
    root = joint(b"root", [joint(b"child", [])])
    assert Document("n3joint", root, {"jointKeys": 3}).encode() == joint_bytes(3)


def test_n3joint_unknown_key_type_reads_no_values_and_warns():
    data = (s(b"j") + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1)
            + i32(2) + u32(2) + f32(30.0)  # type 2: the engine reads no values
            + i32(0) * 3 + i32(0))
    doc = check("n3joint", data)
    assert doc.root["keys"][0]["values"].shape == (2, 0)
    assert any("selects no case" in w for w in doc.warnings)


def test_n3joint_truncated_raises():
    data = joint_bytes(4)
    with pytest.raises(FormatError):
        potsherd.read(data[:-3], format="n3joint")


# --- n3cskins ------------------------------------------------------------------------

def skin_bytes() -> bytes:
    pos = f32(*range(18))  # 3 vertices x (position, normal)
    bindings = (f32(1, 2, 3) + i32(1) + b"PTRSPTRS" + i32(7)
                + f32(4, 5, 6) + i32(3) + b"\x01" * 8 + i32(1, 2, 3) + f32(0.5, 0.25, 0.25)
                + f32(7, 8, 9) + i32(0) + b"\x02" * 8)
    lod0 = (s(b"lod0") + i32(1, 3, 2) + pos + u16(0, 1, 2) + f32(0, 0, 1, 1) + u16(0, 1, 1)
            + bindings)
    empty = s(b"") + i32(0, 0, 0)
    return s(b"skins") + lod0 + empty * 3


def test_n3cskins_exact_bytes_and_presence_rules():
    data = skin_bytes()
    doc = check("n3cskins", data)
    lod0, lod1 = doc.root["lods"][0], doc.root["lods"][1]
    b = lod0["bindings"]
    assert [x["count"] for x in b] == [1, 3, 0]
    assert b[0]["joints"].tolist() == [7] and "weights" not in b[0]
    assert b[1]["weights"].tolist() == [0.5, 0.25, 0.25]
    assert b[1]["pointerPlaceholders"] == b"\x01" * 8
    # an empty LOD reads none of the arrays
    assert set(lod1) == {"name", "faceCount", "vertexCount", "uvCount"}
    info = doc.info()
    assert info["lods"][0] == {"name": "lod0", "faces": 1, "vertices": 3, "uvs": 2,
                               "maxWeightsPerVertex": 3}


def test_n3cskin_no_uvs_reads_no_uv_arrays():
    data = s(b"x") + i32(1, 3, 0) + f32(*range(18)) + u16(0, 1, 2) + (f32(0, 0, 0) + i32(0) + bytes(8)) * 3
    doc = check("n3skin", data)
    assert "uvs" not in doc.root and "uvIndices" not in doc.root
    imesh = s(b"x") + i32(1, 3, 0) + f32(*range(18)) + u16(0, 1, 2)
    doc = check("n3imesh", imesh)
    assert doc.params == {"skinBindings": 0} and "bindings" not in doc.root


# --- n3anim --------------------------------------------------------------------------

def test_n3anim_nul_counted_name_and_record_id():
    clip = (i32(0x0042F0A0) + f32(0, 30, 30) + f32(1, 2, 3, 4, 0.25) + u32(1) + f32(10, 20)
            + s(b"loop\x00"))
    data = i32(1) + clip
    root = {"count": 1, "clips": [{"recordId": 0x0042F0A0, "start": 0.0, "end": 30.0, "fps": 30.0,
                                    "metadata": [1.0, 2.0, 3.0, 4.0, 0.25], "flags": 1,
                                    "strikeValues": [10.0, 20.0], "name": b"loop\x00"}]}
    doc = check("n3anim", data, root)
    assert doc.root["clips"][0]["name"] == b"loop\x00"
    assert doc.info()["clips"] == [{"name": "loop", "start": 0.0, "end": 30.0, "fps": 30.0}]
    assert doc.to_json("readable")["root"]["clips"][0]["name"] == "loop\x00"


def test_n3anim_empty_file():
    check("n3anim", i32(0), {"count": 0, "clips": []})


# --- n3sky / n3fxplug ----------------------------------------------------------------

def test_n3sky_exact_bytes():
    data = (b"".join(s(b"sun%d" % i) for i in range(3)) + b"".join(s(b"c%d" % i) for i in range(6))
            + s(b"moon") + i32(1) + s(b"dawn") + i32(2) + u32(0x60000, 1, 2) + f32(3.5))
    root = {"suns": [b"sun0", b"sun1", b"sun2"], "clouds": [b"c%d" % i for i in range(6)],
            "moon": b"moon", "count": 1,
            "dayChanges": [{"name": b"dawn", "type": 2, "when": 0x60000, "param1": 1,
                            "param2": 2, "howLong": 3.5}]}
    doc = check("n3sky", data, root)
    assert doc.info()["dayChanges"] == 1


def test_n3fxplug_exact_bytes():
    data = (s(b"fxp") + i32(1) + s(b"p0") + s(b"fx.fxb") + i32(3) + f32(1, 2, 3) + f32(0, 1, 0)
            + b"EXTNSION")
    root = {"name": b"fxp", "partCount": 1,
            "parts": [{"name": b"p0", "bundle": b"fx.fxb", "jointIndex": 3,
                       "offsetPosition": [1.0, 2.0, 3.0], "offsetDirection": [0.0, 1.0, 0.0],
                       "extension": b"EXTNSION"}]}
    doc = check("n3fxplug", data, root)
    assert doc.info()["parts"] == [{"name": "p0", "bundle": "fx.fxb", "joint": 3}]


# --- fxb -----------------------------------------------------------------------------

TEXBASE = b"fx\\tex\\a.dxt\x00" + b"\xcd" * (260 - 13)  # junk after the NUL


def part_common(kind: int, version: int, base: int) -> bytes:
    out = f32(0.5) + u8(version, base) + f32(2.0) + u8(kind)
    out += f32(0, 0, 0) * 3 + u8(0) + f32(0, 0, 0) + i32(1) + f32(10.0) + TEXBASE
    if base < 2:
        out += i32(255)
    out += u32(5, 6) + f32(0.1, 0.2)
    if base >= 2:
        out += u32(1)
    return out


def billboard(version: int, base: int) -> bytes:
    out = i32(2) + part_common(2, version, base) + i32(1) + f32(1, 1) + u8(0) + f32(0.5)
    if version >= 3:
        out += u8(1)
    if version >= 4:
        out += f32(0, 0, 0, 0)
    if version >= 5:
        out += f32(*[0.0] * 16)
    if version >= 6:
        out += u8(1)  # the 1-byte extension (note row 6)
    return out


def particle(version: int, base: int) -> bytes:
    out = (i32(1) + part_common(1, version, base) + i32(8) + f32(1.0) + (f32(2.0) if version >= 4 else b"")
           + f32(1, 2) + f32(0, 0, 0) + f32(1, 1, 1) + f32(0.1) + i32(2) + u32(1) + f32(45.0)
           + f32(0, 1, 0) + f32(1, 0, 0, -9.8) + u8(1) + i32(2) + u32(0xFFFFFFFF, 0xFF000000)
           + u8(1) + f32(30.0) + TEXBASE)
    if version >= 5:
        out += f32(1, 2, 3)
    return out


def mesh_part(version: int) -> bytes:
    out = i32(3) + part_common(3, version, 2) + TEXBASE + u8(1) + f32(0.1, 0.2) + f32(1, 1, 1)
    if version >= 2:
        out += u8(1)
    if version >= 3:
        out += f32(0, 0, 0)
    if version >= 4:
        out += f32(30.0)
    if version >= 5:
        out += f32(1, 1, 1)
    return out


def bottom(version: int) -> bytes:
    out = i32(4) + part_common(4, version, 1) + f32(2, 3, 0.1, 0.1) + u8(0)
    if version >= 1:
        out += f32(0.5)
    return out


def fxb_bytes(version: int, slots: list[bytes]) -> bytes:
    n = 16 if version >= 1 else 8
    body = b"".join(slots) + i32(0) * (n - len(slots))
    return i32(version) + f32(3.0, 1.0) + u8(1) + body + (u8(0) if version >= 2 else b"")


def test_fxb_part_kinds_and_versions():
    data = fxb_bytes(2, [billboard(6, 2), billboard(4, 1), particle(5, 2), particle(4, 1),
                         mesh_part(5), bottom(1)])
    doc = check("fxb", data)
    slots = doc.root["slots"]
    assert slots[0]["extension"] == 1 and slots[0]["version"] == 6
    assert "extension" not in slots[1] and slots[1]["alpha"] == 255
    assert slots[0]["texBase"] == TEXBASE  # 260 bytes with junk after the NUL kept
    assert slots[2]["emitAngle"] == 45.0 and slots[2]["colors"].tolist() == [0xFFFFFFFF, 0xFF000000]
    assert slots[2]["shapeFile"] == TEXBASE
    assert slots[4]["unitScale"] == [1.0, 1.0, 1.0]
    assert doc.root["static"] == 0
    info = doc.info()
    assert info["version"] == 2
    assert [x["type"] for x in info["slots"][:7]] == ["billboard", "billboard", "particle",
                                                      "particle", "mesh", "bottomBoard", "empty"]


def test_fxb_version0_has_8_slots_and_no_static():
    data = fxb_bytes(0, [bottom(0)])
    doc = check("fxb", data)
    assert len(doc.root["slots"]) == 8 and "static" not in doc.root


def test_fxb_base_version_3_and_4_fields():
    # baseVersion 3: 2 x i32 after life; baseVersion 4: 260 bytes after renderFlag [code]
    part = (i32(4) + f32(0.5) + u8(1, 4) + f32(2.0) + i32(7, 8) + u8(4) + f32(0, 0, 0) * 3 + u8(0)
            + f32(0, 0, 0) + i32(1) + f32(10.0) + TEXBASE + u32(5, 6) + f32(0.1, 0.2) + u32(1)
            + b"N" * 260 + f32(2, 3, 0.1, 0.1) + u8(0) + f32(0.5))
    doc = check("fxb", fxb_bytes(1, [part]))
    slot = doc.root["slots"][0]
    assert slot["lifeExtra"].tolist() == [7, 8] and slot["baseName"] == b"N" * 260


def test_fxb_version_3_and_up_keeps_the_body_raw_with_warning():
    data = i32(5) + b"\x01\x02 unknown 2010 layout"
    doc = check("fxb", data, {"version": 5, "body": data[4:]})
    assert doc.root["body"] == data[4:]
    assert "kept raw" in doc.warnings[0]
    assert doc.codec.opaque_bytes(doc) == len(data) - 4


# --- gtd -----------------------------------------------------------------------------

MAP = 9  # (9 - 1) / 8 = 1 patch per side


def gtd_bytes(header: bool, legacy_river: bool = False, legacy_pond: bool = False,
              version: int = 2, tiles: bytes | None = None) -> bytes:
    out = (i32(version) + s(b"zone")) if header else b""
    pts = b"".join(f32(float(i)) + u32(0x7FE00000 | i) for i in range(MAP * MAP))
    out += i32(MAP) + pts + f32(5.0, 50.0) + bytes(range(MAP * MAP)) + b"grass.bmp\x00" + b"\x77" * 250
    out += tiles if tiles is not None else (i32(2, 1) + b"tile.gtt\x00".ljust(260, b"\x00") + i16(0, 3, 0, 7))
    out += i32(0)  # lightmaps
    river_vertex = f32(*[1.0] * 6) + u32(0xFF00FF00) + f32(0, 0, 1, 1)
    out += i32(1) + i32(1) + river_vertex + i32(6) + (b"" if legacy_river else s(b"water.dxt"))
    pond = i32(1) + i32(4) + (b"\x01\x02\x03\x04\x05\x06\x07\x08" if legacy_pond else s(b"pond.dxt"))
    pond += river_vertex + (f32(0.75) if header and version >= 2 else b"") + i32(6)
    out += i32(2) + pond + i32(0)  # the second pond is empty
    return out


@pytest.mark.parametrize("header,river,pond", [(True, False, False), (False, False, False),
                                               (False, True, False), (False, False, True),
                                               (False, True, True)])
def test_gtd_variants(header, river, pond):
    data = gtd_bytes(header, river, pond)
    doc = check("gtd", data)
    assert doc.params == {"gtdHeader": int(header), "legacyRivers": int(river),
                          "legacyPonds": int(pond)}
    r = doc.root
    assert r["points"]["height"][5] == 5.0 and r["points"]["tile"][5] == 0x7FE00005
    assert r["tileInfo"]["tiles"]["index"].tolist() == [3, 7]
    assert r["zoneName"][:10] == b"grass.bmp\x00" and len(r["zoneName"]) == 260
    p0 = r["ponds"][0]
    assert ("waveVariance" in p0) == header
    assert ("legacyData" in p0) == pond and ("texture" in p0) == (not pond)
    assert ("texture" in r["rivers"][0]) == (not river)
    assert set(r["ponds"][1]) == {"vertexCount"}
    info = doc.info()
    assert info["mapSize"] == MAP and info["tiles"] == 2 and info["tileSources"] == ["tile.gtt"]
    assert info["rivers"] == 1 and info["ponds"] == 2


def test_gtd_version1_header_has_no_wave_variance():
    doc = check("gtd", gtd_bytes(True, version=1))
    assert doc.root["version"] == 1 and "waveVariance" not in doc.root["ponds"][0]


def test_gtd_source_count_zero_stops_the_tile_block():
    data = gtd_bytes(True, tiles=i32(5, 0))
    doc = check("gtd", data)
    assert doc.root["tileInfo"] == {"tileCount": 5, "sourceCount": 0}


def test_gtd_stops_after_the_colour_map_name():
    full = gtd_bytes(False)
    end = 4 + MAP * MAP * 8 + 8 + MAP * MAP + 260
    doc = check("gtd", full[:end])
    assert "tileInfo" not in doc.root and "ponds" not in doc.root


def test_gtd_truncated_raises_and_obfuscated_is_opaque():
    data = gtd_bytes(True)
    with pytest.raises(FormatError):
        potsherd.read(data[:700], format="gtd")
    blob = bytes((i * 37 + 11) & 0xFF for i in range(5000))
    doc = potsherd.read(blob, format="gtd")
    assert doc.params == {"opaque": 1} and "obfuscated" in doc.warnings[0]
    assert doc.encode() == blob


def test_gtd_record_table_json_columns():
    doc = potsherd.read(gtd_bytes(True), format="gtd")
    j = doc.to_json("readable")["root"]["points"]
    assert set(j) == {"height", "tile"} and j["height"][:3] == [0.0, 1.0, 2.0]
    assert j["tile"][0] == 0x7FE00000


# --- opd -----------------------------------------------------------------------------

def placed_shape() -> bytes:
    return u32(0x1000) + transform_bytes(b"obj") + i32(1) + SHAPE_PART + i32(0, 1, 2, 3, 4)


def opd_bytes(header: bool, width: float = 32.0, cells: bytes | None = None) -> bytes:
    out = (i32(1) + s(b"zone")) if header else b""
    out += f32(width, 16.0) + i32(1) + f32(*range(9))
    if cells is None:  # 2 x 1 cells: the first present, the second not
        sub = i32(1) + u32(0, 1, 2) + i32(0) * 15
        cells = i32(1) + i32(2) + u16(0, 0) + sub + i32(0)
    return out + cells + i32(1) + placed_shape()


@pytest.mark.parametrize("header", [True, False])
def test_opd_header_variants(header):
    data = opd_bytes(header)
    doc = check("opd", data)
    assert doc.params == {"opdHeader": int(header), "gridCell": 16}
    cells = doc.root["cells"]
    assert len(cells) == 2 and cells[0]["subcells"][0]["triangles"].tolist() == [[0, 1, 2]]
    assert doc.root["objects"][0]["metadata"].tolist() == [0, 1, 2, 3, 4]
    info = doc.info()
    assert info["cells"] == 2 and info["cellsPresent"] == 1 and info["objects"] == 1


def test_opd_cell_grid_rounds_up():
    # width 40 m / 16 = 2.5 -> 3 cells; length 16 -> 1
    data = opd_bytes(False, 40.0, i32(0, 0, 0))
    doc = check("opd", data)
    assert len(doc.root["cells"]) == 3


def test_opd_grid_cell_parameter_override():
    # with gridCell 32 the 32 x 16 map has 1 x 1 cell
    data = opd_bytes(False, 32.0, i32(0))
    with pytest.raises(FormatError):
        potsherd.read(data, format="opd")  # gridCell 16 needs two cells
    doc = check("opd", data, gridCell=32)
    assert doc.params["gridCell"] == 32 and len(doc.root["cells"]) == 1


def test_opd_foreign_layout_opaque_but_truncation_raises():
    data = opd_bytes(False)
    with pytest.raises(FormatError):
        potsherd.read(data[:-10], format="opd")
    # a plausible header then an absurd shape count: another build's layout
    foreign = f32(32.0, 16.0) + i32(0) + i32(1) + i32(1 << 30) + bytes(100)
    doc = potsherd.read(foreign, format="opd")
    assert doc.params == {"opaque": 1} and "Hero Online" in doc.warnings[0]
    assert doc.encode() == foreign
    assert doc.info() == {"format": "opd", "family": "ko", "opaque": True}
    # an explicit parameter disables the fallback
    with pytest.raises(CountError):
        potsherd.read(foreign, format="opd", gridCell=16)


# --- uif -----------------------------------------------------------------------------

def uif_base(name: bytes, children: list[tuple[int, bytes]], vw: int, ident: bytes) -> bytes:
    out = s(name) + i16(len(children), vw)
    for t, node in children:
        out += u32(t) + node
    return (out + s(ident) + i32(0, 0, 100, 20) + i32(0, 0, 0, 0) + u32(0, 0) + s(b"tip")
            + s(b"open.wav") + s(b""))


def uif_bytes() -> bytes:
    button = uif_base(b"", [], 1, b"btn_ok") + i32(1, 2, 3, 4) + s(b"on.wav") + s(b"click.wav")
    image = uif_base(b"", [], 1, b"img") + s(b"ui\\a.dxt") + f32(0, 0, 1, 1) + f32(0.0)
    text1 = (uif_base(b"", [], 1, b"str1") + s("굴림".encode("cp949")) + u32(12, 1)
             + u32(0xFFFFFFFF) + s(b"Hello") + i32(2))  # versionWord 1: lineSpacing
    text0 = uif_base(b"", [], 0, b"str0") + s(b"") + u32(0xFF00FF00) + s(b"x")  # versionWord 0
    lst = uif_base(b"", [], 1, b"list") + s(b"Arial") + u32(10, 0xFF, 1, 0)
    edit = uif_base(b"", [], 1, b"edit") + s(b"c.wav") + s(b"t.wav")
    area = uif_base(b"", [], 0, b"area") + i32(3)
    static = uif_base(b"", [], 1, b"static") + s(b"s.wav")
    return uif_base(b"window", [(1, button), (4, image), (6, text1), (0x10006, text0), (14, lst),
                                (8, edit), (9, area), (2, static)], 1, b"root")


def test_uif_node_types_and_version_words():
    data = uif_bytes()
    doc = check("uif", data)
    assert doc.params == {"fileVersion": 1264, "spacingPresent": 0, "type": 0}
    kids = [c["node"] for c in doc.root["root"]["children"]]
    assert kids[2]["lineSpacing"] == 2 and kids[2]["fontFlags"] == 1
    assert "lineSpacing" not in kids[3] and "fontHeight" not in kids[3]  # type & 0xFFFF == 6
    assert kids[4]["fontBold"] == 1 and "fontFlags" not in kids[4]
    assert kids[6]["areaType"] == 3
    tree = doc.info()["tree"]
    assert tree["id"] == "root" and tree["name"] == "window"
    assert [c["type"] for c in tree["children"]] == ["button", "image", "string", "string", "list",
                                                     "edit", "area", "static"]
    assert doc.to_json("readable")["root"]["root"]["children"][2]["node"]["fontName"] == "굴림"


def test_uif_pre_1264_file_version_i32_count():
    node = s(b"") + i32(0) + s(b"old") + i32(0) * 8 + u32(0, 0) + s(b"") * 3
    doc = check("uif", node, fileVersion=1098)
    assert doc.params["fileVersion"] == 1098 and "versionWord" not in doc.root["root"]
    # the 1264 reading of the same bytes: i16 count 0 + versionWord 0
    doc = check("uif", node)
    assert doc.root["root"]["versionWord"] == 0


def test_uif_spacing_present_parameter():
    text0 = uif_base(b"", [], 0, b"s") + s(b"") + u32(1) + s(b"x") + i32(9)
    data = uif_base(b"", [(6, text0)], 1, b"r")
    # versionWord 0: no lineSpacing by default, so the default reading misreads the
    # rest (an absurd string length): the file is kept opaque, with a warning
    doc = potsherd.read(data, format="uif")
    assert doc.params == {"opaque": 1} and "unknown layout" in doc.warnings[0]
    assert doc.encode() == data
    doc = check("uif", data, spacingPresent=1)
    assert doc.root["root"]["children"][0]["node"]["lineSpacing"] == 9


def test_uif_taiwan_text_uses_big5():
    big5 = "細明體".encode("cp950")
    text1 = uif_base(b"", [], 1, b"s") + s(big5) + u32(12, 0) + u32(0) + s(b"") + i32(0)
    data = uif_base(b"", [(6, text1)], 1, b"r")
    doc = potsherd.read(data, format="uif")
    doc.source = "UI/co_test_tw.uif"
    j = doc.to_json("readable")
    assert j["meta"]["text_encoding"] == "cp950"
    assert j["root"]["root"]["children"][0]["node"]["fontName"] == "細明體"
    assert potsherd.from_json(json.loads(json.dumps(j))).encode() == data
    # the same bytes in a non-Taiwan file read as cp949 (valid, but another text)
    doc.source = "UI/co_test.uif"
    assert doc.to_json("readable")["meta"]["text_encoding"] == "cp949"


def test_readable_string_falls_back_to_the_other_code_page_then_hex():
    only_big5 = "們".encode("cp950")
    assert _cp949_fails(only_big5)
    data = s(b"p") + u32(0) + MATERIAL + s(only_big5) + s(b"\xff\xfe")
    doc = check("n3cpart", data)
    j = doc.to_json("readable")["root"]
    assert j["texture"] == {"text": "們", "encoding": "cp950"}
    assert j["geometry"] == {"hex": "fffe"}


def _cp949_fails(b: bytes) -> bool:
    try:
        return b.decode("cp949").encode("cp949") != b
    except UnicodeError:
        return True


def test_opaque_on_request_and_json_of_opaque():
    data = chr_bytes(None)
    doc = potsherd.read(data, format="n3chr", opaque=1)
    assert doc.root == {"body": data}
    j = json.loads(json.dumps(doc.to_json("wire")))
    assert j["params"] == {"opaque": 1} and j["root"] == {"body": data.hex()}
    assert potsherd.from_json(j).encode() == data


def test_layout_text_has_every_spec_record():
    spec_records = {"material", "key", "transform", "n3cpart", "n3cplug", "shapePart", "n3shape",
                    "n3chr", "n3joint", "binding", "n3cskin", "n3cskins", "fxPlugPart", "n3fxplug",
                    "animation", "n3anim", "skyChange", "n3sky", "collapse", "lod", "n3pmesh",
                    "fxSlot", "fxb", "terrainPoint", "terrainPatch", "terrainTile", "terrainTiles",
                    "terrainLightmap", "river", "pond", "gtd", "subcell", "maincell", "placedShape",
                    "opd", "uifChild", "uifNode", "uif"}
    assert spec_records <= set(LAYOUT.records)


def test_gtd_lightmap_uses_the_ntf_storage():
    # a lightmap: i16 x, i16 z + an NTF record (4x4 DXT1, no mips: 8 bytes of
    # level 0, then the writer's 16-bit fallback (4/2)*(4/2)*2 = 8 bytes)
    ntf = (s(b"lm") + b"NTF\x03" + i32(4, 4) + u32(0x31545844) + i32(0)
           + bytes(range(8)) + bytes(range(8, 16)))
    full = gtd_bytes(True)
    tiles = i32(2, 1) + b"tile.gtt\x00".ljust(260, b"\x00") + i16(0, 3, 0, 7)
    pos = full.index(tiles) + len(tiles)
    assert full[pos:pos + 4] == i32(0)
    data = full[:pos] + i32(1) + i16(5, 6) + ntf + full[pos + 4:]
    doc = check("gtd", data)
    lm = doc.root["lightmaps"][0]
    assert (lm["x"], lm["z"]) == (5, 6)
    tex = lm["texture"]
    assert (tex["name"], tex["width"], tex["height"], tex["mipmap"]) == (b"lm", 4, 4, 0)
    assert tex["levels"] == [bytes(range(8))] and tex["fallback"] == bytes(range(8, 16))



def _layout_line(layout_file: str, record: str, field: str) -> int:
    """The line of ``field``'s row in ``record`` of a packaged .layout file."""
    from importlib import resources
    text = resources.files("potsherd.formats.ko").joinpath(f"layouts/{layout_file}").read_text()
    lines = text.splitlines()
    start = lines.index(record)
    return next(i for i, line in enumerate(lines[start:], start + 1)
                if line.split("\t")[0] == field)


def test_ntf_header_errors_point_to_their_row_in_ntf_layout():
    ntf = (s(b"lm") + b"NTF\x03" + i32(4, 4) + u32(0x31545844) + i32(0)
           + bytes(range(8)) + bytes(range(8, 16)))
    with pytest.raises(FormatError) as e:
        potsherd.read(ntf[:14], format="dxt")         # ends inside height
    assert (e.value.offset, e.value.path) == (14, "ntf.height")
    want = _layout_line("ntf.layout", "ntfHeader", "height")
    assert e.value.defined_at.endswith(f"layouts/ntf.layout:{want}")
    # inside a gtd lightmap the innermost declared row still wins
    full = gtd_bytes(True)
    tiles = i32(2, 1) + b"tile.gtt\x00".ljust(260, b"\x00") + i16(0, 3, 0, 7)
    pos = full.index(tiles) + len(tiles)
    data = full[:pos] + i32(1) + i16(5, 6) + i32(10 ** 6) + ntf[4:]   # a name longer than the file
    with pytest.raises(FormatError) as e:
        potsherd.read(data, format="gtd")
    assert e.value.path == "gtd.lightmaps[0].texture.name" and e.value.offset == pos + 8
    assert e.value.defined_at.endswith(
        f"ntf.layout:{_layout_line('ntf.layout', 'ntfHeader', 'name')}")
    # negative control: an error outside the NTF record names ko.layout
    with pytest.raises(FormatError) as e:
        potsherd.read(full[:pos] + i32(1) + i16(5), format="gtd")
    assert e.value.path == "gtd.lightmaps"
    assert e.value.defined_at.endswith(f"ko.layout:{_layout_line('ko.layout', 'gtd', 'lightmaps')}")


def test_edited_document_with_impossible_cell_grid_is_an_encode_error():
    from potsherd.core.errors import EncodeError
    doc = potsherd.read(opd_bytes(False), format="opd")
    j = doc.to_json("readable")
    j["root"]["width"] = {"bits": 0x7F800000}  # +inf
    with pytest.raises(EncodeError) as e:
        potsherd.from_json(j).encode()
    assert "non-finite" in e.value.message and e.value.path == "opd.cells"


# --- the JSON envelope ---------------------------------------------------------------

NTF_4X4 = (s(b"pic") + b"NTF\x03" + i32(4, 4) + u32(0x31545844) + i32(0)
           + bytes(range(8)) + bytes(range(8, 16)))


def test_every_ko_from_json_reads_the_shared_envelope(monkeypatch):
    from potsherd import registry
    calls = []
    real = registry.Codec.parse_envelope

    def spy(self, obj):
        calls.append(self.name)
        return real(self, obj)

    monkeypatch.setattr(registry.Codec, "parse_envelope", spy)
    for fmt, data in (("n3pmesh", pmesh_bytes()), ("gtd", gtd_bytes(True)), ("dxt", NTF_4X4),
                      ("gtt", NTF_4X4 + NTF_4X4)):
        doc = potsherd.read(data, format=fmt)
        assert potsherd.from_json(doc.to_json("wire")).encode() == data
        assert calls[-1] == fmt


def test_layout_codec_json_keeps_params_meta_and_trailing():
    data = pmesh_bytes()
    j = potsherd.read(data, format="n3pmesh").to_json("wire")
    j["trailing"], j["meta"]["note"] = "abcd", "edited"
    back = potsherd.from_json(j)
    assert back.trailing == b"\xab\xcd" and back.meta["note"] == "edited"
    assert back.encode() == data + b"\xab\xcd"
    j = potsherd.read(gtd_bytes(False), format="gtd", gtdHeader=0).to_json("wire")
    assert potsherd.from_json(j).params["gtdHeader"] == 0
    # negative controls: each envelope part is checked, not skipped
    for key, value, path in (("params", {"gtdHeader": "0"}, "$.params.gtdHeader"),
                             ("params", [1], "$.params"), ("trailing", "zz", "$.trailing"),
                             ("meta", {"text_encoding": "utf-8"}, "$.meta.text_encoding"),
                             ("meta", ["cp949"], "$.meta")):
        with pytest.raises(FormatError) as e:
            potsherd.from_json({**j, key: value})
        assert e.value.path == path, (key, value)


@pytest.mark.parametrize("fmt, data", [("dxt", NTF_4X4), ("gtt", NTF_4X4 + NTF_4X4)], ids=["dxt", "gtt"])
def test_texture_json_refuses_params_instead_of_dropping_them(fmt, data):
    j = potsherd.read(data, format=fmt).to_json("readable")
    j["meta"]["note"] = "kept"
    back = potsherd.from_json(j)                       # control: a clean envelope loads
    assert back.encode() == data and back.meta["note"] == "kept" and back.params == {}
    with pytest.raises(FormatError) as e:
        potsherd.from_json({**j, "params": {"mipmap": 1}})
    assert e.value.path == "$.params" and "takes no parameters" in e.value.message
    with pytest.raises(FormatError) as e:
        potsherd.from_json({**j, "trailing": "00"})
    assert e.value.path == "$.trailing"
