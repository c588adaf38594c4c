"""Item files named by the client's item table (Data/Item_Org.tbl): the engine's
resource-id naming inverted, the table found in the file's client tree only."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

import potsherd
from corpus_paths import CORPUS_ROOT
from potsherd.formats.ko import table as T
from potsherd.formats.ko.items import item_row, resource_column, resource_ids

#: the 1298 layout: id, ext, name, remark, two unknown columns, resource, icon
TYPES_1298 = [6, 2, 7, 7, 6, 2, 6, 6]
TYPES_OLD = [6, 2, 7, 7, 6, 6, 6]


def table_bytes(rows, types=TYPES_1298) -> bytes:
    fmt = {2: "B", 6: "I"}
    out = struct.pack(f"<i{len(types)}ii", len(types), *types, len(rows))
    for row in rows:
        for t, v in zip(types, row):
            out += struct.pack("<i", len(v)) + v if t == 7 else struct.pack("<" + fmt[t], v)
    return T.encrypt(out, T.CLASSIC_KEY)


ROWS = [[110110000, 0, b"Dagger", b"", 0, 0, 11011000, 11011000],
        [169010000, 0, b"Centaur bow", b"bow", 7, 1, 16901000, 16901001],
        [201001000, 0, "가죽 어깨".encode("cp949"), b"", 0, 0, 20100100, 20100100]]


@pytest.fixture()
def client(tmp_path: Path) -> Path:
    root = tmp_path / "client"
    for d in ("Item", "Data", "Chr"):
        (root / d).mkdir(parents=True)
    (root / "Data" / "Item_Org.tbl").write_bytes(table_bytes(ROWS))
    for name in ("1_6901_00_0.n3cplug", "2_0112_10_0.n3cpart", "1_9999_00_0.n3cplug"):
        (root / "Item" / name).write_bytes(b"")
    return root


def test_resource_ids_invert_the_engine_naming():
    assert resource_ids("Item/1_6901_00_0.n3cplug") == [(16901000, None)]
    ids = resource_ids("2_0112_10_0.N3CPART")
    assert ids[0] == (20112100, None) and (20100100, 12) in ids and len(ids) == 8
    assert resource_ids("1_6901_00_0.dxt") == [] and resource_ids("sword.n3cplug") == []


def test_resource_column_follows_the_table_layout():
    assert resource_column(TYPES_1298) == 6 and resource_column(TYPES_OLD) == 4
    assert resource_column([6, 6, 6, 6, 6]) is None


def test_item_row_names_plugs_and_race_parts(client):
    row = item_row(str(client / "Item" / "1_6901_00_0.n3cplug"))
    assert row["name"] == "Centaur bow" and row["row"] == 1 and row["id"] == 169010000
    assert row["resource"] == 16901000 and "race" not in row
    part = item_row(str(client / "Item" / "2_0112_10_0.n3cpart"))
    assert part["name"] == "가죽 어깨" and part["race"] == 12 and part["resource"] == 20100100
    assert item_row(str(client / "Item" / "1_9999_00_0.n3cplug")) is None      # no such row


def test_older_tables_keep_the_resource_in_column_4(client):
    old = [[r[0], r[1], r[2], r[3], r[6], r[7], 0] for r in ROWS]
    (client / "Data" / "Item_Org.tbl").write_bytes(table_bytes(old, TYPES_OLD))
    assert item_row(str(client / "Item" / "1_6901_00_0.n3cplug"))["name"] == "Centaur bow"


def test_a_table_outside_the_client_tree_is_not_read(tmp_path):
    """An item file whose folder has no client layout: a Data/Item_Org.tbl one
    folder up is not the client's table and is never opened."""
    (tmp_path / "Data").mkdir()
    (tmp_path / "Data" / "Item_Org.tbl").write_bytes(table_bytes(ROWS))
    (tmp_path / "loose").mkdir()
    f = tmp_path / "loose" / "1_6901_00_0.n3cplug"
    f.write_bytes(b"")
    assert item_row(str(f)) is None


def test_a_broken_table_is_an_error_not_a_name(client):
    (client / "Data" / "Item_Org.tbl").write_bytes(b"\x01\x02")
    with pytest.raises(potsherd.FormatError):
        item_row(str(client / "Item" / "1_6901_00_0.n3cplug"))


@pytest.mark.corpus
def test_corpus_item_info_shows_the_table_name():
    f = CORPUS_ROOT / "ko" / "data" / "Item" / "1_6901_00_0.n3cplug"
    if not f.is_file() or not (CORPUS_ROOT / "ko" / "data" / "Data" / "Item_Org.tbl").is_file():
        pytest.skip("corpus item and table not present")
    info = potsherd.read(f).info()
    assert info["item"]["name"] == "Centaur bow" and info["item"]["row"] == 395
    assert info["item"]["id"] == 169010000 and info["item"]["resource"] == 16901000
