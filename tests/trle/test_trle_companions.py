"""``potsherd trle insert`` writes the companion files beside the new wad: sounds
and sprites copied, the ``.was`` name list given a line for a new moveable."""
from __future__ import annotations

from pathlib import Path

import pytest

import potsherd
from potsherd.cli import main
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "tr4wad"
POYU = CORPUS / "poyu" / "TR4 color.wad"
TUT1 = CORPUS / "tut1" / "tut1.WAD"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared tr4wad corpus not present")


def test_new_moveable_gets_a_was_line_and_companions_are_copied(tmp_path, capsys):
    trwad = tmp_path / "baddy.trwad"
    assert main(["trle", "extract", str(TUT1), "--moveable", "BADDY_1", "-o", str(trwad)]) == 0
    out = tmp_path / "new.wad"
    assert main(["trle", "insert", str(POYU), str(trwad), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "new.was: line 5 added for BADDY_1" in said
    old = (CORPUS / "poyu" / "TR4 color.was").read_bytes().split(b"\n")
    new = (tmp_path / "new.was").read_bytes().split(b"\n")
    assert new == old[:4] + [b"BADDY_1:baddy.trwad"] + old[4:]
    for ext in ("sfx", "sam", "swd"):
        assert (tmp_path / f"new.{ext}").read_bytes() == \
            (CORPUS / "poyu" / f"TR4 color.{ext}").read_bytes()
    # the .was order is the wad's moveable order
    ids = [m["object_id"] for m in potsherd.read(str(out)).root["moveables"]]
    assert ids == [8, 9, 10, 30, 41]


def test_replaced_moveable_keeps_the_was(tmp_path, capsys):
    trwad = tmp_path / "hair.trwad"
    assert main(["trle", "extract", str(POYU), "--moveable", "HAIR", "-o", str(trwad)]) == 0
    out = tmp_path / "t.wad"
    assert main(["trle", "insert", str(TUT1), str(trwad), "-o", str(out)]) == 0
    assert "copied unchanged (the moveable was replaced)" in capsys.readouterr().out
    assert (tmp_path / "t.WAS").read_bytes() == (CORPUS / "tut1" / "tut1.WAS").read_bytes()


def test_was_that_does_not_list_the_moveables_is_left_alone(tmp_path, capsys):
    wad = tmp_path / "w.wad"
    wad.write_bytes(POYU.read_bytes())
    (tmp_path / "w.was").write_bytes(b"SOMETHING:else\nLARA:x\n")
    trwad = tmp_path / "b.trwad"
    assert main(["trle", "extract", str(TUT1), "--moveable", "BADDY_1", "-o", str(trwad)]) == 0
    assert main(["trle", "insert", str(wad), str(trwad), "-o", str(tmp_path / "o.wad")]) == 0
    assert "not rewritten" in capsys.readouterr().out
    assert not (tmp_path / "o.was").exists()
