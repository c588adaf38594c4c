"""The renderer draws a scene whose parts are hidden by scale 0.

glTF has no visibility flag, so exporters (the Darkstar one among them) hide a
part by scaling its node to 0, statically or with a STEP scale key mid
animation.  Such a part's normal matrix is singular and its triangles have no
area: the renderer must skip them (no failed inversion, no division by a zero
area) and draw the rest exactly as if the part were absent.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from export_scenes import cube  # noqa: E402

from potsherd.export import render as rd  # noqa: E402
from potsherd.export.gltf import write_glb  # noqa: E402
from potsherd.scene import Animation, Channel, Material, Mesh, Primitive, Scene  # noqa: E402


def _scene(hidden_scale, with_flag: bool = True, animate: bool = False) -> Scene:
    """A 2 m box (always shown) and a 0.5 m "flag" box beside it; the flag
    node's scale is ``hidden_scale`` (it collapses to the origin, inside the
    big box, so the framing does not change), or, with ``animate``, a STEP key
    from 1 (shown) to 0 (hidden) at 1 s."""
    s = Scene(name="hidden")
    mat = s.add_material(Material(name="grey", base_color=(0.8, 0.8, 0.8, 1.0)))
    pos, nrm, _, idx = cube(2.0)
    body = s.add_mesh(Mesh(name="body", primitives=[Primitive(
        positions=pos, normals=nrm, indices=idx, material=mat)]))
    s.add_node(name="body", mesh=body)
    if with_flag:
        pos, nrm, _, idx = cube(0.5, (1.6, 0.0, 0.0))
        flag = s.add_mesh(Mesh(name="flag", primitives=[Primitive(
            positions=pos, normals=nrm, indices=idx, material=mat)]))
        node = s.add_node(name="flag", mesh=flag, scale=list(hidden_scale))
        if animate:
            s.add_animation(Animation(name="hide", channels=[Channel(
                node, "scale", np.array([0.0, 1.0]), np.array([[1.0, 1, 1], [0, 0, 0]]),
                "STEP")]))
    return s


def _pixels(scene: Scene, path: Path, **kw) -> np.ndarray:
    write_glb(scene, path)
    return np.asarray(rd.render(str(path), size=64, **kw))[14:]   # below the caption


def test_scale_zero_part_is_skipped(tmp_path):
    g_path = tmp_path / "hidden.glb"
    write_glb(_scene((0.0, 0.0, 0.0)), g_path)
    tris = rd.scene_triangles(rd.Gltf(str(g_path)))
    flag = tris[1]
    assert np.all(flag["pos"] == 0.0)                 # collapsed to the node's origin
    assert np.all(flag["nrm"] == 0.0)                 # cofactor of a zero matrix, no error
    hidden = _pixels(_scene((0.0, 0.0, 0.0)), tmp_path / "a.glb")
    absent = _pixels(_scene((1, 1, 1), with_flag=False), tmp_path / "b.glb")
    shown = _pixels(_scene((1.0, 1.0, 1.0)), tmp_path / "c.glb")
    assert np.array_equal(hidden, absent)
    assert (np.abs(shown.astype(int) - absent).sum(-1) > 0).sum() > 20   # negative control


def test_flat_scale_keeps_lighting_and_hidden_keyframe(tmp_path):
    """Scale 0 on one axis only (a flattened part) still lights its big faces;
    a STEP key hiding the part mid-animation renders like the part absent."""
    flat = _scene((1.0, 0.0, 1.0))
    g_path = tmp_path / "flat.glb"
    write_glb(flat, g_path)
    tris = rd.scene_triangles(rd.Gltf(str(g_path)))
    n = tris[1]["nrm"].reshape(-1, 3)
    lengths = np.linalg.norm(n, axis=1)
    up = n[lengths > 0] / lengths[lengths > 0, None]
    assert np.allclose(np.abs(up[:, 1]), 1.0)        # only the +-Y faces keep a normal
    assert np.isfinite(np.asarray(rd.render(str(g_path), size=32))).all()
    anim = _scene((1.0, 1.0, 1.0), animate=True)
    before = _pixels(anim, tmp_path / "d.glb", time=0.5)
    after = _pixels(anim, tmp_path / "d.glb", time=1.5)
    absent = _pixels(_scene((1, 1, 1), with_flag=False), tmp_path / "e.glb")
    assert np.array_equal(after, absent)
    assert not np.array_equal(before, absent)
    cam = rd.render_camera(str(tmp_path / "d.glb"), (4.0, 3.0, 5.0), (0.0, 0.0, 0.0), size=48,
                           animation=0, time=1.5)
    assert cam.size == (48, 48)


DTS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "dts" / "tribesrebirth" \
    / "entities_vol"


@pytest.mark.parametrize("name", ["flag.dts", "plasma.DTS", "sat_up.DTS"])
def test_darkstar_shapes_with_hidden_parts_render(tmp_path, name):
    """Darkstar shapes whose parts are hidden mid-animation (formerly a failed
    inversion at every such pose): every sampled pose evaluates, some parts
    are really collapsed there (so the case is exercised), and a sheet renders."""
    src = DTS / name
    if not src.is_file():
        pytest.skip(f"{src} absent")
    from potsherd.cli import main
    out = tmp_path / f"{src.stem}.glb"
    # skin=0: the parts hang on nodes that a scale key collapses (the skinned default
    # collapses joints inside one primitive instead, checked for finite values below)
    assert main(["convert", str(src), str(out), "--option", "skin=0"]) == 0
    skinned = tmp_path / f"{src.stem}_skinned.glb"
    assert main(["convert", str(src), str(skinned)]) == 0
    gs = rd.Gltf(str(skinned))
    for ai, _ in enumerate(gs.json.get("animations", [])[:3]):
        for tr in rd.scene_triangles(gs, ai, 0.5):
            assert np.isfinite(tr["pos"]).all()
    g = rd.Gltf(str(out))
    collapsed = 0
    for ai, an in enumerate(g.json["animations"][:3]):
        end = max(float(g.accessor(an["samplers"][c["sampler"]]["input"]).max())
                  for c in an["channels"])
        for t in np.linspace(0.0, end, 5):
            for tr in rd.scene_triangles(g, ai, float(t)):
                assert np.isfinite(tr["pos"]).all() and np.isfinite(tr["nrm"]).all()
                collapsed += int(np.ptp(tr["pos"].reshape(-1, 3), axis=0).max() == 0)
    assert collapsed > 0
    sheet = np.asarray(rd.render(str(out), size=48))
    assert sheet.shape == (14 + 2 * 48, 2 * 48, 3)
