"""``potsherd bundle``: a BagIt package validated by the Library of Congress
``bagit`` library; masters untouched, access copies, per-file records, resume."""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from potsherd import registry
from potsherd.cli import main
from potsherd.preserve import bundle as B
from potsherd.preserve.identify import identify
from corpus_paths import CORPUS_ROOT
from preserve_fixtures import EXPECTED, make_game_tree

bagit = pytest.importorskip("bagit")
logging.getLogger("bagit").setLevel(logging.WARNING)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return make_game_tree(tmp_path_factory.mktemp("game"))


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _valid(package) -> None:
    bagit.Bag(str(package)).validate(processes=1)   # raises naming what is wrong


def _record(package: Path, rel: str) -> dict:
    return json.loads((package / "data" / "metadata" / f"{rel}.json").read_text("utf-8"))


def test_fixture_tree_bag_validates_with_masters_records_and_access_copies(tree, tmp_path):
    pkg = tmp_path / "pkg"
    s = B.bundle(str(tree), str(pkg), workers=2)
    assert (s.files, s.done, s.failed) == (len(_files(tree)), len(_files(tree)), 0)
    _valid(pkg)
    assert not (pkg / B.INCOMPLETE).exists()
    info = (pkg / "bag-info.txt").read_text()
    assert f"Payload-Oxum: {s.payload_bytes}.{s.payload_files}" in info
    found = {os.path.relpath(r.path, tree).replace(os.sep, "/"): r
             for r in identify([str(tree)], members=False)}
    for rel in _files(tree):
        src, master = tree / rel, pkg / "data" / "master" / rel
        assert master.read_bytes() == src.read_bytes()                      # untouched
        assert master.stat().st_mtime_ns == src.stat().st_mtime_ns
        rec = _record(pkg, rel)
        r = found[rel]
        assert (rec["format"], rec["version"], rec["id"], rec["basis"]) == \
            (r.format, r.version, r.id, r.basis), rel
        assert rec["size"] == src.stat().st_size and rec["potsherd"]
        import hashlib
        assert rec["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    # access copies by declared hook: glTF for models, PNG for textures, JSON otherwise
    kinds = {rel: sorted({a["kind"] for a in _record(pkg, rel)["access"]}) for rel in EXPECTED}
    assert kinds["models/cube.n3pmesh"] == kinds["models/cube.dts"] == \
        kinds["models/cube.fbx"] == ["glb"]
    assert kinds["world/example.bmp"] == ["png"] and kinds["world/example.pal"] == ["json"]
    assert kinds["world/example.vol"] != ["json"]          # an archive is not dumped whole
    glb = pkg / _record(pkg, "models/cube.dts")["access"][0]["path"]
    assert glb.read_bytes()[:4] == b"glTF"
    from PIL import Image
    png = pkg / _record(pkg, "world/example.bmp")["access"][0]["path"]
    assert Image.open(png).size == (16, 8)
    # the JSON access copy is the lossless form: it builds the master back byte for byte
    js = pkg / _record(pkg, "world/example.pal")["access"][0]["path"]
    doc = registry.from_json(json.loads(js.read_text("utf-8")))
    assert doc.codec.encode(doc) == (tree / "world" / "example.pal").read_bytes()
    assert _record(pkg, "README.txt")["format"] is None
    assert _record(pkg, "README.txt")["access"] == []


def test_verify_names_an_altered_or_missing_master(tree, tmp_path, capsys):
    pkg = tmp_path / "pkg"
    assert main(["bundle", str(tree), "-o", str(pkg), "-j", "1", "--no-access"]) == 0
    capsys.readouterr()
    assert main(["bundle", "--verify", str(pkg)]) == 0
    assert "valid" in capsys.readouterr().out
    victim = pkg / "data" / "master" / "models" / "cube.dts"
    data = bytearray(victim.read_bytes())
    data[100] ^= 1
    victim.write_bytes(bytes(data))
    assert main(["bundle", "--verify", str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "data/master/models/cube.dts" in out and "INVALID" in out
    assert "cube.fbx" not in out
    victim.unlink()
    res = B.verify(str(pkg))
    assert not res.ok and any("data/master/models/cube.dts" in p for p in res.problems)


def test_interrupted_bundle_resumes_without_redoing_finished_files(tree, tmp_path):
    pkg = tmp_path / "pkg"
    s = B.bundle(str(tree), str(pkg), stop_after=4)
    assert s.done == 4
    assert (pkg / B.INCOMPLETE).exists() and not (pkg / "bagit.txt").exists()
    assert not B.verify(str(pkg)).ok
    records = sorted((pkg / "data" / "metadata").rglob("*.json"))
    assert len(records) == 4
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in records}
    # a worker killed mid-write leaves a temporary file behind
    leftover = pkg / "data" / "master" / "world" / ".potsherd-999-master.part"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"half")
    with pytest.raises(B.BundleError):
        B.bundle(str(tree), str(pkg))                     # not without --resume
    done = []
    s = B.bundle(str(tree), str(pkg), resume=True, workers=2,
                 progress=lambda rel, status, res: done.append(rel))
    assert (s.skipped_finished, s.done, s.failed) == (4, len(_files(tree)) - 4, 0)
    finished = {p.relative_to(pkg / "data" / "metadata").as_posix()[:-5] for p in records}
    assert not finished & set(done)                        # not redone
    for p, stamp in before.items():
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == stamp
    assert not leftover.exists()
    _valid(pkg)


def test_refusals(tree, tmp_path):
    with pytest.raises(B.BundleError):
        B.bundle(str(tree), str(tree / "inside"))
    with pytest.raises(B.BundleError):
        B.bundle(str(tmp_path / "missing"), str(tmp_path / "pkg"))
    assert main(["bundle", str(tree)]) == 2                # no -o


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("folder,subset", [("ko", "data/Object"), ("tribes", "")])
def test_corpus_folders_bag_and_validate(folder, subset, tmp_path):
    src = CORPUS_ROOT / folder / subset
    if not src.is_dir():
        pytest.skip(f"corpus {folder} not present")
    pkg = tmp_path / "pkg"
    s = B.bundle(str(src), str(pkg), workers=2)
    assert s.failed == 0 and s.done == len(_files(src)) and s.identified > 0
    _valid(pkg)
    for rel in _files(src):
        assert (pkg / "data" / "master" / rel).read_bytes() == (src / rel).read_bytes()
    # every identified model and texture got its access copy
    for rel in _files(src):
        rec = _record(pkg, rel)
        if rec["format"] and rec["valid"]:
            codec = registry.get_codec(rec["format"])
            kinds = {a["kind"] for a in rec["access"]}
            if codec.to_scene is not None and "glb" not in kinds:
                assert any(w.startswith(("glb: none", "access copy failed")) for w in
                           rec["warnings"]), rel
            if codec.textures is not None and not hasattr(codec, "member_names"):
                assert "png" in kinds or rec["warnings"], rel


def test_fast_identification_without_access_copies(tree, tmp_path):
    pkg = tmp_path / "pkg"
    assert main(["bundle", str(tree), "-o", str(pkg), "-j", "1", "--no-access",
                 "--fast-identify"]) == 0
    _valid(pkg)
    assert _record(pkg, "models/cube.n3pmesh")["basis"] == "extension-only"
    assert _record(pkg, "models/cube.n3pmesh")["valid"] is None
    assert _record(pkg, "models/cube.dts")["basis"] == "version word"
    assert all(_record(pkg, rel)["access"] == [] for rel in EXPECTED)


@pytest.mark.slow
def test_a_killed_bundle_process_resumes(tree, tmp_path):
    """The command killed (SIGKILL, workers and all) part-way: --resume keeps
    every finished file as it is and completes a valid package."""
    import signal
    import subprocess
    import sys
    import time
    big = tmp_path / "big"
    shutil.copytree(tree, big)
    data = (tree / "models" / "cube.dts").read_bytes()
    for i in range(400):
        d = big / f"copies{i // 100}"
        d.mkdir(exist_ok=True)
        (d / f"c{i}.dts").write_bytes(data)
    pkg = tmp_path / "pkg"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "potsherd", "bundle", str(big), "-o", str(pkg),
                             "-j", "2"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    meta = pkg / "data" / "metadata"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if meta.is_dir() and sum(1 for _ in meta.rglob("*.json")) >= 30:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)                    # the workers see their pipe close and exit
    done = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in meta.rglob("*.json")}
    total = len(_files(big))
    assert 30 <= len(done) < total and not (pkg / "bagit.txt").exists()
    s = B.bundle(str(big), str(pkg), resume=True, workers=2)
    assert (s.failed, s.skipped_finished + s.done) == (0, total)
    assert s.skipped_finished >= len(done)
    for p, stamp in done.items():
        assert (p.stat().st_ino, p.stat().st_mtime_ns) == stamp
    _valid(pkg)
    assert not any(p.name.endswith(".part") for p in (pkg / "data").rglob("*"))


@pytest.mark.corpus
def test_tables_get_csv_access_copies_through_the_declared_hook(tmp_path):
    src = CORPUS_ROOT / "ko" / "data" / "Data"
    tables = sorted(src.glob("*.tbl")) if src.is_dir() else []
    if not tables:
        pytest.skip("no KO tables in the corpus")
    pkg = tmp_path / "pkg"
    assert B.bundle(str(src), str(pkg)).failed == 0
    for p in tables:
        rec = _record(pkg, p.name)
        codec = registry.get_codec(rec["format"])
        assert codec.to_csv is not None
        assert [a["kind"] for a in rec["access"]] == ["csv"]
        doc = registry.decode(p.read_bytes(), path=str(p))
        assert (pkg / rec["access"][0]["path"]).read_bytes() == codec.to_csv(doc).encode("utf-8")
    _valid(pkg)
