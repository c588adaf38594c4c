"""``potsherd render IN.glb OUT.png``: the headless renderer behind the CLI.

The same pixels as the Python API and ``python -m potsherd.cli.render``;
``--time``/``--animation``/``--size`` reach the renderer; bad inputs give an
exit status and a message, never a traceback or a partial PNG.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from export_scenes import skinned_cube_scene, textured_quad_scene
from potsherd.cli import main
from potsherd.export import render as render_module
from potsherd.export.gltf import write_glb

HEADER = 14          # the sheet's caption strip above the 2x2 tiles


def _front(path, size):
    """The front (+Z) tile of a rendered sheet, without the caption strip."""
    return np.asarray(Image.open(path).convert("RGB"))[HEADER:HEADER + size, :size]


@pytest.fixture
def scenes(tmp_path):
    write_glb(textured_quad_scene(), tmp_path / "quad.glb")
    write_glb(skinned_cube_scene(), tmp_path / "skin.glb")
    return tmp_path


def test_render_writes_the_api_image(scenes, capsys):
    out = scenes / "quad.png"
    assert main(["render", str(scenes / "quad.glb"), str(out), "--size", "64"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    with Image.open(out) as im:
        assert im.format == "PNG"
        assert im.size == (2 * 64, 2 * 64 + HEADER)          # four 64-px views + caption
        got = np.asarray(im.convert("RGB"))
    want = np.asarray(render_module.render(str(scenes / "quad.glb"), size=64))
    assert np.array_equal(got, want)
    assert [p.name for p in scenes.iterdir() if p.name.startswith(".potsherd-")] == []


def test_module_entry_point_still_works(scenes):
    out = scenes / "module.png"
    cli_out = scenes / "cli.png"
    proc = subprocess.run([sys.executable, "-m", "potsherd.cli.render",
                           str(scenes / "quad.glb"), str(out), "--size", "48"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert main(["render", str(scenes / "quad.glb"), str(cli_out), "--size", "48"]) == 0
    assert np.array_equal(np.asarray(Image.open(out)), np.asarray(Image.open(cli_out)))


def test_time_and_animation_reach_the_renderer(scenes):
    skin = str(scenes / "skin.glb")
    paths = {}
    for name, extra in {"t0": ["--time", "0"], "t2": ["--time", "2"],
                        "none": ["--time", "2", "--animation", "-1"]}.items():
        paths[name] = scenes / f"{name}.png"
        assert main(["render", skin, str(paths[name]), "--size", "64", *extra]) == 0
    t0, t2, none = (_front(paths[k], 64) for k in ("t0", "t2", "none"))
    bg = t0[-3, -3]                   # bottom-right corner: background (tripod is bottom-left)
    # the bend animation moves the upper box 90 degrees: many front-view pixels change
    changed = np.any(t0 != t2, axis=-1).sum()
    assert changed > 0.1 * np.any(t0 != bg, axis=-1).sum(), changed
    # --animation -1 draws the rest pose whatever the time: the same as frame 0 (unbent)
    assert np.array_equal(none, t0)


def test_bad_inputs_exit_cleanly_and_keep_the_old_output(scenes, capsys):
    out = scenes / "out.png"
    out.write_bytes(b"old")
    junk = scenes / "junk.glb"
    junk.write_bytes(b"glTF\x02\x00\x00\x00\x20\x00\x00\x00" + b"\x08\x00\x00\x00JSON{oops")
    assert main(["render", str(junk), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("potsherd: error: ") and "not a readable glTF" in err
    assert "Traceback" not in err
    capsys.readouterr()
    # a missing file is a file-system error like the others: one line, exit 1
    assert main(["render", str(scenes / "missing.glb"), str(out)]) == 1
    assert capsys.readouterr().err == (f"potsherd: error: {scenes / 'missing.glb'}: "
                                       "No such file or directory\n")
    assert main(["render", str(scenes / "skin.glb"), str(out), "--animation", "3"]) == 2
    assert "has 1 animation(s)" in capsys.readouterr().err
    assert main(["render", str(scenes / "skin.glb"), str(out), "--size", "8"]) == 2
    assert out.read_bytes() == b"old"                        # never half-written
    assert [p for p in os.listdir(scenes) if p.startswith(".potsherd-")] == []


def _accessor_file(tmp_path, positions, sparse_at, sparse_values, uv_bytes, uv_type):
    """A one-triangle-list glTF whose POSITION accessor is sparse and whose UVs are
    normalized integers (what Khronos' SimpleSparseAccessor and quantized files hold)."""
    import json
    blob = bytearray()

    def view(data: bytes) -> int:
        blob.extend(b"\0" * (-len(blob) % 4))
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)})
        blob.extend(data)
        return len(views) - 1
    views: list = []
    pos_v = view(np.asarray(positions, np.float32).tobytes())
    idx_v = view(np.asarray(sparse_at, np.uint16).tobytes())
    val_v = view(np.asarray(sparse_values, np.float32).tobytes())
    uv_v = view(uv_bytes)
    n = len(positions)
    gl = {"asset": {"version": "2.0"}, "buffers": [], "bufferViews": views,
          "accessors": [
              {"bufferView": pos_v, "componentType": 5126, "count": n, "type": "VEC3",
               "sparse": {"count": len(sparse_at),
                          "indices": {"bufferView": idx_v, "componentType": 5123},
                          "values": {"bufferView": val_v}}},
              {"bufferView": uv_v, "componentType": uv_type, "count": n, "type": "VEC2",
               "normalized": True}],
          "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}}]}],
          "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0}
    (tmp_path / "s.bin").write_bytes(bytes(blob))
    gl["buffers"] = [{"uri": "s.bin", "byteLength": len(blob)}]
    path = tmp_path / "s.gltf"
    path.write_text(json.dumps(gl))
    return str(path)


def test_renderer_applies_sparse_accessors_and_signed_normalized(tmp_path):
    """The renderer read a sparse accessor's base values only, so ``potsherd render``
    drew Khronos' SimpleSparseAccessor flat; signed normalized values map
    c / (2^(b-1) - 1) clamped at -1 (the spec's rule)."""
    base = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [2, 0, 0], [2, 1, 0]]
    uv = np.array([[-128, 127], [-127, 0], [64, -64], [0, 0], [127, 127], [1, -1]], np.int8)
    path = _accessor_file(tmp_path, base, [3, 5], [[1, 2, 0], [2, 3, 0]], uv.tobytes(), 5120)
    g = render_module.Gltf(path)
    want = np.array(base, float)
    want[3], want[5] = [1, 2, 0], [2, 3, 0]
    assert np.array_equal(g.accessor(0), want)
    assert np.array_equal(g.accessor(1), np.maximum(uv / 127.0, -1.0))
    assert g.accessor(1).min() == -1.0
    # the drawn triangles carry the replaced vertices, as potsherd's reader sees them
    from potsherd.scene.gltf_read import read_gltf
    drawn = np.concatenate([t["pos"].reshape(-1, 3) for t in render_module.scene_triangles(g, None, 0.0)])
    assert np.array_equal(drawn, want)
    assert np.array_equal(read_gltf(path).meshes[0].primitives[0].positions, want)


