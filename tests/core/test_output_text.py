"""What the commands print is text for people: no Python reprs (dicts, lists, numpy
dtypes, classes), one error format, plurals right.  Scanned over every command on the
example files and, where it is present, one or two corpus files of every extension."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from corpus_paths import CORPUS_ROOT
from potsherd import registry
from potsherd.cli import main
from potsherd.examples import write_examples

#: what a Python repr looks like inside a line of text
REPR = re.compile(r"\{'[^']*':|\['|\[\('|dtype\(|array\(|<class |<function |<potsherd\.|"
                  r"\bnp\.\w+\(|\b1 (files|errors|warnings|members|moveables)\b")


def scan(text: str) -> list[str]:
    return [line for line in text.splitlines() if REPR.search(line)]


def test_the_scan_finds_what_it_looks_for():
    """Negative control: the pattern catches the reprs this scan was written against."""
    for bad in ("vertices   array[{'product': ['vertexCount', 8]}] of f32",
                "x.n3cplug: n3cplug {'plugTrailer': 1} ok",
                "[('indicesToLose', '<i4'), ('collapseTo', '<i4')]",
                "convert: 1 files failed:", "<class 'numpy.ndarray'>"):
        assert scan(bad), bad
    for good in ('vertices   array[{"product":["vertexCount",8]}] of f32',
                 "x.n3cplug: n3cplug plugTrailer=1 ok", "convert: 1 file failed:"):
        assert not scan(good), good


def _run(capsys, *argv) -> str:
    try:
        main([str(a) for a in argv])
    except SystemExit:              # --help
        pass
    out = capsys.readouterr()
    for line in out.err.splitlines():   # what goes to stderr is prefixed or a listed row
        assert (line.startswith(("potsherd: error: ", "potsherd: warning: ", "skip  ", "FAIL  ",
                                 "warn  ", "info  ", "none  ", "convert: ", "validate: "))
                or line.startswith(" ")), line
    return out.out + out.err


def _files(folder: Path) -> list[Path]:
    by_ext: dict[str, list[Path]] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix.lower() != ".txt":
            by_ext.setdefault(p.suffix.lower(), []).append(p)
    return [p for paths in by_ext.values() for p in paths[:2]]


def _scan_commands(capsys, files: list[Path], folder: Path) -> list[str]:
    bad = []
    for argv in (["formats"], ["convert", "--help"], ["info", *files],
                 ["validate", folder], ["roundtrip", folder]):
        bad += scan(_run(capsys, *argv))
    for codec in registry.codecs():
        bad += scan(_run(capsys, "layout", codec.name))
    return bad


def test_commands_print_no_repr_on_the_examples(tmp_path, capsys):
    files = [Path(p) for p in write_examples(str(tmp_path))]
    assert files
    assert _scan_commands(capsys, files, tmp_path) == []


@pytest.mark.corpus
@pytest.mark.slow
def test_commands_print_no_repr_on_the_corpus(capsys):
    if not CORPUS_ROOT.is_dir():
        pytest.skip(f"corpus not present at {CORPUS_ROOT}")
    files = _files(CORPUS_ROOT)
    bad = scan(_run(capsys, "info", *files))
    bad += scan(_run(capsys, "validate", *files))
    assert bad == []


def test_folder_commands_say_what_they_skipped(tmp_path, capsys):
    """A folder of files no codec claims is not a silent success."""
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "noise.bin").write_bytes(bytes(range(100)))
    for command, done in (("roundtrip", "0 byte-exact, 0 failed"), ("validate", "0 valid, 0 invalid")):
        assert main([command, str(tmp_path)]) == 1
        out = capsys.readouterr()
        assert out.out == f"{done}; 2 skipped (2 with no codec for their name)\n"
        assert out.err == f"potsherd: error: {tmp_path}: no file of a format potsherd reads\n"
    write_examples(str(tmp_path))       # the control: with files to check, success and a count
    assert main(["validate", str(tmp_path)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"\d+ valid, 0 invalid; 2 skipped \(2 with no codec for their name\)", last)
