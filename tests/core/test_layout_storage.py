"""Every storage kind of the layout engine, with exact expected bytes."""
import struct

import numpy as np
import pytest

from potsherd.core.errors import (CountError, EncodeError, FormatError, JsonFormatError,
                                  LimitError, TruncatedError)
from potsherd.core.layout import JsonCtx, Layout, parse_layout_text
from potsherd.core.limits import Limits
from potsherd.core.values import F32NaN, RawString

PRIMS = """
prims

Field	Storage	Condition
a	"u8"	"always"
b	"i8"	"always"
c	"u16"	"always"
d	"i16"	"always"
e	"u32"	"always"
f	"i32"	"always"
g	"f32"	"always"
h	"u64"	"always"
i	"i64"	"always"
j	"f64"	"always"
k	"u32be"	"always"
"""


def roundtrip(layout, root, value, expected, params=None):
    data = layout.encode(root, value, params)
    assert data == expected
    back, end, _ = layout.decode(root, data, params)
    assert end == len(data)
    assert layout.encode(root, back, params) == expected
    return back


def test_primitives_exact_bytes():
    L = Layout(PRIMS)
    v = {"a": 255, "b": -1, "c": 0x1234, "d": -2, "e": 0xDEADBEEF, "f": -3, "g": 1.5,
         "h": 2**64 - 1, "i": -(2**63), "j": -0.25, "k": 0x01020304}
    expected = (b"\xff" b"\xff" b"\x34\x12" b"\xfe\xff" b"\xef\xbe\xad\xde" b"\xfd\xff\xff\xff"
                + struct.pack("<f", 1.5) + b"\xff" * 8 + b"\x00" * 7 + b"\x80"
                + struct.pack("<d", -0.25) + b"\x01\x02\x03\x04")
    assert roundtrip(L, "prims", v, expected) == v


def test_float_bit_patterns_survive_including_signalling_nan():
    L = Layout("r\n\nf\t\"f32\"\t\"always\"\ng\t\"f32\"\t\"always\"\n")
    raw = bytes.fromhex("0100807f") + bytes.fromhex("00000080")  # sNaN with payload 1, -0.0
    v, _, _ = L.decode("r", raw)
    assert isinstance(v["f"], F32NaN) and v["f"].bits == 0x7F800001
    assert str(v["g"]) == "-0.0"
    assert L.encode("r", v) == raw
    wire = L.to_json("r", v, JsonCtx("wire"))
    assert wire == {"f": 0x7F800001, "g": 0x80000000}
    readable = L.to_json("r", v, JsonCtx("readable"))
    assert readable == {"f": {"bits": 0x7F800001}, "g": -0.0}
    for form, j in (("wire", wire), ("readable", readable)):
        assert L.encode("r", L.from_json("r", j, JsonCtx(form))) == raw


def test_groups_vec3_quat_rect():
    L = Layout('r\n\nv\t"vec3"\t"always"\nq\t"quat"\t"always"\nr\t"rect"\t"always"\n')
    v = {"v": [1.0, 2.0, 3.0], "q": [0.0, 0.0, 0.0, 1.0], "r": [-1, 2, 3, 4]}
    expected = struct.pack("<3f", 1, 2, 3) + struct.pack("<4f", 0, 0, 0, 1) + struct.pack("<4i", -1, 2, 3, 4)
    assert roundtrip(L, "r", v, expected) == v


