"""Writes are atomic: an output appears complete or not at all, and a failing
command leaves neither a damaged output nor a temp file behind."""
import json
import os
import re
from pathlib import Path

import pytest

import potsherd
from potsherd.cli import main
from potsherd.core.fileio import atomic_open, atomic_write

from fuzz_support import fuzz_core

SRC = Path(potsherd.__file__).resolve().parent


@pytest.fixture
def core():
    with fuzz_core.registered():
        yield


def test_atomic_write_replaces_only_on_success(tmp_path):
    out = tmp_path / "f.bin"
    atomic_write(out, b"first")
    assert out.read_bytes() == b"first"
    with pytest.raises(RuntimeError):
        with atomic_open(out) as f:
            f.write(b"half of the second ver")
            raise RuntimeError("encoder failed midway")
    assert out.read_bytes() == b"first"
    assert os.listdir(tmp_path) == ["f.bin"]
    atomic_write(out, b"second")
    assert out.read_bytes() == b"second" and os.listdir(tmp_path) == ["f.bin"]


def test_atomic_write_creates_the_folder_and_cleans_up_on_interrupt(tmp_path):
    out = tmp_path / "a" / "b" / "f.bin"
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(out) as f:
            f.write(b"x")
            raise KeyboardInterrupt
    assert not out.exists() and os.listdir(out.parent) == []


def test_write_api_is_atomic(core, tmp_path):
    doc = potsherd.from_json(fuzz_core.document())
    out = tmp_path / "x.fzc"
    potsherd.write(doc, out)
    good = out.read_bytes()
    doc.root["indices"] = "not an array"
    with pytest.raises(potsherd.EncodeError):
        potsherd.write(doc, out)
    assert out.read_bytes() == good and os.listdir(tmp_path) == ["x.fzc"]


def test_dump_of_an_undecodable_file_writes_nothing(core, tmp_path):
    bad = tmp_path / "bad.fzc"
    bad.write_bytes(b"FZC1" + b"\xff" * 10)
    out = tmp_path / "bad.json"
    assert main(["dump", str(bad), "-o", str(out)]) == 1
    assert sorted(os.listdir(tmp_path)) == ["bad.fzc"]


def test_build_failing_inside_the_encoder_writes_nothing(core, tmp_path, monkeypatch):
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(fuzz_core.document()))
    out = tmp_path / "out.fzc"

    def broken(self, doc):
        raise ZeroDivisionError("bug in an encoder")
    monkeypatch.setattr(type(fuzz_core.CODEC), "encode", broken)
    assert main(["build", str(src), "-o", str(out)]) == 1
    assert sorted(os.listdir(tmp_path)) == ["doc.json"]


# the modules that write files for users: the CLI, exporters, family subcommands
WRITERS = [p for p in SRC.rglob("*.py") if p.name != "fileio.py"]
DIRECT_WRITE = re.compile(
    r"""open\([^)]*['"][wax]b?\+?['"]|\.write_bytes\(|\.write_text\(|\.tofile\(|"""
    r"""np\.save\w*\(|shutil\.copy\w*\(|os\.rename\(|\.save\((?!buf\b)(?!io\.)[a-z_.]*(path|out|dest|file)""")


def test_every_output_goes_through_atomic_write():
    """No module writes a file directly: every output uses core.fileio."""
    offenders = []
    for p in WRITERS:
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if DIRECT_WRITE.search(code):
                offenders.append(f"{p.relative_to(SRC)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_would_catch_direct_writes():
    for line in ['with open(path, "wb") as f:', "Path(out).write_bytes(data)", "img.save(out_path)",
                 "open(p, 'w')", "np.save(dest, a)"]:
        assert DIRECT_WRITE.search(line), line
    for line in ['with open(path, "rb") as f:', 'img.save(buf, format="PNG")', "atomic_write(p, b)"]:
        assert not DIRECT_WRITE.search(line), line
