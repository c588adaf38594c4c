"""Start-up work of a one-file FBX conversion: only the FBX family is imported
(detection by extension and codec look-up by name load the one family that
claims them), with the same detection answers and the same codec table as
when every family is imported at once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from potsherd import families, registry

from test_fbx_scene import QUAD

ROOT = Path(__file__).resolve().parents[2]
OTHER_FAMILIES = ("potsherd.formats.ko", "potsherd.formats.darkstar", "potsherd.formats.trle")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _modules_after_cli(args: list[str]) -> set[str]:
    code = ("import sys, runpy; sys.argv = ['potsherd'] + %r\n"
            "try:\n runpy.run_module('potsherd', run_name='__main__')\n"
            "except SystemExit as e: assert not e.code, e.code\n"
            "print('MODULES', ' '.join(sorted(sys.modules)))" % (args,))
    line = next(x for x in _run(code).splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_one_fbx_to_glb_imports_only_the_fbx_family(tmp_path):
    src = tmp_path / "scene.fbx"
    ascii_doc = registry.decode(QUAD.encode(), format="fbx-ascii")
    src.write_bytes(registry.get_codec("fbx-ascii").convert(ascii_doc, "binary"))
    assert src.read_bytes().startswith(b"Kaydara FBX Binary")
    modules = _modules_after_cli(["convert", str(src), str(tmp_path / "out.glb"), "--to", "glb"])
    assert (tmp_path / "out.glb").read_bytes()[:4] == b"glTF"
    assert "potsherd.formats.fbx.scene" in modules
    assert not [m for m in modules if m.startswith(OTHER_FAMILIES)], sorted(modules)
    assert "multiprocessing" not in modules  # workers are for folder batches
    # negative control: a name no family claims alone is detected with every family
    odd = tmp_path / "scene.bin"
    odd.write_bytes(src.read_bytes())
    modules = _modules_after_cli(["info", str(odd)])
    assert all(any(m.startswith(f) for m in modules) for f in OTHER_FAMILIES)


def test_a_folder_of_fbx_to_glb_imports_only_the_fbx_family(tmp_path):
    """The folder walk (which names it knows) and the plan (which it can
    convert) read the manifest, so a batch of FBX files loads one family too."""
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    data = registry.get_codec("fbx-ascii").convert(
        registry.decode(QUAD.encode(), format="fbx-ascii"), "binary")
    for name in ("a.fbx", "sub/b.FBX"):
        (src / name).write_bytes(data)
    (src / "notes.txt").write_text("not a model")  # a name the manifest does not list
    out = tmp_path / "out"
    modules = _modules_after_cli(["convert", str(src), str(out), "--to", "glb", "--jobs", "1"])
    assert (out / "a.glb").read_bytes()[:4] == b"glTF"
    assert (out / "sub" / "b.glb").read_bytes()[:4] == b"glTF"
    assert "potsherd.formats.fbx.scene" in modules
    assert not [m for m in modules if m.startswith(OTHER_FAMILIES)], sorted(modules)
    # negative control: planning beside a file the KO family claims loads that family
    (src / "c.n3pmesh").write_bytes(b"\0" * 8)
    planned = _run("import sys\nfrom potsherd.convert import plan_folder\n"
                   f"plan, skipped = plan_folder({str(src)!r}, {str(out)!r}, 'glb')\n"
                   "print(len(plan), ' '.join(sorted(sys.modules)))").split()
    assert planned[0] == "3"
    assert any(m.startswith("potsherd.formats.ko") for m in planned[1:])


def test_table_after_a_partial_load_is_in_the_all_at_once_order():
    all_at_once = _run("from potsherd import registry as r\n"
                       "print(' '.join(c.name for c in r.codecs()))")
    partial = _run("from potsherd import registry as r\n"
                   "r.detect(b'', 'x.fbx'); assert not r.loaded()\n"
                   "r.get_codec('n3pmesh'); assert not r.loaded()\n"
                   "print(' '.join(c.name for c in r.codecs()))")
    assert partial == all_at_once
    assert all_at_once.split()[0] != "fbx"  # the FBX family is not the first one


@pytest.fixture
def fresh_registry():
    """The registry as a new process has it; restored afterwards."""
    saved = (dict(registry._CODECS), registry._LOADED, set(registry._FAMILIES_LOADED),
             list(registry._EARLY), registry._COMPLETE, set(registry._FAMILIES_DONE))
    yield
    registry._CODECS.clear()
    registry._CODECS.update(saved[0])
    registry._LOADED = saved[1]
    registry._FAMILIES_LOADED.clear()
    registry._FAMILIES_LOADED.update(saved[2])
    registry._EARLY[:] = saved[3]
    registry._COMPLETE = saved[4]
    registry._FAMILIES_DONE.clear()
    registry._FAMILIES_DONE.update(saved[5])
    registry._DETECT_INDEX.clear()


def _reset() -> None:
    registry._CODECS.clear()
    registry._LOADED = registry._COMPLETE = False
    registry._FAMILIES_LOADED.clear()
    registry._FAMILIES_DONE.clear()
    registry._EARLY.clear()
    registry._DETECT_INDEX.clear()


def test_detection_by_extension_matches_the_full_table(fresh_registry):
    rows = families.read_manifest()
    magics = [b""] + [bytes.fromhex(r["magic"]) + bytes(64) for r in rows if r["magic"]]
    extensions = sorted({e for r in rows for e in r["extensions"]})
    registry.codecs()
    full = {(ext, m): registry.detect(m, "a" + ext).name for ext in extensions for m in magics}
    partial_only = 0
    for ext in extensions:
        for m in magics:
            _reset()
            assert registry.detect(m, "a" + ext).name == full[ext, m], (ext, m[:8])
            partial_only += not registry.loaded()
    assert partial_only > len(magics)  # most extensions really went the one-family way


def test_the_command_line_starts_blas_single_threaded_unless_told_otherwise():
    """A CLI process sets OPENBLAS_NUM_THREADS=1 before numpy loads (its arrays
    are small; threads only cost start-up), keeping a value the user set."""
    code = "import os, potsherd.cli, numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    for given, expected in ((None, "1"), ("3", "3")):
        run_env = dict(env, **({} if given is None else {"OPENBLAS_NUM_THREADS": given}))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=run_env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected
    # negative control: importing the library alone changes nothing
    out = subprocess.run([sys.executable, "-c", "import os, potsherd.api; "
                          "print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "None"