def test_string_signed_length_raw_bytes_and_negative_length():
    L = Layout('r\n\ns\t"string"\t"always"\nt\t"string"\t"always"\nu\t"string"\t"always"\n')
    raw = (b"\x05\x00\x00\x00loop\x00" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00")
    v, _, _ = L.decode("r", raw)
    assert v["s"] == b"loop\x00" and v["t"] == b"" and v["t"].raw_len == -1 and v["u"].raw_len is None
    assert L.encode("r", v) == raw
    assert L.to_json("r", v, JsonCtx("wire")) == {"s": "6c6f6f7000", "t": {"len": -1}, "u": ""}
    assert L.to_json("r", v, JsonCtx("readable"))["s"] == "loop\x00"
    # text that does not survive the encoding falls back to hex in readable form
    v2 = {"s": RawString(b"\xff\xfe"), "t": RawString(b""), "u": RawString(b"")}
    j = L.to_json("r", v2, JsonCtx("readable", "ascii"))
    assert j["s"] == {"hex": "fffe"}
    assert L.from_json("r", j, JsonCtx("readable", "ascii"))["s"] == b"\xff\xfe"


def test_string_longer_than_input_is_truncation_with_offset_and_path():
    L = Layout('r\n\na\t"u32"\t"always"\ns\t"string"\t"always"\n')
    with pytest.raises(TruncatedError) as ei:
        L.decode("r", b"\x00" * 4 + b"\x10\x00\x00\x00abc")
    assert ei.value.offset == 4 and ei.value.path == "r.s"


def test_bytes_fixed_and_counted_and_tail():
    L = Layout('r\n\nn\t"u8"\t"always"\nfixed\t{"kind":"bytes","count":3}\t"always"\n'
               'counted\t{"kind":"bytes","count":"n"}\t"always"\nrest\t{"kind":"tail"}\t"always"\n')
    raw = b"\x02" + b"abc" + b"\x00\xff" + b"tail!"
    v = roundtrip(L, "r", {"n": 2, "fixed": b"abc", "counted": b"\x00\xff", "rest": b"tail!"}, raw)
    assert L.opaque_size("r", v) == 5
    assert L.to_json("r", v, JsonCtx("readable"))["counted"] == "00ff"


def test_numeric_array_is_numpy_and_count_regenerates_when_edited():
    L = Layout('r\n\nn\t"i32"\t"always"\nxs\t{"kind":"array","count":{"product":["n",2]},"item":"u16"}\t"always"\n')
    raw = b"\x02\x00\x00\x00" + b"\x01\x00\x02\x00\x03\x00\x04\x00"
    v, _, _ = L.decode("r", raw)
    assert isinstance(v["xs"], np.ndarray) and v["xs"].dtype == np.dtype("<u2")
    assert v["xs"].tolist() == [1, 2, 3, 4]
    v["xs"] = np.append(v["xs"], [5, 6]).astype("<u2")  # grown: n must become 3
    assert L.encode("r", v) == b"\x03\x00\x00\x00" + b"\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00"
    v["xs"] = np.array([1, 2, 3], "<u2")  # not a multiple of 2
    with pytest.raises(EncodeError):
        L.encode("r", v)


def test_count_kept_when_consistent_negative_count_with_empty_array():
    L = Layout('r\n\nn\t"i32"\t"always"\nxs\t{"kind":"array","count":"n","item":"f32"}\t"always"\n')
    raw = b"\xff\xff\xff\xff"  # count -1 means none; must be written back as -1
    v, _, _ = L.decode("r", raw)
    assert v["n"] == -1 and v["xs"].shape == (0,)
    assert L.encode("r", v) == raw


def test_missing_count_field_is_derived_for_authored_documents():
    L = Layout('r\n\nn\t"u8"\t"always"\nxs\t{"kind":"array","count":"n","item":"u8"}\t"always"\n')
    assert L.encode("r", {"xs": np.array([7, 8], "u1")}) == b"\x02\x07\x08"


def test_array_of_fixed_inner_arrays_is_2d_and_variable_inner_count():
    L = Layout('r\n\nn\t"i32"\t"always"\nk\t"u32"\t"always"\n'
               'tri\t{"kind":"array","count":"n","item":{"kind":"array","count":3,"item":"u32"}}\t"always"\n'
               'vals\t{"kind":"array","count":"n","item":{"kind":"array","count":{"select":["k",3,4]},"item":"f32"}}\t"always"\n')
    tri = np.arange(6, dtype="<u4").reshape(2, 3)
    vals = np.ones((2, 4), "<f4")
    raw = struct.pack("<iI", 2, 1) + tri.tobytes() + vals.tobytes()
    v = roundtrip(L, "r", {"n": 2, "k": 1, "tri": tri, "vals": vals}, raw)
    assert v["tri"].shape == (2, 3) and v["vals"].shape == (2, 4)


def test_select_without_case_reads_nothing_and_warns():
    L = Layout('r\n\nn\t"i32"\t"always"\nk\t"u32"\t"always"\n'
               'vals\t{"kind":"array","count":"n","item":{"kind":"array","count":{"select":["k",3,4]},"item":"f32"}}\t"always"\n')
    warnings = []
    v, end, _ = L.decode("r", struct.pack("<iI", 2, 7), warnings=warnings)
    assert v["vals"].shape == (2, 0) and end == 8 and warnings


def test_array_of_records_and_nested_paths_in_errors():
    L = Layout('item\n\nname\t"string"\t"always"\nv\t"u16"\t"always"\n\n'
               'r\n\nn\t"i32"\t"always"\nitems\t{"kind":"array","count":"n","item":"item"}\t"always"\n')
    raw = struct.pack("<i", 2) + struct.pack("<i", 1) + b"a" + b"\x05\x00" + struct.pack("<i", 0) + b"\x06\x00"
    v = roundtrip(L, "r", {"n": 2, "items": [{"name": RawString(b"a"), "v": 5},
                                                {"name": RawString(b""), "v": 6}]}, raw)
    assert v["items"][1]["v"] == 6
    with pytest.raises(TruncatedError) as ei:
        L.decode("r", raw[:-1])
    assert ei.value.path == "r.items[1].v" and ei.value.offset == 15


def test_count_larger_than_input_is_refused_before_allocation():
    L = Layout('r\n\nn\t"i32"\t"always"\nxs\t{"kind":"array","count":"n","item":"f32"}\t"always"\n')
    with pytest.raises(CountError) as ei:
        L.decode("r", struct.pack("<i", 0x7FFFFFFF) + b"\x00" * 8)
    assert ei.value.offset == 4 and ei.value.path == "r.xs"


def test_choice_between_storages():
    L = Layout('r\n\nwide\t{"kind":"parameter","name":"wide","default":0}\t"always"\n'
               'n\t{"kind":"choice","condition":{"gt":["wide",0]},"yes":"i32","no":"i16"}\t"always"\n')
    assert L.encode("r", {"n": 5}) == b"\x05\x00"
    assert L.encode("r", {"n": 5}, {"wide": 1}) == b"\x05\x00\x00\x00"
    v, end, params = L.decode("r", b"\x05\x00")
    assert v == {"n": 5} and params == {"wide": 0}


def test_parameter_is_not_serialised_and_caller_overrides_default():
    L = Layout('r\n\ncell\t{"kind":"parameter","name":"cell","default":16}\t"always"\n'
               'w\t"i32"\t"always"\n'
               'cells\t{"kind":"array","count":{"divide":[{"float":"w"},"cell"]},"item":"u8"}\t"always"\n')
    v, _, p = L.decode("r", struct.pack("<i", 33) + bytes(3))  # ceil(33/16) = 3
    assert "cell" not in v and p["cell"] == 16 and v["cells"].size == 3
    v, _, p = L.decode("r", struct.pack("<i", 33) + bytes(1), {"cell": 40})
    assert v["cells"].size == 1


def test_optional_tail_fields_present_only_while_bytes_remain():
    L = Layout('r\n\na\t"u8"\t"always"\nb\t"u16"\t"optional tail"\nc\t"u8"\t"optional tail"\n')
    for raw, v in ((b"\x01", {"a": 1}), (b"\x01\x02\x00", {"a": 1, "b": 2}),
                   (b"\x01\x02\x00\x03", {"a": 1, "b": 2, "c": 3})):
        assert roundtrip(L, "r", v, raw) == v


def test_conditions_use_enclosing_records_and_parameters():
    L = Layout('child\n\nx\t"u8"\t{"eq":["kind",1]}\ny\t"u8"\t{"gt":["version",1]}\n\n'
               'r\n\nversion\t{"kind":"parameter","name":"version","default":2}\t"always"\n'
               'kind\t"u8"\t"always"\nc\t"child"\t"always"\n')
    assert roundtrip(L, "r", {"kind": 1, "c": {"x": 7, "y": 8}}, b"\x01\x07\x08") == \
        {"kind": 1, "c": {"x": 7, "y": 8}}
    assert L.decode("r", b"\x00", {"version": 0})[0] == {"kind": 0, "c": {}}


def test_struct_storage_from_python_format_string():
    L = Layout({"r": [("h", {"kind": "struct", "format": "<2hf4s", "keys": "a b c name"}, "always")]})
    raw = struct.pack("<2hf4s", -1, 2, 0.5, b"ab\x00\x99")
    v = roundtrip(L, "r", {"h": {"a": -1, "b": 2, "c": 0.5, "name": b"ab\x00\x99"}}, raw)
    assert L.to_json("r", v, JsonCtx("wire"))["h"]["name"] == "6162 0099".replace(" ", "")


def test_recursive_records_hit_the_depth_limit_not_a_crash():
    L = Layout('node\n\nn\t"u8"\t"always"\nkids\t{"kind":"array","count":"n","item":"node"}\t"always"\n')
    deep = b"\x01" * 5000 + b"\x00"
    with pytest.raises(LimitError):
        L.decode("node", deep)
    v, end, _ = L.decode("node", b"\x01" * 10 + b"\x00", limits=Limits(max_depth=50))
    assert end == 11


def test_unknown_and_missing_fields_are_encode_errors_with_paths():
    L = Layout('r\n\na\t"u8"\t"always"\nb\t"u8"\t"always"\n')
    with pytest.raises(EncodeError) as ei:
        L.encode("r", {"a": 1})
    assert ei.value.path == "r.b"
    with pytest.raises(EncodeError):
        L.encode("r", {"a": 1, "b": 2, "zzz": 3})
    with pytest.raises(EncodeError):
        L.encode("r", {"a": 256, "b": 0})


def test_json_errors_name_the_json_path():
    L = Layout('r\n\na\t"u8"\t"always"\ns\t"string"\t"always"\n')
    with pytest.raises(JsonFormatError) as ei:
        L.from_json("r", {"a": "x", "s": ""}, JsonCtx("wire"), "$.root")
    assert ei.value.path == "$.root.a"
    with pytest.raises(JsonFormatError) as ei:
        L.from_json("r", {"a": 1, "s": "zz"}, JsonCtx("wire"), "$.root")
    assert ei.value.path == "$.root.s"
    with pytest.raises(JsonFormatError):
        L.from_json("r", {"a": 1, "bogus": 1}, JsonCtx("wire"), "$.root")


def test_layout_text_notation_with_comments():
    recs = parse_layout_text("# a comment\nr\n\nField\tStorage\tCondition\n"
                             'a\t"u8"\t"always"\t# why a exists\n')
    assert recs == {"r": [("a", "u8", "always")]}


def test_format_error_message_names_offset_path_expected_found():
    e = FormatError("bad", offset=16, path="x", expected="1", found="2").prepend("r")
    assert str(e) == "bad at r.x (offset 16 / 0x10) expected 1 found 2"
    assert e.to_dict()["path"] == "r.x"
