"""Knight Online ``.tbl`` tables: the cipher, the header-typed rows, JSON, CSV/TSV.

Unit tests build their own tables (every column type, Korean text, negative
string lengths); the corpus tier round-trips every real table through bytes,
both JSON forms and CSV.
"""
from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import potsherd
from corpus_paths import CORPUS_ROOT, ROOT
from potsherd.core.errors import CountError, FormatError, TruncatedError, ValueFormatError
from potsherd.core.values import RawString
from potsherd.formats.ko import table as T

CORPUS = CORPUS_ROOT / "ko"


def reference_encrypt(plain: bytes, key=T.CLASSIC_KEY) -> bytes:
    """The engine's byte loop, written out independently of the module."""
    r, c1, c2 = key
    out = bytearray()
    for p in plain:
        c = p ^ (r >> 8)
        out.append(c)
        r = ((c + r) * c1 + c2) % 65536
    return bytes(out)


def reference_decrypt(data: bytes, key=T.CLASSIC_KEY) -> bytes:
    r, c1, c2 = key
    out = bytearray()
    for c in data:
        out.append(c ^ (r >> 8))
        r = ((c + r) * c1 + c2) % 65536
    return bytes(out)


def plain_table(types, rows) -> bytes:
    """A table plaintext from Python values (strings as bytes; (n,) for a raw length)."""
    fmt = {1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 8: "f", 9: "d"}
    out = struct.pack(f"<i{len(types)}ii", len(types), *types, len(rows))
    for row in rows:
        for t, v in zip(types, row):
            if t == 7:
                if isinstance(v, tuple):
                    out += struct.pack("<i", v[0])
                else:
                    out += struct.pack("<i", len(v)) + v
            else:
                out += struct.pack("<" + fmt[t], v)
    return out


ALL_TYPES = [6, 1, 2, 3, 4, 5, 7, 8, 9, 7]
ROWS = [
    [1, -5, 200, -300, 60000, -70000, "검".encode("cp949"), 1.5, -2.25, b"item\\a.dxt"],
    [2, 127, 0, 32767, 0, 2**31 - 1, b"", float("inf"), 1e300, (-1,)],
    [4000000000, -128, 255, -32768, 65535, -2**31, b"a,b \"q\"\nx", -0.0, 0.1, b"\xff\xfe"],
]


def table_bytes(types=ALL_TYPES, rows=ROWS, key=T.CLASSIC_KEY) -> bytes:
    return reference_encrypt(plain_table(types, rows), key)


# ----------------------------------------------------------------------------
# cipher


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 0xFFFF), st.integers(0, 0xFFFF),
       st.integers(0, 0xFFFF))
def test_cipher_matches_the_engine_loop(data, r, c1, c2):
    key = (r, c1, c2)
    plain, states = T.decrypt(data, key)
    assert plain == reference_decrypt(data, key)
    assert len(states) == len(data) + 1 and int(states[0]) == r
    assert T.encrypt(plain, key) == data
    # resuming from any state reproduces the rest
    if data:
        k = len(data) // 2
        assert T.encrypt(plain[k:], key, int(states[k])) == data[k:]


def test_classic_key_is_the_engine_constant():
    assert T.CLASSIC_KEY == (0x0816, 0x6081, 0x1608)
    # the first byte is xored with the high byte of r
    assert T.decrypt(b"\x00", T.CLASSIC_KEY)[0] == b"\x08"


# ----------------------------------------------------------------------------
# decode / encode


def test_every_column_type_decodes_and_round_trips():
    data = table_bytes()
    doc = T.CODEC.decode(data)
    assert doc.params == {"cipher": 1}
    cols = doc.root["columns"]
    assert doc.root["columnTypes"] == ALL_TYPES
    assert cols[0].dtype == np.dtype("<u4") and cols[0].tolist() == [1, 2, 4000000000]
    assert cols[1].tolist() == [-5, 127, -128]
    assert cols[5].tolist() == [-70000, 2**31 - 1, -2**31]
    assert cols[6][0].decode("cp949") == "검"
    assert cols[9][1] == b"" and cols[9][1].raw_len == -1
    assert np.signbit(cols[7][2]) and cols[8][1] == 1e300
    assert doc.encode() == data
    doc.root.source = None                       # the byte loop, not the copied prefix
    assert doc.encode() == data


