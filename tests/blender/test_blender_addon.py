"""The Blender extension, in Debian's Blender 3.4 (the legacy add-on path): the zip built by
``potsherd blender-addon`` is installed into a fresh user folder, enabled, and drives
File > Import / Export through its operators.  What it imports is compared with potsherd's
own glTF of the same file; what it exports unedited must be the original bytes; an edited
vertex must give a valid file whose points are the original's but that one."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

import potsherd
from corpus_paths import CORPUS_ROOT, ROOT
from potsherd.blender import build
from potsherd.convert import convert_file

BLENDER = shutil.which("blender")
pytestmark = [pytest.mark.blender, pytest.mark.slow,
              pytest.mark.skipif(BLENDER is None, reason="Blender not installed")]

#: one file of each family: a KO character (parts, plugs, skeleton, clips), a Tribes
#: weapon shape, a TR4 wad of 13 moveables, an FBX from Maya
SAMPLES = ["ko/data/Chr/mob_kenta.n3chr", "dts/tribesrebirth/entities_vol/plasma.DTS",
           "tr4wad/poyu/TR4 color.wad", "fbx/ufbx__maya_cube_7400_binary.fbx"]
EDITED = "ko/data/Object/obj_co_xmastree_gift.n3pmesh"

SCRIPT = r"""
import bpy, sys, os, json
args = sys.argv[sys.argv.index('--') + 1:]
zip_path, out_dir, report_path, edited = args[0], args[1], args[2], args[3]
sources = args[4:]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.preferences.addon_install(filepath=zip_path)
bpy.ops.preferences.addon_enable(module="potsherd_blender")
import potsherd
report = {"potsherd": potsherd.__file__, "files": {}}
shots = os.environ.get("POTSHERD_SHOTS")

def screenshot(coll, png):
    # a Workbench picture of one collection, textured, from the front-right
    import mathutils
    sc = bpy.context.scene
    for c in bpy.data.collections:
        c.hide_render = c is not coll
    deps = bpy.context.evaluated_depsgraph_get()        # posed and skinned, as drawn
    pts = []
    for o in coll.all_objects:
        if o.type == 'MESH':
            ev = o.evaluated_get(deps)
            pts += [ev.matrix_world @ v.co for v in ev.to_mesh().vertices]
            ev.to_mesh_clear()
    lo = mathutils.Vector([min(p[i] for p in pts) for i in range(3)])
    hi = mathutils.Vector([max(p[i] for p in pts) for i in range(3)])
    centre, size = (lo + hi) / 2, (hi - lo).length
    cam = sc.camera or bpy.data.objects.new("potsherd_cam", bpy.data.cameras.new("potsherd_cam"))
    if sc.camera is None:
        sc.collection.objects.link(cam)
        sc.camera = cam
    cam.location = centre + mathutils.Vector((size * 0.8, size * 1.1, size * 0.5))
    cam.rotation_euler = (centre - cam.location).to_track_quat('-Z', 'Y').to_euler()
    cam.data.clip_start, cam.data.clip_end = size * 0.01, size * 100
    if sc.world is None:
        sc.world = bpy.data.worlds.new("potsherd_world")
    sc.world.color = (0.35, 0.37, 0.42)
    sc.render.engine = 'BLENDER_WORKBENCH'
    sc.display.shading.color_type = 'TEXTURE'
    sc.render.resolution_x, sc.render.resolution_y = 480, 360
    sc.render.filepath = png
    bpy.ops.render.render(write_still=True)

def collection_summary(coll):
    objs = list(coll.all_objects)
    bones = sorted(b.name for o in objs if o.type == 'ARMATURE' for b in o.data.bones)
    mats = sorted({s.material.name for o in objs if o.type == 'MESH'
                   for s in o.material_slots if s.material})
    return {"meshes": sum(o.type == 'MESH' for o in objs), "bones": bones, "materials": mats}

for src in sources + [edited]:
    actions = set(bpy.data.actions)
    r = bpy.ops.import_scene.potsherd(filepath=src)
    coll = bpy.data.collections[os.path.basename(src)]
    entry = collection_summary(coll)
    entry.update(imported=list(r), source=coll["potsherd_source"],
                 actions=sorted(a.name for a in bpy.data.actions if a not in actions))
    if shots and src != edited:
        screenshot(coll, os.path.join(shots, os.path.splitext(os.path.basename(src))[0] + ".png"))
    if src == edited:
        mesh = next(o for o in coll.all_objects if o.type == 'MESH')
        mesh.data.vertices[0].co.x += 0.25
        out = os.path.join(out_dir, "edited", os.path.basename(src))
    else:
        out = os.path.join(out_dir, os.path.basename(src))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    entry["exported"] = list(bpy.ops.export_scene.potsherd(filepath=out, collection=coll.name))
    report["files"][src] = entry
# a refusal is a report, not a traceback: a file no codec reads
os.makedirs(os.path.join(out_dir, "bad"))
bad = os.path.join(out_dir, "bad", "not_a_model.n3pmesh")
open(bad, "wb").write(b"\0" * 7)
try:
    report["refused"] = list(bpy.ops.import_scene.potsherd(filepath=bad))
except RuntimeError as e:          # operators that report ERROR raise in background mode
    report["refused"] = str(e)