@pytest.mark.parametrize("mode, want", [
    (5, [[0, 1, 2], [1, 3, 2], [2, 3, 4]]),     # strip: p_i, p_{i+(1+i%2)}, p_{i+(2-i%2)} (spec)
    (6, [[0, 1, 2], [0, 2, 3], [0, 3, 4]]),     # fan around the first vertex
])
def test_renderer_draws_strips_and_fans_as_the_reader_reads_them(tmp_path, mode, want):
    """The renderer skipped TRIANGLE_STRIP and TRIANGLE_FAN primitives, so such a file
    rendered empty; it now draws the triangle list potsherd's reader builds."""
    import json
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 2, 0]], np.float32)
    data = pos.tobytes()
    gl = {"asset": {"version": "2.0"},
          "buffers": [{"uri": "data:application/octet-stream;base64,"
                       + __import__("base64").b64encode(data).decode(), "byteLength": len(data)}],
          "bufferViews": [{"buffer": 0, "byteLength": len(data)}],
          "accessors": [{"bufferView": 0, "componentType": 5126, "count": 5, "type": "VEC3"}],
          "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "mode": mode}]}],
          "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}]}
    path = tmp_path / "strip.gltf"
    path.write_text(json.dumps(gl))
    g = render_module.Gltf(str(path))
    (drawn,) = render_module.scene_triangles(g, None, 0.0)
    assert np.array_equal(drawn["pos"].reshape(-1, 3, 3), pos[np.array(want)])
    from potsherd.scene.gltf_read import read_gltf
    assert read_gltf(path).meshes[0].primitives[0].indices.reshape(-1, 3).tolist() == want