def test_unencrypted_table_is_detected_and_kept_plain():
    plain = plain_table(ALL_TYPES, ROWS)
    doc = T.CODEC.decode(plain)
    assert doc.params == {"cipher": 0}
    assert doc.encode() == plain


def test_a_servers_own_key_is_a_parameter():
    key = (0x1234, 0x5679, 0x9ABC)
    data = table_bytes(key=key)
    with pytest.raises(FormatError, match="classic key"):
        T.CODEC.decode(data)
    doc = T.CODEC.decode(data, keyR=key[0], keyC1=key[1], keyC2=key[2])
    assert doc.root["columns"][0].tolist() == [1, 2, 4000000000]
    assert doc.encode() == data


def test_edited_cell_changes_its_bytes_and_the_cipher_after_it_only():
    data = table_bytes()
    doc = T.CODEC.decode(data)
    plain = plain_table(ALL_TYPES, ROWS)
    doc.root["columns"][3][1] = 1234                  # row 1, short column
    out = doc.encode()
    new_plain = reference_decrypt(out)
    diff = [i for i in range(len(plain)) if plain[i] != new_plain[i]]
    row1 = plain.index(struct.pack("<h", 32767))
    assert diff == [row1, row1 + 1]
    assert struct.unpack_from("<h", new_plain, row1)[0] == 1234
    assert out[:row1] == data[:row1]                  # the prefix is untouched
    assert out == reference_encrypt(new_plain)


def test_a_changed_key_re_encrypts_everything():
    data = table_bytes()
    doc = T.CODEC.decode(data)
    key = (0x0816, 0x1235, 0x1608)                   # same r, other constants
    doc.params.update(keyR=key[0], keyC1=key[1], keyC2=key[2])
    out = doc.encode()
    assert out == reference_encrypt(plain_table(ALL_TYPES, ROWS), key)
    assert T.CODEC.decode(out, keyR=key[0], keyC1=key[1], keyC2=key[2]).root["columnTypes"] \
        == ALL_TYPES


def test_trailing_bytes_are_kept_with_a_warning():
    plain = plain_table([6], [[1]]) + b"xyz"
    data = reference_encrypt(plain)
    doc = T.CODEC.decode(data)
    assert bytes(doc.trailing) == b"xyz" and "3 bytes after the last row" in doc.warnings[0]
    assert doc.encode() == data


@pytest.mark.parametrize("plain, cls, offset, path", [
    (struct.pack("<i", 0), CountError, 0, "tbl.columnCount"),
    (struct.pack("<ii", 1000, 6), CountError, 0, "tbl.columnCount"),
    (struct.pack("<iiii", 2, 6, 10, 0), ValueFormatError, 8, "tbl.columnTypes[1]"),
    (struct.pack("<iii", 1, 6, 5) + b"\0" * 19, CountError, 8, "tbl.rowCount"),
    (struct.pack("<iii", 1, 7, 1) + struct.pack("<i", 1 << 30), CountError, 12, "tbl.rows[0].c0"),
    (struct.pack("<iiii", 2, 6, 7, 1) + b"\0" * 4 + b"\5\0\0\0x", CountError, 20,
     "tbl.rows[0].c1"),
    (struct.pack("<iiii", 2, 7, 6, 2) + struct.pack("<i", 4) + b"abcd" + b"\0" * 4
     + b"\0" * 4 + b"\0\0", TruncatedError, 34, "tbl.rows[1].c1"),
    (b"\1\0", TruncatedError, 2, "tbl.columnCount"),
])
def test_hostile_tables_are_refused_with_offset_and_path(plain, cls, offset, path):
    for data in (plain, reference_encrypt(plain)):
        with pytest.raises(cls) as e:
            T.CODEC.decode(data, cipher=0 if data is plain else 1)
        assert e.value.offset == offset and e.value.path == path


