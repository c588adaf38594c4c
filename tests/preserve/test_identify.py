"""``potsherd identify``: the format, version, id and basis of every file, from
the codecs' declarations; unknown files stay unknown."""
from __future__ import annotations

import json
import os

import pytest

from potsherd import families, registry
from potsherd.cli import main
from potsherd.containers import read_file_bytes
from potsherd.core.errors import FormatError
from potsherd.preserve.identify import identify, identify_bytes
from potsherd.preserve.ids import format_id
from corpus_paths import CORPUS_ROOT
from preserve_fixtures import EXPECTED, make_controls, make_game_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return make_game_tree(tmp_path_factory.mktemp("game"))


def _by_path(results, root):
    return {os.path.relpath(r.path, root) if "::" not in r.path else
            os.path.relpath(r.path.split("::")[0], root) + "::" + r.path.split("::", 1)[1]: r
            for r in results}


def test_every_fixture_file_is_named_with_its_basis(tree):
    found = _by_path(identify([str(tree)]), tree)
    for rel, (family, fmt, version, basis) in EXPECTED.items():
        r = found[rel]
        assert (r.family, r.format, r.version, r.basis, r.valid) == \
            (family, fmt, version, basis, True), rel
        codec = registry.get_codec(fmt)
        assert r.id.startswith(format_id(codec))
        assert r.size == (tree / rel).stat().st_size
    # the versioned ids carry their version group
    assert found["models/cube.dts"].id == "potsherd/darkstar/dts/v8"
    assert found["models/cube.fbx"].id == "potsherd/fbx/fbx/v3000-7400"
    assert found["models/cube.n3pmesh"].id == "potsherd/ko/n3pmesh"
    assert found["README.txt"].format is None and found["README.txt"].id is None


def test_archive_members_are_identified_in_place(tree):
    found = _by_path(identify([str(tree / "world" / "example.vol")]), tree)
    members = {k: v for k, v in found.items() if "::" in k}
    assert members, found
    vol = registry.decode(read_file_bytes(str(tree / "world" / "example.vol")),
                          path="example.vol")
    names = vol.codec.member_names(vol)
    assert sorted(k.split("::", 1)[1] for k in members) == sorted(names)
    for k, r in members.items():
        doc = registry.decode(vol.codec.read_member(vol, k.split("::", 1)[1]),
                              path=k.split("::", 1)[1])
        assert (r.format, r.valid) == (doc.format, True)
    # --no-members: the archive alone
    assert len(list(identify([str(tree / "world" / "example.vol")], members=False))) == 1


def test_controls_are_unknown_not_guessed(tmp_path):
    for path in make_controls(tmp_path):
        (r,) = identify([str(path)])
        assert r.format is None and r.id is None and r.basis is None, (path.name, r)
        assert r.error
    # the reason names the format the extension suggested and what is absent
    (r,) = identify([str(tmp_path / "picture.bmp")])
    assert "pbmp" in r.error and "signature is absent" in r.error


def test_the_bytes_win_over_the_extension(tree, tmp_path):
    data = (tree / "world" / "example.vol").read_bytes()
    r = identify_bytes(data, "mislabelled.dts")
    assert (r.format, r.basis, r.valid) == ("vol", "magic", True)
    assert "extension .dts" in r.note
    # a magic-less format under another's extension is not found by structure alone
    pm = (tree / "models" / "cube.n3pmesh").read_bytes()
    assert identify_bytes(pm, "cube.n3shape").format != "n3pmesh"


def test_a_signature_that_matches_but_does_not_decode_is_named_invalid(tree):
    data = bytearray((tree / "models" / "cube.dts").read_bytes())
    r = identify_bytes(bytes(data[:40]), "cut.dts")
    assert (r.format, r.version, r.basis, r.valid) == ("dts", "8", "version word", False)
    with pytest.raises(FormatError):
        registry.decode(bytes(data[:40]), path="cut.dts")
    assert r.error


def test_fast_mode_names_magicless_formats_by_extension_only(tree):
    found = _by_path(identify([str(tree)], deep=False), tree)
    assert (found["models/cube.n3pmesh"].basis, found["models/cube.n3pmesh"].valid) == \
        ("extension-only", None)
    assert found["models/cube.dts"].basis == "version word"
    assert found["world/example.bmp"].basis == "magic"


def test_cli_json_lines(tree, capsys):
    assert main(["identify", "--json", str(tree / "models")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {os.path.basename(r["path"]) for r in rows} == {"cube.n3pmesh", "cube.dts", "cube.fbx"}
    for r in rows:
        assert set(r) >= {"path", "family", "format", "version", "id", "basis"}
    assert main(["identify", str(tree / "README.txt")]) == 0     # unknown is an answer
    assert "unknown" in capsys.readouterr().out
    assert main(["identify", str(tree / "no-such-file.dts")]) == 1  # a file not read is not
    assert "unreadable" in capsys.readouterr().out


def _corpus_folder_family() -> dict[str, str]:
    return {d: f.name for f in families.FAMILIES for d in f.corpus}


@pytest.mark.corpus
def test_corpus_files_are_named_as_the_readers_read_them():
    """Every corpus file: identify names the codec the registry decodes it with
    (in the family of its corpus folder), and calls unknown exactly the files
    no codec reads."""
    if not CORPUS_ROOT.is_dir():
        pytest.skip("corpus not present")
    folder_family = _corpus_folder_family()
    named = unknown = 0
    for r in identify([str(CORPUS_ROOT)], members=False):
        data = read_file_bytes(r.path)
        try:
            doc = registry.decode(data, path=r.path) if data else None
        except FormatError:
            doc = None
        if doc is None:
            assert r.format is None, r
            unknown += 1
            continue
        assert (r.format, r.valid) == (doc.format, True), r.path
        folder = os.path.relpath(r.path, CORPUS_ROOT).split(os.sep)[0]
        if folder in folder_family:
            assert r.family == folder_family[folder], r.path
        named += 1
    assert named > 400 and unknown > 0


def test_fast_mode_still_lets_a_signature_beat_the_extension(tree):
    data = (tree / "world" / "example.vol").read_bytes()
    r = identify_bytes(data, "packed.n3pmesh", deep=False)
    assert (r.format, r.basis, r.valid) == ("vol", "magic", None) and "n3pmesh" in r.note
