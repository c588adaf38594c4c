"""The ``table``, ``sized`` and ``struct`` storage kinds: exact bytes both ways,
through the fast path and the reference alike, edits regenerating counts and
sizes, raw fallback, both JSON forms."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from potsherd.core.errors import EncodeError, FormatError
from potsherd.core.fastpath.compiled import fast_layout
from potsherd.core.layout import JsonCtx, Layout, Table, Unparsed, parse_struct, struct_dtype
from potsherd.core.limits import DEFAULT_LIMITS

TEXT = '''
root
n\t"u32"\t"always"
rows\t{"kind":"table","count":"n","item":"pt"}\t"always"
size\t"u16"\t"always"
blob\t{"kind":"sized","size":{"product":[2,"size"]},"item":"item","repeat":true}\t"always"
s\t{"kind":"struct","format":"<Hxxf","keys":"a b"}\t"always"
m\t"u8"\t"always"
pairs\t{"kind":"table","count":"m","format":">hH","keys":"p q"}\t"always"

pt
x\t"f32"\t"always"
y\t"i16"\t"always"
v\t"vec3"\t"always"
tag\t{"kind":"bytes","count":2}\t"always"

item
k\t"u8"\t"always"
vals\t{"kind":"array","count":"k","item":"u8"}\t"always"
'''
LAYOUT = Layout(TEXT)
NAN_BITS = 0x7FC01234


def _sample() -> bytes:
    pts = b"".join(struct.pack("<fh3f2s", i * 1.5, -i, 1, 2, 3, b"ab") for i in range(3))
    pts = pts[:20] + struct.pack("<I", NAN_BITS) + pts[24:]  # a NaN payload: row 1's x
    items = bytes([2, 7, 8, 1, 9, 0])
    return (struct.pack("<I", 3) + pts + struct.pack("<H", 3) + items + struct.pack("<Hxxf", 5, 2.5)
            + bytes([2]) + struct.pack(">hH", -2, 513) * 2)


DATA = _sample()


@pytest.mark.parametrize("reference", [False, True])
def test_decode_encode_exact(reference):
    v, end, _ = LAYOUT.decode("root", DATA, reference=reference)
    assert end == len(DATA)
    rows = v["rows"]
    assert isinstance(rows, np.ndarray) and rows.dtype.names == ("x", "y", "v", "tag")
    assert rows.dtype.itemsize == 20
    assert rows["y"].tolist() == [0, -1, -2]
    assert rows[2]["x"] == 3.0 and rows["tag"][1].tobytes() == b"ab"
    # the NaN payload of row 1's x survives as bits
    assert rows["x"][1:2].view("<u4")[0] == NAN_BITS
    assert [b["vals"].tolist() for b in v["blob"]] == [[7, 8], [9], []]
    assert v["s"] == {"a": 5, "_pad0": b"\0", "_pad1": b"\0", "b": 2.5}
    assert v["pairs"]["p"].tolist() == [-2, -2] and v["pairs"]["q"].tolist() == [513, 513]
    assert v["pairs"].dtype == struct_dtype(parse_struct(">hH", "p q"), big=True)
    assert LAYOUT.encode("root", v, reference=reference) == DATA


def test_fast_path_takes_tables_and_sized_blocks():
    """The compiled decoder reads this layout itself (it does not decline)."""
    fl = fast_layout(LAYOUT)
    done = fl.decode("root", DATA, None, DEFAULT_LIMITS, 0)
    assert isinstance(done, tuple) and done[1] == len(DATA)
    assert fl.encode("root", done[0], None, DEFAULT_LIMITS) == DATA


def test_edits_regenerate_counts_and_sizes():
    v, _, _ = LAYOUT.decode("root", DATA)
    v["blob"].append({"k": 1, "vals": np.array([4], dtype=np.uint8)})
    v["rows"] = np.append(v["rows"], v["rows"][:1])
    out = LAYOUT.encode("root", v)
    assert out == LAYOUT.encode("root", v, reference=True)
    back, end, _ = LAYOUT.decode("root", out)
    assert end == len(out)
    assert back["size"] == 4 and back["n"] == 4
    assert [b["vals"].tolist() for b in back["blob"]] == [[7, 8], [9], [], [4]]


def test_table_accepts_a_list_of_records():
    v, _, _ = LAYOUT.decode("root", DATA)
    v["rows"] = [{"x": 1.0, "y": 2, "v": [0.0, 0.5, 0.0], "tag": b"zz"}]
    back = LAYOUT.decode("root", LAYOUT.encode("root", v))[0]
    assert back["n"] == 1 and back["rows"]["v"].tolist() == [[0.0, 0.5, 0.0]]
    v["rows"] = [{"x": 1.0, "y": 2.5, "v": [0, 0, 0], "tag": b"zz"}]
    with pytest.raises(EncodeError) as e:
        LAYOUT.encode("root", v)
    assert "rows.[0].y" in str(e.value) or "rows[0].y" in str(e.value)


def test_sized_content_that_does_not_parse_is_kept_raw():
    bad = bytearray(DATA)
    bad[4 + 60 + 2] = 9  # the first item's count: 9 values do not fit the 6 bytes
    warnings: list[str] = []
    v, end, _ = LAYOUT.decode("root", bytes(bad), warnings=warnings)
    assert isinstance(v["blob"], Unparsed) and bytes(v["blob"]) == bytes([9, 7, 8, 1, 9, 0])
    assert len(warnings) == 1 and "kept raw" in warnings[0]
    assert end == len(bad) and LAYOUT.encode("root", v) == bytes(bad)
    j = LAYOUT.to_json("root", v, JsonCtx("wire"))
    assert j["blob"] == {"raw": "090708010900"}
    # the control: the unchanged file parses its content
    assert isinstance(LAYOUT.decode("root", DATA)[0]["blob"], list)


def test_sized_block_longer_than_the_input_is_an_error_with_offset():
    short = DATA[:4 + 60] + struct.pack("<H", 200)
    with pytest.raises(FormatError) as e:
        LAYOUT.decode("root", short)
    assert e.value.offset == 66 and "blob" in str(e.value)


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_json_both_forms_round_trip(form):
    v, _, _ = LAYOUT.decode("root", DATA)
    j = json.loads(json.dumps(LAYOUT.to_json("root", v, JsonCtx(form))))
    assert set(j["rows"]) == {"x", "y", "v", "tag"}  # one column per field
    assert j["rows"]["tag"] == ["6162"] * 3
    assert LAYOUT.encode("root", LAYOUT.from_json("root", j, JsonCtx(form))) == DATA
    # one object per row is accepted as well
    def cell(col, i):  # a readable column with a NaN is {"bits": [...]}: so is its cell
        return {"bits": col["bits"][i]} if isinstance(col, dict) else col[i]
    rows = [{k: cell(c, i) for k, c in j["rows"].items()} for i in range(3)]
    j2 = dict(j, rows=rows)
    assert LAYOUT.encode("root", LAYOUT.from_json("root", j2, JsonCtx(form))) == DATA


def test_table_refuses_a_record_that_is_not_fixed():
    lay = Layout('root\nn\t"u8"\t"always"\nt\t{"kind":"table","count":"n","item":"r"}\t"always"\n\n'
                 'r\nk\t"u8"\t"always"\nv\t{"kind":"array","count":"k","item":"u8"}\t"always"\n')
    st = lay.record("root").fields[1].storage
    assert isinstance(st, Table)
    with pytest.raises(ValueError, match="not a run of unconditional fixed fields"):
        st.table_dtype


def test_sized_content_is_encoded_by_the_compiled_encoder_unless_reference():
    from potsherd.core.expr import Scope
    v, _, _ = LAYOUT.decode("root", DATA)
    sized = LAYOUT.record("root").fields[3].storage
    s = Scope({})
    assert sized.compiled_content(v["blob"], s) == bytes([2, 7, 8, 1, 9, 0])
    s.reference = True  # the control: the reference run uses no compiled part
    assert sized.compiled_content(v["blob"], s) is None
    # an item the compiled encoder declines (values that are not numbers) is left
    # to the reference, which words the error
    bad = [{"k": 1, "vals": ["x"]}]
    assert sized.compiled_content(bad, Scope({})) is None
    with pytest.raises(EncodeError):
        sized.content_bytes(bad, Scope({}))