def test_a_huge_row_count_allocates_nothing():
    plain = struct.pack("<iii", 1, 7, 0x7FFFFFFF)
    with pytest.raises(CountError):
        T.CODEC.decode(reference_encrypt(plain))


# ----------------------------------------------------------------------------
# JSON


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_json_both_forms_rebuild_the_bytes(form):
    data = table_bytes()
    doc = T.CODEC.decode(data)
    text = json.dumps(doc.to_json(form), ensure_ascii=False)
    back = potsherd.from_json(json.loads(text))
    assert back.encode() == data
    if form == "readable":
        assert "검" in text and "item\\\\a.dxt" in text


def test_json_refuses_columns_of_different_lengths():
    obj = T.CODEC.decode(table_bytes()).to_json("wire")
    obj["root"]["columns"][2].pop()
    with pytest.raises(FormatError, match="column 2 has 2 rows"):
        potsherd.from_json(obj)


# ----------------------------------------------------------------------------
# CSV / TSV


@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_csv_round_trip_is_byte_exact(delimiter):
    data = table_bytes()
    doc = T.CODEC.decode(data)
    text = T.to_csv(doc, delimiter)
    assert text.splitlines()[0].split(delimiter)[:3] == ["c0:dword", "c1:char", "c2:byte"]
    assert "검" in text and "hex:fffe" in text
    assert T.from_csv(text, delimiter=delimiter, like=doc).encode() == data
    # without the original: the same bytes but the stored length -1 (CSV has no such cell)
    fresh = T.from_csv(text, delimiter=delimiter).encode()
    assert len(fresh) == len(data)
    assert getattr(T.CODEC.decode(fresh).root["columns"][9][1], "raw_len", None) is None


def test_csv_edit_changes_only_that_cell():
    data = table_bytes()
    doc = T.CODEC.decode(data)
    rows = T.to_rows(doc)
    rows[3][3] = "-1"                                # row 2, column 3 (short)
    new = T.from_rows(rows, like=doc)
    out = new.encode()
    a, b = reference_decrypt(data), reference_decrypt(out)
    assert len(a) == len(b)
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    assert len(diff) == 2 and struct.unpack_from("<h", b, diff[0])[0] == -1


@pytest.mark.parametrize("cell, col, message", [
    ("256", 2, "row 1 (line 2), column 2 (c2:byte): out of range 0..255"),
    ("x", 0, "row 1 (line 2), column 0 (c0:dword): not an integer"),
    ("1e40", 7, "row 1 (line 2), column 7 (c7:float): too large for a float"),
    ("abc", 8, "row 1 (line 2), column 8 (c8:double): not a number"),
    ("hex:zz", 6, "row 1 (line 2), column 6 (c6:string): bad hex"),
    ("\u00e9\u4e00\U0001F600", 6, "not in the cp949 code page"),
])
def test_bad_cell_names_row_and_column(cell, col, message):
    doc = T.CODEC.decode(table_bytes())
    rows = T.to_rows(doc)
    rows[1][col] = cell
    with pytest.raises(ValueFormatError) as e:
        T.from_rows(rows, like=doc)
    assert message in e.value.message
    assert e.value.path.startswith(f"csv.rows[0].c{col}")


def test_csv_with_a_bad_header_or_ragged_row_is_refused():
    with pytest.raises(ValueFormatError, match="does not name a type"):
        T.from_csv("c0:dword,c1:bogus\r\n1,2\r\n")
    with pytest.raises(ValueFormatError, match="has 1 cells"):
        T.from_csv("c0:dword,c1:int\r\n1\r\n")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 0xFFFFFFFF), min_size=1, max_size=30))