json.dump(report, open(report_path, "w"))
print("DONE")
"""


@pytest.fixture(scope="module")
def addon_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("addon")
    wheels = Path(os.environ.get("POTSHERD_WHEELS", Path.home() / ".cache/potsherd/wheels"))
    try:
        build.fetch_wheels(wheels, ["linux-x64"])
    except build.BuildError as e:
        pytest.skip(f"dependency wheels cannot be had here: {e}")
    first = build.build_addon(out / "a.zip", platforms=["linux-x64"], wheels_dir=wheels)
    again = build.build_addon(out / "b.zip", platforms=["linux-x64"], wheels_dir=wheels)
    assert first["wheels"] == again["wheels"]
    digest = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (first["path"], again["path"])]
    assert digest[0] == digest[1]                                  # reproducible
    return out / "a.zip"


def test_the_zip_holds_the_addon_its_manifest_and_the_wheels(addon_zip):
    with zipfile.ZipFile(addon_zip) as z:
        names = z.namelist()
        manifest = z.read("potsherd_blender/blender_manifest.toml").decode()
        infos = z.infolist()
    assert "potsherd_blender/__init__.py" in names
    wheels = [n.rsplit("/", 1)[1] for n in names if n.endswith(".whl")]
    assert any(w.startswith("potsherd-") for w in wheels)
    assert not any(w.lower().startswith("numpy") for w in wheels)   # Blender's own is used
    for w in wheels:                                                # the manifest lists each
        assert f'"./wheels/{w}"' in manifest, w
    assert 'id = "potsherd_blender"' in manifest and 'blender_version_min = "4.2.0"' in manifest
    assert {i.date_time for i in infos} == {build.FIXED_TIME}
    with zipfile.ZipFile(addon_zip) as z:      # the bundled potsherd is this one's files
        own = next(n for n in names if "/potsherd-" in n)
        import io
        with zipfile.ZipFile(io.BytesIO(z.read(own))) as w:
            cli = w.read("potsherd/cli/__init__.py")
    assert cli == (Path(potsherd.__file__).parent / "cli" / "__init__.py").read_bytes()


def _glb_json(path: Path) -> dict:
    data = path.read_bytes()
    n = int.from_bytes(data[12:16], "little")
    return json.loads(data[20:20 + n])


def test_import_export_through_the_operators(addon_zip, tmp_path):
    sources = [CORPUS_ROOT / s for s in SAMPLES]
    edited = CORPUS_ROOT / EDITED
    if not all(p.is_file() for p in sources + [edited]):
        pytest.skip(f"corpus not present at {CORPUS_ROOT}")
    out, report_path = tmp_path / "out", tmp_path / "report.json"
    out.mkdir()
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    shots = ROOT / "build" / "test-artifacts" / "blender"     # screenshots of each import
    shots.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin",       # a fresh user folder
           "BLENDER_USER_SCRIPTS": str(tmp_path / "user" / "scripts"),
           "BLENDER_USER_CONFIG": str(tmp_path / "user" / "config"), "POTSHERD_SHOTS": str(shots)}
    run = subprocess.run([BLENDER, "-b", "--factory-startup", "--python", str(script), "--",
                          str(addon_zip), str(out), str(report_path), str(edited),
                          *map(str, sources)], capture_output=True, text=True, timeout=900, env=env)
    if "No module named 'numpy'" in run.stdout + run.stderr:
        pytest.skip("Blender's Python has no numpy")
    assert "DONE" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(report_path.read_text())
    # the add-on used the potsherd bundled in its zip, not one of this machine's
    assert "/user/scripts/addons/potsherd_blender/" in report["potsherd"]
    for src in sources:
        got = report["files"][str(src)]
        assert got["imported"] == ["FINISHED"] and got["exported"] == ["FINISHED"], got
        assert got["source"] == str(src)
        ours = tmp_path / (src.name + ".glb")                  # the library's own export
        convert_file(str(src), str(ours), "glb", {})
        g = _glb_json(ours)
        joints = sorted(g["nodes"][j]["name"] for s in g.get("skins", ()) for j in s["joints"])
        assert got["bones"] == sorted(set(joints)), src.name
        assert len(got["actions"]) >= len(g.get("animations", ())), src.name
        used = {g["materials"][p["material"]]["name"] for m in g["meshes"]
                for p in m["primitives"] if "material" in p}
        # (Blender names a second material of the same name "name.001")
        assert sorted({re.sub(r"\.\d{3}$", "", m) for m in got["materials"]}) == sorted(used), \
            src.name
        assert got["meshes"] >= 1
        back = out / src.name                                  # unedited: the original bytes
        assert back.read_bytes() == src.read_bytes(), src.name
    # companions of the character come back too, each byte for byte
    kenta = CORPUS_ROOT / SAMPLES[0]
    companions = [p for p in out.iterdir() if p.is_file() and p.suffix.startswith(".n3")]
    assert len(companions) > 3
    for p in companions:
        original = next(kenta.parents[1].rglob(p.name))
        assert p.read_bytes() == original.read_bytes(), p.name
    # an edited vertex: a valid file whose vertices differ at that vertex only
    edited_out = out / "edited" / edited.name
    assert report["files"][str(edited)]["exported"] == ["FINISHED"]
    new, old = potsherd.read(edited_out), potsherd.read(edited)
    assert edited_out.read_bytes() != edited.read_bytes()
    assert potsherd.write(new) == edited_out.read_bytes()
    # (an edit rewrites the mesh, progressive collapses included: points are compared)
    p_new = {tuple(v) for v in np.asarray(new.root["vertices"]).reshape(-1, 8)[:, :3]}
    p_old = {tuple(v) for v in np.asarray(old.root["vertices"]).reshape(-1, 8)[:, :3]}
    gone, came = p_old - p_new, p_new - p_old
    assert len(gone) == 1 and len(came) == 1, (len(gone), len(came))
    assert abs(np.linalg.norm(np.subtract(came.pop(), gone.pop())) - 0.25) < 1e-4
    for src in sources:                                       # each import was pictured
        assert (shots / (src.stem + ".png")).stat().st_size > 1000, src.name
    # a file no codec reads is refused with a report
    assert "potsherd:" in str(report["refused"]) or report["refused"] == ["CANCELLED"]
