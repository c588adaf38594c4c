"""Issue 41: the installed package works without a checkout.  Builds the wheel, installs it
into a fresh virtualenv in a temporary folder (``--system-site-packages`` for numpy and the
other dependencies), and from outside the checkout runs the README's quick start with
``convert --validate``, ``potsherd view`` serving three.js from the package, and
``--validate`` without node saying exactly that.

Skips without npm-installed ``tools/*/node_modules`` (the build copies them) or node."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow]

if not (ROOT / "tools" / "viewer" / "node_modules" / "three").is_dir() or \
        not (ROOT / "tools" / "gltf-validator" / "node_modules" / "gltf-validator").is_dir():
    pytest.skip("tools/*/node_modules not installed (npm ci --prefix tools/viewer, "
                "tools/gltf-validator)", allow_module_level=True)
NODE = shutil.which("node")
if NODE is None:
    pytest.skip("node not installed", allow_module_level=True)


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    build = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(dist)])
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("potsherd-*.whl")
    env_dir = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)])
    assert made.returncode == 0, made.stderr
    py = env_dir / "bin" / "python"
    inst = _run([str(py), "-m", "pip", "install", "--no-deps", "--ignore-installed",
                 "--no-index", str(wheel)])
    assert inst.returncode == 0, inst.stderr[-3000:]
    work = tmp / "user"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in (
        "PYTHONPATH", "POTSHERD_VIEWER_MODULES", "POTSHERD_GLTF_VALIDATOR")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = _run([str(py), "-c", "import potsherd; print(potsherd.__file__)"], cwd=work, env=env)
    assert where.stdout.strip().startswith(str(env_dir)), where.stdout   # not the checkout
    return {"wheel": wheel, "bin": env_dir / "bin", "work": work, "env": env, "py": py}


def test_wheel_carries_three_and_the_validator_with_licences(venv):
    names = set(zipfile.ZipFile(venv["wheel"]).namelist())
    three = "potsherd/_vendor/viewer/three/"
    for rel in ("build/three.module.js", "build/three.core.js", "LICENSE",
                "examples/jsm/loaders/GLTFLoader.js", "examples/jsm/controls/OrbitControls.js",
                "examples/jsm/utils/BufferGeometryUtils.js"):
        assert three + rel in names, rel
    val = "potsherd/_vendor/gltf-validator/"
    for rel in ("validate.js", "node_modules/gltf-validator/index.js",
                "node_modules/gltf-validator/LICENSE", "node_modules/gltf-validator/NOTICES"):
        assert val + rel in names, rel
    lock = json.loads((ROOT / "tools" / "viewer" / "package-lock.json").read_text())
    packed = json.loads(zipfile.ZipFile(venv["wheel"]).read(three + "package.json"))
    assert packed["version"] == lock["packages"]["node_modules/three"]["version"]
    assert not any("/examples/jsm/webxr/" in n for n in names)   # only what the page imports


def test_quick_start_with_validate_outside_the_checkout(venv):
    pot = str(venv["bin"] / "potsherd")
    w, env = venv["work"], venv["env"]
    steps = [[pot, "example", "demo"], [pot, "info", "demo/cube.n3pmesh"],
             [pot, "convert", "demo/cube.n3pmesh", "demo/cube.glb", "--validate"],
             [pot, "convert", "demo/cube.glb", "demo/cube_back.n3pmesh"]]
    for cmd in steps:
        run = _run(cmd, cwd=w, env=env)
        assert run.returncode == 0, (cmd, run.stdout, run.stderr)
        if "--validate" in cmd:
            assert "validate: 1 file, 0 errors" in run.stderr, run.stderr
    assert (w / "demo" / "cube.glb").read_bytes()[:4] == b"glTF"


def test_validate_without_node_says_so(venv, tmp_path):
    bindir = tmp_path / "bin"          # a PATH with python and potsherd, without node
    bindir.mkdir()
    for name in ("python", "potsherd"):
        os.symlink(venv["bin"] / name, bindir / name)
    env = {**venv["env"], "PATH": str(bindir)}
    run = _run([str(bindir / "potsherd"), "example", "demo"], cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    run = _run([str(bindir / "potsherd"), "convert", "demo/cube.n3pmesh", "demo/cube.glb",
                "--validate"], cwd=tmp_path, env=env)
    assert run.returncode == 2
    assert "node is not installed" in run.stderr and "nodejs" in run.stderr, run.stderr
    assert "site-packages" not in run.stderr and "tools/" not in run.stderr
    assert (tmp_path / "demo" / "cube.glb").is_file()      # the conversion itself happened


def test_view_serves_three_from_the_package(venv):
    from test_view_security import http_get
    proc = subprocess.Popen([str(venv["bin"] / "potsherd"), "view", ".", "--no-browser"],
                            cwd=venv["work"], env=venv["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        port = int(line.split(" at ")[1].split()[0].rstrip("/").rsplit(":", 1)[1])
        lock = ROOT / "tools" / "viewer" / "node_modules" / "three"
        for rel in ("build/three.module.js", "build/three.core.js",
                    "examples/jsm/loaders/GLTFLoader.js", "examples/jsm/utils/SkeletonUtils.js"):
            status, head, body = http_get(port, "/vendor/three/" + rel)
            assert status == 200 and head["content-type"] == "text/javascript", rel
            assert body == (lock / rel).read_bytes()
        status, _, page = http_get(port, "/")
        assert status == 200 and b'"/vendor/three/build/three.module.js"' in page
        assert http_get(port, "/vendor/three/examples/jsm/webxr/VRButton.js")[0] == 404
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "three.js" not in err      # no "three.js not found" message