def test_float_bits_survive_csv(bits):
    """Any float32 / float64 bit pattern (NaN payloads, -0.0, subnormals) comes back."""
    f32 = np.array(bits, np.uint32).view(np.float32)
    f64 = (np.array(bits, np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.float64)
    rows = [[i + 1, float(a), float(b)] for i, (a, b) in enumerate(zip(f32, f64))]
    plain = plain_table([6, 8, 9], rows)
    # struct cannot pack NaN payloads: write the bits directly
    head = struct.pack("<i3ii", 3, 6, 8, 9, len(bits))
    body = b"".join(struct.pack("<I", i + 1) + f32[i:i + 1].tobytes() + f64[i:i + 1].tobytes()
                    for i in range(len(bits)))
    plain = head + body
    data = reference_encrypt(plain)
    doc = T.CODEC.decode(data)
    assert T.from_csv(T.to_csv(doc)).encode() == data


def test_cli_table_to_csv_and_back(tmp_path):
    src = tmp_path / "Sample.tbl"
    src.write_bytes(table_bytes())
    env = {"PYTHONPATH": str(ROOT / "src")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "potsherd", *a], capture_output=True,
                                    text=True, env=env, timeout=120)
    r = run("table", str(src), "-o", str(tmp_path / "s.tsv"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "s.tsv").read_bytes()
    assert text.startswith(b"\xef\xbb\xbfc0:dword\tc1:char")
    r = run("table", str(tmp_path / "s.tsv"), "--like", str(src), "-o", str(tmp_path / "n.tbl"))
    assert r.returncode == 0, r.stderr
    assert "identical to --like" in r.stdout
    assert (tmp_path / "n.tbl").read_bytes() == src.read_bytes()
    bad = tmp_path / "bad.csv"
    bad.write_text("c0:dword,c1:byte\r\n1,999\r\n", encoding="utf-8")
    r = run("table", str(bad), "-o", str(tmp_path / "b.tbl"))
    assert r.returncode == 1 and "column 1 (c1:byte): out of range" in r.stderr
    assert not (tmp_path / "b.tbl").exists()
    r = run("info", str(src))
    assert "rows: 3" in r.stdout and "c6:string" in r.stdout


def test_structured_view():
    doc = T.CODEC.decode(table_bytes())
    a = T.as_structured(doc)
    assert a.dtype.names[:3] == ("c0", "c1", "c2") and a["c5"].tolist()[0] == -70000
    assert a["c6"][0] == "검".encode("cp949")


# ----------------------------------------------------------------------------
# corpus


def corpus_tables() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.suffix.lower() == ".tbl")


TABLES = corpus_tables()


@pytest.mark.corpus
@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_corpus_table_round_trips(path):
    data = path.read_bytes()
    doc = potsherd.read(str(path))
    assert doc.format == "tbl" and not doc.warnings and not doc.trailing
    assert doc.root["columnTypes"][0] == 6          # the engine requires a DWORD id first
    assert doc.encode() == data
    doc.root.source = None
    assert doc.encode() == data
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.loads(json.dumps(doc.to_json(form)))).encode() == data
    for delimiter in (",", "\t"):
        text = T.to_csv(doc, delimiter)
        assert T.from_csv(text, delimiter=delimiter, like=doc).encode() == data
        assert T.from_csv(text, delimiter=delimiter,
                          encoding=T.CODEC.encoding_of(doc)).encode() == data


@pytest.mark.corpus
def test_corpus_item_table_values():
    if not TABLES:
        pytest.skip("KO corpus not present")
    doc = potsherd.read(str(CORPUS / "data" / "Data" / "Item_Org.tbl"))
    cols = doc.root["columns"]
    assert len(cols) == 37 and len(cols[0]) == 807
    rows = T.to_rows(doc)
    assert rows[1][:4] == [110110000, 0, "Dagger", ""]


@pytest.mark.parametrize("params, message", [
    ({"keyR": "abc"}, "keyR must be an integer"),
    ({"keyC1": 70000}, "keyC1 must be an integer"),
    ({"bogus": 1}, "got bogus"),
])
def test_bad_parameters_are_format_errors(params, message):
    with pytest.raises(FormatError, match=message):
        T.CODEC.decode(table_bytes(), **params)
