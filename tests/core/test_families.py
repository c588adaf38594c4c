"""The family descriptors and the declared codec features: the generated manifest
matches the codecs, and listing formats imports no family and no Pillow."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import potsherd
from potsherd import cli, families, registry

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_matches_the_codecs():
    # regenerate with: python3 -c "import potsherd.families as f; f.write_manifest()"
    assert families.read_manifest() == families.build_manifest()


def test_every_codec_belongs_to_its_descriptor():
    for fam in families.FAMILIES:
        codecs = fam.codecs()
        assert codecs, fam.name
        assert {c.family for c in codecs} == {fam.name}
        assert (ROOT / fam.docs).is_file(), fam.docs


def test_features_follow_the_declarations():
    rows = {r["name"]: r["features"] for r in potsherd.list_formats()}
    assert rows["n3pmesh"] == {"read": True, "write": True, "json": True, "export": True,
                               "import": True, "textures": False, "transcode": False}
    assert rows["n3anim"]["export"] is False and rows["n3anim"]["import"] is True
    assert rows["fbx"]["transcode"] is True and rows["fbx-ascii"]["transcode"] is True
    assert rows["dxt"]["textures"] is True and rows["dxt"]["export"] is False
    for c in registry.codecs():
        assert rows[c.name]["export"] == (c.to_scene is not None)
        assert rows[c.name]["import"] == (c.from_scene is not None)


def _imported_by(args: list[str]) -> tuple[set[str], str]:
    code = ("import sys, runpy; sys.argv = ['potsherd'] + %r\n"
            "try:\n runpy.run_module('potsherd', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)" % (args,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    line = next(x for x in out.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:]), out.stdout


@pytest.mark.parametrize("args", [["formats"], ["formats", "--json"]])
def test_listing_formats_imports_no_family_and_no_pillow(args):
    modules, stdout = _imported_by(args)
    assert not [m for m in modules if m.startswith("potsherd.formats.")], sorted(modules)
    assert "PIL" not in modules
    if "--json" in args:
        rows = json.loads(stdout)
        assert {r["name"] for r in rows} == {c.name for c in registry.codecs()}
    else:
        assert "n3pmesh" in stdout and "read,write,json,export,import" in stdout


def test_family_commands_load_only_their_family():
    modules, _ = _imported_by(["trle", "--help"])
    assert "potsherd.cli.trle" in modules
    assert "potsherd.formats.darkstar" not in modules
    # negative control: the bare help lists every family's commands
    modules, stdout = _imported_by(["--help"])
    assert "potsherd.cli.trle" in modules and "extract" in stdout


def test_core_commands_are_the_parsers_own():
    parser = cli.build_parser("formats")
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.CORE_COMMANDS)
    every = cli.build_parser()
    sub = next(a for a in every._actions if a.dest == "command")
    extra = set(sub.choices) - set(cli.CORE_COMMANDS)
    assert extra == {c for f in families.FAMILIES for c in f.cli_commands}


def test_extension_of_a_path_is_what_splitext_gives():
    """registry._ext_of is a fast splitext; every odd name agrees with it."""
    import os.path
    from hypothesis import given, strategies as st
    from potsherd.registry import _ext_of

    names = st.text(alphabet="ab.Z/ _-", max_size=12)

    @given(names)
    def agrees(p):
        assert _ext_of(p) == os.path.splitext(os.path.basename(p).lower())[1]
    agrees()
    for p in ("a.N3PMesh", ".bashrc", "..x", "dir.d/file", "x.", "a/.b.c", "...", "/t/a.tar.gz"):
        assert _ext_of(p) == os.path.splitext(os.path.basename(p).lower())[1], p
