"""``potsherd convert``: single files, folder batches, failures, atomic outputs;
and the renderer on known scenes."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from export_scenes import cube, skinned_cube_scene, textured_quad_scene
from potsherd import registry
from potsherd.cli import main
from potsherd.core.errors import FormatError, MagicError
from potsherd.document import Document
from potsherd.cli.batch import Progress
from potsherd.convert import convert_folder, plan_folder
from potsherd.export.gltf import NoSceneError, document_scene, write_glb
from potsherd.export.render import Gltf, render
from potsherd.export.validate import validate_many, validator_available
from potsherd.registry import Codec
from potsherd.scene import Mesh, Primitive, Scene


class CubeCodec(Codec):
    """A toy format: b"CUBE" + float32 edge length (+ b"!" makes to_scene crash)."""

    name = "test_cube"
    family = "test"
    extensions = (".testcube",)
    magic = b"CUBE"

    def decode(self, data, *, limits=None, **params):
        if not data.startswith(self.magic) or len(data) < 8:
            raise MagicError("not a test cube", offset=0)
        return Document(self.name, {"size": struct.unpack_from("<f", data, 4)[0],
                                    "crash": data[8:9] == b"!"})

    def encode(self, doc):
        return b"CUBE" + struct.pack("<f", doc.root["size"])

    def to_scene(self, doc, **options):
        if doc.root["crash"]:
            raise ZeroDivisionError("boom")
        if doc.root["size"] == 0:
            raise NoSceneError("an empty cube has nothing to export")
        pos, nrm, uv, idx = cube(doc.root["size"])
        s = Scene(name=str(options.get("source_path")))
        m = s.add_mesh(Mesh(primitives=[Primitive(positions=pos, normals=nrm, indices=idx)]))
        s.add_node(name="cube", mesh=m)
        return s


class NoSceneCodec(CubeCodec):
    name = "test_noscene"
    extensions = (".testflat",)
    magic = b"FLAT"
    to_scene = None


@pytest.fixture
def toy_codecs():
    registry.codecs()
    added = [CubeCodec(), NoSceneCodec()]
    for c in added:
        registry.register(c)
    yield added
    for c in added:
        registry._CODECS.pop(c.name, None)


def _tree(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "one.testcube").write_bytes(b"CUBE" + struct.pack("<f", 1.0))
    (root / "a" / "two.testcube").write_bytes(b"CUBE" + struct.pack("<f", 2.0))
    (root / "a" / "b" / "three.testcube").write_bytes(b"CUBE" + struct.pack("<f", 3.0))
    (root / "a" / "bad.testcube").write_bytes(b"CUB")
    (root / "a" / "crash.testcube").write_bytes(b"CUBE" + struct.pack("<f", 1.0) + b"!")
    (root / "a" / "flat.testflat").write_bytes(b"FLAT0000")
    (root / "a" / "empty.testcube").write_bytes(b"CUBE" + struct.pack("<f", 0.0))
    (root / "notes.txt").write_text("not a model")


def test_convert_single_file(tmp_path, toy_codecs, capsys):
    src = tmp_path / "one.testcube"
    src.write_bytes(b"CUBE" + struct.pack("<f", 2.0))
    assert main(["convert", str(src), str(tmp_path / "one.glb")]) == 0
    g = Gltf(str(tmp_path / "one.glb"))
    acc = g.json["accessors"][g.json["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]
    assert (acc["min"], acc["max"]) == ([-1.0, -1.0, -1.0], [1.0, 1.0, 1.0])
    assert g.json["scenes"][0]["name"] == str(src)          # source_path reaches to_scene
    assert main(["convert", str(src), str(tmp_path / "one.gltf")]) == 0
    assert (tmp_path / "one.bin").is_file()
    # output folder: name derived from the input
    (tmp_path / "out").mkdir()
    assert main(["convert", str(src), str(tmp_path / "out"), "--to", "glb"]) == 0
    assert (tmp_path / "out" / "one.glb").is_file()
    flat = tmp_path / "f.testflat"
    flat.write_bytes(b"FLAT0000")
    assert main(["convert", str(flat), str(tmp_path / "f.glb")]) == 1
    assert "test_noscene files cannot be exported to glTF" in capsys.readouterr().err
    assert not (tmp_path / "f.glb").exists()


def test_document_scene_errors(toy_codecs):
    doc = CubeCodec().decode(b"CUBE" + struct.pack("<f", 1.0) + b"!")
    with pytest.raises(FormatError, match="internal error in test_cube to_scene: "
                                          "ZeroDivisionError: boom"):
        document_scene(doc)
    with pytest.raises(NoSceneError):
        document_scene(NoSceneCodec().decode(b"FLAT0000"))


def test_plan_mirrors_tree(tmp_path, toy_codecs):
    _tree(tmp_path / "src")
    plan, skipped = plan_folder(str(tmp_path / "src"), str(tmp_path / "dst"), "glb")
    rel = sorted(str(d.relative_to(tmp_path / "dst")) if hasattr(d, "relative_to") else
                 d[len(str(tmp_path / "dst")) + 1:] for _, d in plan)
    assert rel == ["a/b/three.glb", "a/bad.glb", "a/crash.glb", "a/empty.glb", "a/two.glb",
                   "one.glb"]
    assert [s for s, _ in skipped] == [str(tmp_path / "src" / "a" / "flat.testflat")]


@pytest.mark.parametrize("jobs", [1, 2])
def test_convert_folder(tmp_path, toy_codecs, capsys, jobs):
    _tree(tmp_path / "src")
    rc = main(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--to", "glb",
               "--jobs", str(jobs)])
    err = capsys.readouterr().err
    assert rc == 1
    out = sorted(p.relative_to(tmp_path / "dst").as_posix()
                 for p in (tmp_path / "dst").rglob("*") if p.is_file())
    assert out == ["a/b/three.glb", "a/two.glb", "one.glb"]          # no partial files
    assert "3 of 6 files converted to glb" in err
    assert "1 file skipped" in err
    assert "convert: 1 file holds nothing to export:\n" in err
    assert "empty.testcube: an empty cube has nothing to export" in err
    assert "convert: 2 files failed:" in err
    assert f"{tmp_path / 'src' / 'a' / 'bad.testcube'}: MagicError: not a test cube" in err
    assert "crash.testcube: SceneExportError: internal error in test_cube to_scene" in err
    assert "convert: 6/6 files (100%), 2 failed" in err                # plain progress line
    g = Gltf(str(tmp_path / "dst" / "a" / "b" / "three.glb"))
    assert g.json["accessors"][0]["max"] == [1.5, 1.5, 1.5]


def test_convert_folder_all_good_exit_zero(tmp_path, toy_codecs, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.testcube").write_bytes(b"CUBE" + struct.pack("<f", 1.0))
    (tmp_path / "src" / "y.testcube").write_bytes(b"CUBE" + struct.pack("<f", 0.0))
    result = convert_folder(str(tmp_path / "src"), str(tmp_path / "dst"), "gltf", {}, jobs=1)
    assert (result.exit_code, result.planned, result.failures) == (0, 2, [])
    assert capsys.readouterr() == ("", "")           # the library prints nothing
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["x.bin", "x.gltf"]
    if validator_available():
        r = validate_many([tmp_path / "dst" / "x.gltf"])[0]
        assert (r["errors"], r["warnings"]) == (0, 0), r["messages"]


def test_folder_requires_target(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "dst")]) == 2
    assert "needs --to" in capsys.readouterr().err


def test_progress_tty_bar():
    class Tty:
        def __init__(self):
            self.text = ""

        def isatty(self):
            return True

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    t = Tty()
    p = Progress(2, t)
    p.update(True, 1000)
    p.update(False, 1000)
    assert "[" + "#" * 30 + "] 2/2 files (100%), 1 failed" in t.text
    assert t.text.endswith("\n") and "\r" in t.text


# ---- renderer: checks conventions on scenes with known answers ----------------------

def _tile(img, index, size=128):
    a = np.asarray(img)[14:]
    r, c = divmod(index, 2)
    return a[r * size:(r + 1) * size, c * size:(c + 1) * size]


def test_render_texture_origin_and_animation(tmp_path):
    write_glb(textured_quad_scene(), tmp_path / "quad.glb")
    img = render(str(tmp_path / "quad.glb"), size=128)
    front = _tile(img, 0)
    # the quad fills the middle of the front view; its top-left cell is blue
    tl = front[int(128 * 0.5 - 128 / 2.2) + 12, int(128 * 0.5 - 128 / 2.2) + 12]
    assert tl[2] > 150 and tl[0] < 60, tl
    br = front[int(128 * 0.5 + 128 / 2.2) - 3, int(128 * 0.5 + 128 / 2.2) - 3]
    assert br[2] < 150, br
    write_glb(skinned_cube_scene(), tmp_path / "skin.glb")
    start = _tile(render(str(tmp_path / "skin.glb"), time=0.0, size=128), 0)
    end = _tile(render(str(tmp_path / "skin.glb"), time=2.0, size=128), 0)
    bg = start[2, 2].copy()

    def covered(a):
        return np.any(a != bg, axis=-1)
    # at t=0 the box is upright and centred: the upper-left corner of the view is empty;
    # at t=2 the chest has bent 90 degrees to the left (+Z rotation) and fills it
    assert not covered(start[20:40, 5:20]).any()
    assert covered(end[20:40, 5:20]).mean() > 0.9
    # front faces only (no magenta back-face tint) on a closed, correctly wound box
    assert not np.any((start[..., 0] > 120) & (start[..., 2] > 120) & (start[..., 1] < 80))


@pytest.mark.skipif(not validator_available(), reason="gltf-validator not installed")
def test_convert_validate_flag(tmp_path, toy_codecs, capsys):
    _tree(tmp_path / "src")
    rc = main(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--to", "glb",
               "--jobs", "1", "--validate"])
    err = capsys.readouterr().err
    assert rc == 1                                   # the two bad inputs
    assert "validate: 3 files, 0 errors, 0 warnings (Khronos glTF validator 2." in err
    src = tmp_path / "src" / "one.testcube"
    assert main(["convert", str(src), str(tmp_path / "one.glb"), "--validate"]) == 0
    assert "validate: 1 file, 0 errors" in capsys.readouterr().err


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_folder_of_gltf_files_imports_to_a_game_format(tmp_path, capsys, jobs):
    """``convert DIR OUT --to n3cplug`` imports every .glb/.gltf of the tree (the
    modder's folder of Blender exports), each with its companions beside it; a
    file that cannot import fails alone and is listed; ``--to glb`` still skips them."""
    import potsherd
    src = tmp_path / "in"
    (src / "weapons").mkdir(parents=True)
    write_glb(textured_quad_scene(), src / "weapons" / "blade.glb")
    s = Scene()
    pos, nrm, _, idx = cube()
    s.add_node(name="box", mesh=s.add_mesh(Mesh(name="box", primitives=[Primitive(
        positions=np.asarray(pos, np.float32), normals=np.asarray(nrm, np.float32),
        indices=np.asarray(idx, np.uint32))])))
    write_glb(s, src / "box.glb")
    (src / "broken.glb").write_bytes(b"glTF\x02\x00\x00\x00" + b"\x00" * 8)
    (src / "notes.txt").write_text("not a model")
    out = tmp_path / "out"
    code = main(["convert", str(src), str(out), "--to", "n3cplug", "--jobs", str(jobs)])
    err = capsys.readouterr().err
    assert code == 1                                    # broken.glb failed, the rest converted
    assert "broken.glb" in err and "2 of 3 files converted to n3cplug" in err
    plug = potsherd.read(out / "weapons" / "blade.n3cplug")
    assert plug.format == "n3cplug"
    assert bytes(plug.root["geometry"]) == b"item\\blade.n3pmesh"
    assert potsherd.read(out / "weapons" / "blade.n3pmesh").format == "n3pmesh"
    assert potsherd.read(out / "weapons" / "blade.dxt").format == "dxt"   # its texture
    assert potsherd.read(out / "box.n3cplug").format == "n3cplug"
    # an import option of the target is accepted, an unknown one is a usage error
    assert main(["convert", str(src / "weapons"), str(tmp_path / "o2"), "--to", "n3cplug",
                 "--option", "textures=0"]) == 0
    assert not (tmp_path / "o2" / "blade.dxt").exists()
    capsys.readouterr()
    assert main(["convert", str(src / "weapons"), str(tmp_path / "o3"), "--to", "n3cplug",
                 "--option", "nope=1"]) == 2
    # --like is the original of one file: refused for a folder (it used to be ignored)
    assert main(["convert", str(src / "weapons"), str(tmp_path / "o5"), "--to", "n3cplug",
                 "--like", str(out / "box.n3cplug")]) == 2
    assert "--like" in capsys.readouterr().err and not (tmp_path / "o5").exists()
    # the control: a glTF target does not pick the glTF files up
    assert main(["convert", str(src / "weapons"), str(tmp_path / "o4"), "--to", "glb"]) == 0
    assert "nothing to convert" in capsys.readouterr().err


def _originals(folder):
    """A small game folder made by potsherd's own importers: a KO mesh, a
    Darkstar shape with an upper-case name, and a KO mesh and joint of one stem."""
    import potsherd
    from potsherd.formats.darkstar import DTS
    from potsherd.formats.ko.codecs import CODECS
    ko = {c.name: c for c in CODECS}
    (folder / "item").mkdir(parents=True)
    (folder / "item" / "blade.n3pmesh").write_bytes(
        ko["n3pmesh"].from_scene(textured_quad_scene()).encode())
    (folder / "TANK.DTS").write_bytes(DTS.from_scene(skinned_cube_scene()).encode())
    (folder / "hero.n3pmesh").write_bytes(ko["n3pmesh"].from_scene(skinned_cube_scene()).encode())
    (folder / "hero.n3joint").write_bytes(ko["n3joint"].from_scene(skinned_cube_scene()).encode())
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_folder_of_glb_files_goes_back_to_its_originals_with_like(tmp_path, capsys):
    """``convert GLB_DIR OUT --like ORIGINALS`` pairs each glTF with the original
    of its relative name: that original's format and file name (case kept), and
    --like's byte-exact round trip; ``x_n3pmesh.glb`` (the export's name when two
    files share a stem) finds ``x.n3pmesh``.  No --to is needed."""
    orig = tmp_path / "game"
    want = _originals(orig)
    glbs = tmp_path / "glb"
    assert main(["convert", str(orig), str(glbs), "--to", "glb", "--jobs", "1"]) == 0
    names = sorted(str(p.relative_to(glbs)) for p in glbs.rglob("*.glb"))
    assert names == ["TANK.glb", "hero_n3joint.glb", "hero_n3pmesh.glb", "item/blade.glb"]
    write_glb(textured_quad_scene(), glbs / "extra.glb")          # no original: skipped
    capsys.readouterr()
    back = tmp_path / "back"
    assert main(["convert", str(glbs), str(back), "--like", str(orig), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    got = {p.relative_to(back): p.read_bytes() for p in back.rglob("*") if p.is_file()}
    assert got == want                                           # every file, byte for byte
    assert "4 of 4 files converted to their originals' formats" in err
    assert "extra.glb: no original in" in err
    # with --to, a glTF without an original of that format is imported as a new file
    # (and the skeleton of hero_n3joint.glb, which is no mesh, fails alone)
    assert main(["convert", str(glbs), str(tmp_path / "b2"), "--like", str(orig), "--to",
                 "n3pmesh", "--jobs", "1"]) == 1
    assert "hero_n3joint.glb: ImportError_: the scene has no triangles" in capsys.readouterr().err
    assert (tmp_path / "b2" / "extra.n3pmesh").is_file()
    assert (tmp_path / "b2" / "hero.n3pmesh").read_bytes() == want[Path("hero.n3pmesh")]
    assert (tmp_path / "b2" / "item" / "blade.n3pmesh").read_bytes() == \
        want[Path("item/blade.n3pmesh")]
    assert not (tmp_path / "b2" / "TANK.DTS").exists()          # --to n3pmesh: not a .dts
    # refusals: --like a file for a folder input, --like with a glTF target
    assert main(["convert", str(glbs), str(tmp_path / "b3"), "--like",
                 str(orig / "TANK.DTS")]) == 2
    assert main(["convert", str(glbs), str(tmp_path / "b4"), "--like", str(orig), "--to",
                 "glb"]) == 2


def test_an_ambiguous_original_fails_alone(tmp_path, capsys):
    orig = tmp_path / "game"
    _originals(orig)
    glbs = tmp_path / "glb"
    glbs.mkdir()
    write_glb(skinned_cube_scene(), glbs / "hero.glb")           # hero.n3pmesh or .n3joint?
    write_glb(skinned_cube_scene(), glbs / "TANK.glb")
    rc = main(["convert", str(glbs), str(tmp_path / "back"), "--like", str(orig), "--jobs", "1"])
    err = capsys.readouterr().err
    assert rc == 1 and "several originals: hero.n3joint, hero.n3pmesh" in err
    assert (tmp_path / "back" / "TANK.DTS").is_file()


def test_a_glb_import_runs_with_the_collector_paused_and_restores_it(tmp_path, monkeypatch):
    """``potsherd convert X.glb Y.n3pmesh`` pauses the cyclic collector while
    it imports (core.gcpolicy: the library itself never switches it) and
    switches it back on after, also when the import fails."""
    import gc
    from potsherd import importer
    src = tmp_path / "cube.glb"
    write_glb(skinned_cube_scene(), src)
    seen = []
    original = importer.scene_to_files

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return original(*a, **k)
    monkeypatch.setattr(importer, "scene_to_files", spy)
    assert gc.isenabled()
    assert main(["convert", str(src), str(tmp_path / "cube.n3pmesh")]) == 0
    assert seen == [False] and gc.isenabled()

    def broken(*a, **k):
        seen.append(gc.isenabled())
        raise RuntimeError("boom")
    monkeypatch.setattr(importer, "scene_to_files", broken)
    with pytest.raises(RuntimeError):
        main(["convert", str(src), str(tmp_path / "again.n3pmesh")])
    assert seen == [False, False] and gc.isenabled()
