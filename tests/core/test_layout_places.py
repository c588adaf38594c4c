"""Field -> row in one step: every declared field knows its file:line, errors
carry it, and ``potsherd layout`` prints the tree with those places."""
from __future__ import annotations

import inspect
import pathlib
import re

import pytest

import potsherd
from potsherd import registry
from potsherd.cli import main
from potsherd.core import fastpath
from potsherd.core.errors import TruncatedError
from potsherd.core.layout import Layout

PKG = pathlib.Path(potsherd.__file__).resolve().parent
HERE = pathlib.Path(__file__).resolve()

PROBE_TEXT = """\
probe
a\t"u8"\t"always"
b\t"u32"\t"always"
"""
PROBE_B_LINE = next(i for i, line in enumerate(HERE.read_text().splitlines(), 1)
                    if line.startswith('b\\t"u32"'))  # the "b" row above


def _line_of(place: str) -> tuple[pathlib.Path, int]:
    path, line = place.rsplit(":", 1)
    assert path.startswith("potsherd/"), place
    return PKG / path[len("potsherd/"):], int(line)


def test_every_ko_field_points_at_its_row():
    layout = registry.get_codec("n3pmesh").layout
    checked = 0
    for rec in layout.records.values():
        for f in rec.fields:
            path, line = _line_of(f.defined_at)
            assert path.name == "ko.layout", f.defined_at
            assert path.read_text().splitlines()[line - 1].split("\t")[0] == f.name, f.defined_at
            checked += 1
    assert checked > 100


def test_rows_in_a_python_literal_point_into_the_module():
    layout = Layout(PROBE_TEXT)
    fields = {f.name: f for f in layout.record("probe").fields}
    assert fields["b"].defined_at == f"{HERE}:{PROBE_B_LINE}"
    assert fields["a"].defined_at == f"{HERE}:{PROBE_B_LINE - 1}"


def test_rows_built_in_python_point_at_the_layout_call():
    line = inspect.currentframe().f_lineno + 1
    layout = Layout({"r": [("x", "u16", "always")]})
    assert layout.record("r").fields[0].defined_at == f"{HERE}:{line}"


def test_rows_read_from_a_file_point_into_it(tmp_path):
    src = tmp_path / "t.layout"
    src.write_text("# comment\nr\nField\tStorage\tCondition\nx\t\"u8\"\t\"always\"\ny\t\"i32\"\t\"always\"\n")
    layout = Layout(src.read_text(), source=str(src))
    assert [f.defined_at for f in layout.record("r").fields] == [f"{src}:4", f"{src}:5"]


@pytest.mark.parametrize("reference", [False, True])
def test_errors_carry_the_innermost_declaration(reference):
    layout = Layout(PROBE_TEXT)
    with pytest.raises(TruncatedError) as ei:
        layout.decode("probe", b"\x01\x02\x03", reference=reference)
    e = ei.value
    assert (e.path, e.offset) == ("probe.b", 1)
    assert e.defined_at == f"{HERE}:{PROBE_B_LINE}"
    assert e.to_dict()["defined_at"] == e.defined_at
    # negative control: an error outside any field has no place
    with pytest.raises(Exception) as ei2:
        layout.decode("nosuch", b"")
    assert getattr(ei2.value, "defined_at", None) is None


def test_nested_errors_name_the_inner_row():
    layout = registry.get_codec("n3pmesh").layout
    data = potsherd.write(potsherd.read(_example("cube.n3pmesh")))
    with pytest.raises(TruncatedError) as ei:
        layout.decode("n3pmesh", data[:len(data) - 2])
    e = ei.value
    path, line = _line_of(e.defined_at)
    leaf = e.path.split(".")[-1].split("[")[0]
    assert path.read_text().splitlines()[line - 1].split("\t")[0] == leaf


def _example(name: str, _cache={}) -> str:
    if "dir" not in _cache:
        import tempfile
        d = tempfile.mkdtemp()
        assert main(["example", d]) == 0
        _cache["dir"] = d
    return str(pathlib.Path(_cache["dir"]) / name)


def test_cli_layout_field_and_source(capsys):
    assert main(["layout", "n3pmesh", "--field", "n3pmesh.collapses[3].collapseTo"]) == 0
    out = capsys.readouterr().out.splitlines()
    collapse_to = next(f for f in registry.get_codec("n3pmesh").layout.record("collapse").fields
                       if f.name == "collapseTo")
    assert out[0].split()[0] == "collapses"
    assert out[1].split()[0] == "collapseTo" and out[1].split()[-1] == collapse_to.defined_at
    assert main(["layout", "n3pmesh", "--source"]) == 0
    out = capsys.readouterr().out
    # the chunks are named by the root that first needed them (other tests may
    # have compiled this shared KO layout first); the functions are all there
    fast = fastpath.fast_layout(registry.get_codec("n3pmesh").layout)
    dec, enc = fast.dec["n3pmesh"], fast.enc["n3pmesh"]
    for fn in (dec, enc):
        assert f"# {fn.__code__.co_filename}" in out
        assert f"def {fn.__name__}(" in out
    assert re.search(r"^# <potsherd-fast:\w+:(decode|encode)>", out, re.M)
    assert main(["layout", "n3pmesh", "--field", "n3pmesh.nope"]) == 1
    assert "no field 'nope'" in capsys.readouterr().err
    assert main(["layout", "fbx"]) == 2
