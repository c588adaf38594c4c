"""The codec plugin API: the documented example package (docs/examples/
potsherd-demo-plugin) installed into a temporary environment is listed by
``potsherd formats`` with its origin and served by roundtrip, validate,
identify, the signature files and the fuzzers like a built-in codec."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from corpus_paths import ROOT

PLUGIN = ROOT / "docs" / "examples" / "potsherd-demo-plugin"
ORIGIN = "potsherd-demo-plugin 0.3.1"


def _points(version: int, pts: list[tuple[float, float, float]]) -> bytes:
    """The format's bytes written by hand (an oracle independent of the plugin)."""
    return b"DPTS" + struct.pack("<HI", version, len(pts)) + \
        b"".join(struct.pack("<3f", *p) for p in pts)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A virtual environment seeing the system's packages, with the plugin
    installed by pip (no network: --no-index, no build isolation)."""
    base = tmp_path_factory.mktemp("plugin-env")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-index", "--no-build-isolation", str(PLUGIN)],
                          capture_output=True, text=True, timeout=300,
                          cwd=str(base))
    assert proc.returncode == 0, proc.stderr
    return py, base


def _run(env, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    py, base = env
    environ = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([str(py), *args], capture_output=True, text=True, timeout=600,
                          env=environ, cwd=str(base))
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


pytestmark = pytest.mark.slow


def test_formats_lists_the_plugin_with_its_origin(env):
    rows = json.loads(_run(env, "-m", "potsherd", "formats", "--json").stdout)
    row = next(r for r in rows if r["name"] == "demopts")
    assert (row["family"], row["origin"], row["extensions"], row["magic"]) == \
        ("demo", ORIGIN, [".dpts"], b"DPTS".hex())
    assert all(r["origin"] == "potsherd" for r in rows if r["name"] != "demopts")
    text = _run(env, "-m", "potsherd", "formats").stdout
    assert "demo:" in text and f"[plugin: {ORIGIN}]" in text
    # the built-in codecs come first: a plugin never shadows one
    assert [r["name"] for r in rows].index("demopts") == len(rows) - 1


def test_roundtrip_validate_identify_serve_the_plugin(env):
    _, base = env
    good = base / "cloud.dpts"
    good.write_bytes(_points(1, [(1, 2, 3), (-4, 5.5, 6)]))
    out = _run(env, "-m", "potsherd", "roundtrip", "--json", str(good)).stdout
    row = json.loads(out.splitlines()[0])
    assert (row["format"], row["ok"], row["bytes"]) == ("demopts", True, good.stat().st_size)
    _run(env, "-m", "potsherd", "validate", str(good))
    dump = json.loads(_run(env, "-m", "potsherd", "dump", "--form", "readable", str(good)).stdout)
    assert dump["format"] == "demopts" and dump["root"]["count"] == 2
    ident = json.loads(_run(env, "-m", "potsherd", "identify", "--json", str(good)).stdout)
    assert (ident["family"], ident["format"], ident["version"], ident["id"], ident["basis"]) == \
        ("demo", "demopts", "1", "potsherd/demo/demopts/v1", "version word")
    # another version: the catch-all signature, the version read by decoding
    other = base / "cloud2.dpts"
    other.write_bytes(_points(2, [(0, 0, 0)]))
    ident = json.loads(_run(env, "-m", "potsherd", "identify", "--json", str(other)).stdout)
    assert (ident["version"], ident["id"], ident["basis"]) == \
        ("2", "potsherd/demo/demopts", "magic")
    # a truncated file: refused with the offset, never a traceback
    bad = base / "cut.dpts"
    bad.write_bytes(_points(1, [(1, 2, 3)])[:-2])
    proc = _run(env, "-m", "potsherd", "validate", str(bad), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    # the signature files carry the plugin's entries
    sigs = base / "sigs.xml"
    _run(env, "-m", "potsherd", "signatures", "--fido", str(sigs))
    text = sigs.read_text()
    assert "potsherd/demo/demopts/v1" in text and r"\x44\x50\x54\x53\x01\x00" in text


def test_the_fuzzers_serve_the_plugin(env):
    _, base = env
    rep = base / "fuzz.json"
    _run(env, str(ROOT / "fuzz" / "run.py"), "--family", "demo", "--inputs", "300",
         "--no-corpus", "--report", str(rep))
    report = json.loads(rep.read_text())
    runs = report if isinstance(report, list) else report.get("families", [report])
    demo = next(r for r in runs if r.get("family") == "demo")
    assert demo["seeds"] > 0 and demo["inputs"] >= 300 and not demo["findings"]


def test_broken_or_clashing_plugins_are_skipped_with_the_reason(monkeypatch):
    """In-process, on the loader: an entry point that fails to import, one that
    gives no codecs and one reusing a built-in codec's name are each skipped
    with the reason; potsherd keeps working and registers nothing of theirs."""
    import importlib.metadata
    from potsherd import plugins, registry
    from potsherd.registry import LayoutCodec

    registry.codecs()
    clash = LayoutCodec("n3pmesh", registry.get_codec("dis").layout, "dis", family="x")

    class EP:
        dist = None

        def __init__(self, name, value, load):
            self.name, self.value, self.module, self._load = name, value, value, load

        def load(self):
            return self._load()

    def missing():
        raise ImportError("No module named 'no_such_module'")
    eps = [EP("a-broken", "no_such_module:X", missing),
           EP("b-empty", "empty:CODECS", lambda: []),
           EP("c-clash", "clash:CODECS", lambda: [clash])]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: eps if group == plugins.PLUGIN_GROUP else [])
    monkeypatch.setattr(plugins, "_PLUGINS_LOADED", False)
    monkeypatch.setattr(plugins, "PLUGIN_ERRORS", [])
    before = dict(registry._CODECS)
    with pytest.warns(RuntimeWarning, match="not loaded"):
        registry.load_plugins()
    errors = dict(plugins.PLUGIN_ERRORS)
    assert set(errors) == {"a-broken = no_such_module:X", "b-empty = empty:CODECS",
                           "c-clash = clash:CODECS"}
    assert "ImportError" in errors["a-broken = no_such_module:X"]
    assert "already registered" in errors["c-clash = clash:CODECS"]
    assert registry._CODECS == before and registry.get_codec("n3pmesh") is before["n3pmesh"]
