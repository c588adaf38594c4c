"""The CLI and the top-level API on a small test-only codec."""
import json
import os
import struct

import pytest

import potsherd
from potsherd import registry
from potsherd.cli import main
from potsherd.core.layout import Layout
from potsherd.registry import LayoutCodec

LAYOUT = Layout('thing\n\nmagic\t{"kind":"bytes","count":4}\t"always"\n'
                'n\t"i32"\t"always"\nvals\t{"kind":"array","count":"n","item":"f32"}\t"always"\n'
                'name\t"string"\t"always"\n')


@pytest.fixture(scope="module", autouse=True)
def test_codec():
    codec = LayoutCodec("pstest", LAYOUT, "thing", family="test", extensions=[".pstest"],
                        magic=b"PST1", description="test-only format")
    registry.register(codec)
    yield codec
    registry._CODECS.pop("pstest", None)


def sample(vals=(1.0, 2.5), name=b"hello"):
    return b"PST1" + struct.pack("<i", len(vals)) + struct.pack(f"<{len(vals)}f", *vals) \
        + struct.pack("<i", len(name)) + name


def test_api_read_write_json_roundtrip(tmp_path):
    p = tmp_path / "a.pstest"
    p.write_bytes(sample())
    doc = potsherd.read(p)
    assert doc.format == "pstest" and doc.root["n"] == 2
    assert potsherd.write(doc) == sample()
    for form in ("wire", "readable"):
        assert potsherd.write(potsherd.from_json(json.dumps(doc.to_json(form)))) == sample()
    row = next(r for r in potsherd.list_formats() if r["name"] == "pstest")
    assert {k: row[k] for k in ("name", "family", "extensions", "magic", "description")} == {
        "name": "pstest", "family": "test", "extensions": [".pstest"], "magic": "50535431",
        "description": "test-only format"}
    assert row["features"] == {"read": True, "write": True, "json": True, "export": False,
                               "import": False, "textures": False, "transcode": False}


def test_magic_detection_without_extension_and_unknown_input():
    assert potsherd.read(sample()).format == "pstest"
    with pytest.raises(potsherd.UnknownFormatError):
        potsherd.read(b"\x00\x01garbage")


def test_trailing_bytes_are_kept_with_a_warning():
    doc = potsherd.read(sample() + b"JUNK")
    assert doc.trailing == b"JUNK" and doc.warnings
    assert potsherd.write(doc) == sample() + b"JUNK"


def test_cli_info_dump_build_roundtrip_validate(tmp_path, capsys):
    src = tmp_path / "a.pstest"
    src.write_bytes(sample())
    assert main(["info", str(src), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "pstest" and info["bytes"] == len(sample()) and info["opaque_bytes"] == 0
    out_json = tmp_path / "a.json"
    assert main(["dump", str(src), "-o", str(out_json), "--form", "readable"]) == 0
    doc = json.loads(out_json.read_text())
    assert doc["root"]["vals"] == [1.0, 2.5] and doc["root"]["name"] == "hello"
    doc["root"]["vals"].append(4.0)  # edit: the count follows the array
    out_json.write_text(json.dumps(doc))
    rebuilt = tmp_path / "b.pstest"
    assert main(["build", str(out_json), "-o", str(rebuilt)]) == 0
    assert rebuilt.read_bytes() == sample((1.0, 2.5, 4.0))
    capsys.readouterr()
    assert main(["roundtrip", str(tmp_path), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {x["path"] for x in lines} == {str(src), str(rebuilt)} and all(x["ok"] for x in lines)
    assert main(["validate", str(src), "--json"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["ok"] and v["opaque_bytes"] == 0 and v["format"] == "pstest"


def test_cli_roundtrip_reports_error_offset_and_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.pstest"
    bad.write_bytes(b"PST1" + struct.pack("<i", 1000) + b"\x00" * 8)
    assert main(["roundtrip", str(bad), "--json"]) == 1
    rec = json.loads(capsys.readouterr().out)
    assert rec["ok"] is False and rec["error"]["offset"] == 8 and rec["error"]["path"] == "thing.vals"


def test_cli_build_failure_leaves_no_file(tmp_path, capsys):
    j = tmp_path / "bad.json"
    j.write_text(json.dumps({"potsherd": 1, "format": "pstest", "form": "wire",
                             "root": {"magic": "zz", "n": 0, "vals": [], "name": ""}}))
    out = tmp_path / "out.pstest"
    assert main(["build", str(j), "-o", str(out)]) == 1
    assert "$.root.magic" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["bad.json"]


def test_cli_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["dump"])
    assert ei.value.code == 2
    assert main(["info", "x.pstest", "--param", "novalue"]) == 2


def test_validate_names_the_row_that_declares_the_failing_field(tmp_path, capsys):
    """From the message to the layout row in one step: the row's place is printed."""
    cut = tmp_path / "cut.pstest"
    cut.write_bytes(sample()[:10])  # inside `vals`
    assert main(["validate", str(cut)]) == 1
    line, summary_line = capsys.readouterr().out.strip().splitlines()
    assert summary_line == "0 valid, 1 invalid"
    want = LAYOUT.record("thing").fields[2].defined_at
    assert want and "test_cli_core.py:" in want  # this file's LAYOUT literal
    assert line.endswith(f"[thing.vals], declared at {want}"), line
    whole = tmp_path / "ok.pstest"  # the control: a valid file names no row
    whole.write_bytes(sample())
    assert main(["validate", str(whole)]) == 0
    assert "declared at" not in capsys.readouterr().out
