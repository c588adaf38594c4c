"""N-gon triangulation: n - 2 triangles per polygon (ufbx's count), none outside
its polygon (a property test on random simple polygons, concave, with collinear
and repeated corners), and big real-world n-gons in well under 10 s."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import potsherd
from potsherd.scene.geometry import earcut_polygon, fan_triangulate, triangulate_polygons
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "fbx"


def _signed_area(q: np.ndarray) -> float:
    return 0.5 * float(np.sum(q[:, 0] * np.roll(q[:, 1], -1) - np.roll(q[:, 0], -1) * q[:, 1]))


def _inside(q: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Even-odd point-in-polygon for many points."""
    a, b = q, np.roll(q, -1, axis=0)
    x, y = pts[:, 0:1], pts[:, 1:2]
    crosses = ((a[:, 1] > y) != (b[:, 1] > y))
    with np.errstate(divide="ignore", invalid="ignore"):
        xi = a[:, 0] + (y - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1])
    return (np.sum(crosses & (x < xi), axis=1) % 2) == 1


def _problems(q: np.ndarray, tri: np.ndarray) -> list[str]:
    """What is wrong with triangles ``tri`` of the counter-clockwise 2D polygon ``q``."""
    out = []
    if len(tri) != len(q) - 2:
        out.append(f"{len(tri)} triangles for {len(q)} corners")
    t = q[tri]
    area = 0.5 * ((t[:, 1, 0] - t[:, 0, 0]) * (t[:, 2, 1] - t[:, 0, 1])
                  - (t[:, 1, 1] - t[:, 0, 1]) * (t[:, 2, 0] - t[:, 0, 0]))
    total = _signed_area(q)
    eps = 1e-9 * max(1.0, abs(total))
    if np.any(area < -eps):
        out.append("a triangle is wound against its polygon")
    if abs(area.sum() - total) > eps:
        out.append(f"triangle areas sum to {area.sum()}, the polygon's is {total}")
    solid = area > eps
    if solid.any() and not np.all(_inside(q, t[solid].mean(axis=1))):
        out.append("a triangle lies outside its polygon")
    return out


@st.composite
def simple_polygons(draw):
    """Star-shaped (so simple) polygons with random radii: concave, and with
    collinear midpoints or repeated corners inserted on some edges."""
    n = draw(st.integers(3, 40))
    angles = np.sort(np.array(draw(st.lists(st.floats(0, 2 * np.pi, exclude_max=True),
                                            min_size=n, max_size=n, unique=True))))
    gaps = np.diff(np.concatenate([angles, [angles[0] + 2 * np.pi]]))
    if np.any(gaps < 1e-3) or np.any(gaps > 0.9 * np.pi):  # keep the origin in the kernel
        angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    radii = np.array(draw(st.lists(st.floats(0.2, 5.0), min_size=n, max_size=n)))
    q = np.stack([radii * np.cos(angles), radii * np.sin(angles)], axis=1)
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(["mid", "dup"])),
                          max_size=6, unique_by=lambda e: e[0]))
    pts = []
    for i in range(n):
        pts.append(q[i])
        for k, how in extra:
            if k == i:
                nxt = q[(i + 1) % n]
                pts.append((q[i] + nxt) / 2 if how == "mid" else q[i].copy())
    return np.array(pts)


def _in_plane(q: np.ndarray, tilt: tuple) -> np.ndarray:
    """The 2D polygon placed on a tilted plane in 3D (so the projection is exercised)."""
    from potsherd.scene import quat_from_euler, trs_to_matrix
    m = trs_to_matrix(translation=[3.0, -2.0, 7.0],
                      rotation=quat_from_euler(np.array(tilt, float), "XYZ", degrees=True))
    p = np.concatenate([q, np.zeros((len(q), 1)), np.ones((len(q), 1))], axis=1)
    return (p @ m.T)[:, :3]


@settings(max_examples=120, deadline=None)
@given(simple_polygons(), st.tuples(st.floats(-80, 80), st.floats(-80, 80), st.floats(-180, 180)))
def test_random_simple_polygons_are_covered_exactly(q, tilt):
    p3 = _in_plane(q, tilt)
    tri = triangulate_polygons([len(q)], p3)
    assert _problems(q, tri) == []
    # the same polygon wound clockwise keeps its own (reversed) winding
    tri_rev = triangulate_polygons([len(q)], p3[::-1])
    assert _problems(q, (len(q) - 1 - tri_rev)[:, ::-1]) == []


def test_a_reflex_corner_beside_a_repeated_corner_is_still_cut():
    """Found by the property test: the repeated corner 5/6 hid the reflex turn at it,
    so the polygon passed as convex and its fan had a triangle wound backwards."""
    q = np.array([[2.0, 0.0], [1.75516512, 0.95885108], [1.08060461, 1.68294197],
                  [-0.41614684, 0.90929743], [-0.65364362, -0.7568025],
                  [0.14183109, -0.47946214], [0.14183109, -0.47946214],
                  [0.96017029, -0.2794155]])
    p3 = np.concatenate([q, np.zeros((len(q), 1))], axis=1)
    assert _problems(q, fan_triangulate(np.array([len(q)])).reshape(-1, 3)) != []  # control
    assert _problems(q, triangulate_polygons([len(q)], p3)) == []
    rev = triangulate_polygons([len(q)], p3[::-1])
    assert _problems(q, (len(q) - 1 - rev)[:, ::-1]) == []


def test_the_checker_rejects_a_fan_of_a_concave_polygon():
    """Negative control: a fan from a corner that does not see the others leaves the polygon."""
    star = np.array([[0, 0], [4, 0], [4, 4], [2, 1], [0, 4]], float)  # reflex at (2, 1)
    fan = fan_triangulate([len(star)]).reshape(-1, 3)
    assert _problems(star, fan) != []
    assert _problems(star, triangulate_polygons([5], _in_plane(star, (0, 0, 0)))) == []


def test_degenerate_polygons_keep_their_triangle_count():
    line = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0]], float)
    assert earcut_polygon(line) is None
    tri = triangulate_polygons([6], line)
    assert tri.shape == (4, 3)
    repeated = np.array([[0, 0, 0]] * 7, float)
    assert triangulate_polygons([7], repeated).shape == (5, 3)
    # collinear corners on a concave polygon's edge still get (zero-area) triangles
    ell = np.array([[0, 0], [1, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2], [0, 1]], float)
    tri = triangulate_polygons([8], _in_plane(ell, (10, 20, 30)))
    assert _problems(ell, tri) == [] and set(tri.reshape(-1)) == set(range(8))


def _comb(teeth: int) -> np.ndarray:
    """A counter-clockwise comb (deeply concave) with 4 * teeth corners."""
    pts = [[0.0, -1.0], [2.0 * teeth - 1.0, -1.0]]
    for k in range(teeth - 1, -1, -1):
        pts += [[2.0 * k + 1.0, 10.0], [2.0 * k, 10.0]]
        if k:
            pts += [[2.0 * k, 0.5], [2.0 * k - 1.0, 0.5]]
    return np.array(pts)


def test_big_concave_ngon_is_fast_and_exact():
    q = _comb(2500)  # 10,000 corners
    assert _signed_area(q) > 0
    t0 = time.perf_counter()
    tri = triangulate_polygons([len(q)], _in_plane(q, (0, 0, 0)))
    assert time.perf_counter() - t0 < 10
    assert _problems(q, tri) == []


def _fbx_with_polygon(q: np.ndarray) -> str:
    verts = ",".join(f"{x:.6g},{y:.6g},0" for x, y in q)
    pvi = ",".join(str(i) for i in range(len(q) - 1)) + f",{~(len(q) - 1)}"
    return f"""; FBX 7.4.0 project file
FBXHeaderExtension:  {{
\tFBXVersion: 7400
}}
Objects:  {{
\tGeometry: 10, "Geometry::Comb", "Mesh" {{
\t\tVertices: *{3 * len(q)} {{
\t\t\ta: {verts}
\t\t}}
\t\tPolygonVertexIndex: *{len(q)} {{
\t\t\ta: {pvi}
\t\t}}
\t}}
\tModel: 20, "Model::Comb", "Mesh" {{
\t}}
}}
Connections:  {{
\tC: "OO",20,0
\tC: "OO",10,20
}}
"""


_COUNT_PROBE = r"""
import json, os, sys
import ufbx
scene = ufbx.load_file(sys.argv[1])
print(json.dumps(sum(m.num_triangles for m in list(scene.meshes))), flush=True)
os._exit(0)  # freeing the scene can crash this binding
"""


def _ufbx_triangles(path: Path) -> int:
    from ufbx_probe import run_probe
    pytest.importorskip("ufbx")
    return json.loads(run_probe(_COUNT_PROBE, [str(path)], attempts=5))


def _scene_triangles(path: Path) -> tuple[int, float]:
    t0 = time.perf_counter()
    doc = potsherd.read(path)
    sc = doc.codec.to_scene(doc)
    elapsed = time.perf_counter() - t0
    return sum(len(p.indices) // 3 for m in sc.meshes for p in m.primitives), elapsed


def test_big_ngon_fbx_matches_ufbx(tmp_path):
    path = tmp_path / "comb.fbx"
    path.write_text(_fbx_with_polygon(_comb(2000)))
    tris, elapsed = _scene_triangles(path)
    assert elapsed < 10
    assert tris == 7998 == _ufbx_triangles(path)


@pytest.mark.parametrize("name", ["maya_ngon_maze_7700_binary.fbx",
                                  "blender_300_ngon_big_7400_binary.fbx"])
def test_corpus_ngon_files_convert_fast(name):
    found = [p for p in CORPUS.glob(f"*{name}")] if CORPUS.is_dir() else []
    extra = os.environ.get("POTSHERD_FBX_EXTRA")  # e.g. the ufbx repository's data folder
    if not found and extra and (Path(extra) / name).is_file():
        found = [Path(extra) / name]
    if not found:
        pytest.skip(f"{name} not in the FBX corpus")
    tris, elapsed = _scene_triangles(found[0])
    assert elapsed < 10
    assert tris == _ufbx_triangles(found[0])


@pytest.mark.parametrize("name", ["maya_ngon_maze_7700_binary.fbx",
                                  "blender_300_ngon_big_7400_binary.fbx"])
def test_corpus_ngons_have_no_backward_triangles(name):
    """Every n-gon's triangles keep its winding seen along its normal (the old
    fallback fan of blender_300_ngon_big, whose outline crosses itself once,
    had 3,283 backward triangles)."""
    found = [p for p in CORPUS.glob(f"*{name}")] if CORPUS.is_dir() else []
    extra = os.environ.get("POTSHERD_FBX_EXTRA")
    if not found and extra and (Path(extra) / name).is_file():
        found = [Path(extra) / name]
    if not found:
        pytest.skip(f"{name} not in the FBX corpus")
    doc = potsherd.read(found[0])
    checked = 0
    for g in doc.root.find(b"Objects").children:
        if g.name != b"Geometry" or g.find(b"PolygonVertexIndex") is None:
            continue
        v = np.asarray(g.find(b"Vertices").props[0][1].values, dtype=np.float64).reshape(-1, 3)
        pvi = np.asarray(g.find(b"PolygonVertexIndex").props[0][1].values)
        p = v[np.where(pvi < 0, ~pvi, pvi)]
        sizes = np.diff(np.concatenate([[-1], np.flatnonzero(pvi < 0)]))
        tri = triangulate_polygons(sizes, p)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        first = np.concatenate([[0], np.cumsum(sizes - 2)[:-1]])
        for k in np.flatnonzero(sizes > 4):
            q = p[starts[k]:starts[k] + sizes[k]]
            normal = np.sum(np.cross(q - q[0], np.roll(q, -1, axis=0) - q[0]), axis=0)
            axis = int(np.argmax(np.abs(normal)))  # seen along the normal's main axis
            t = p[tri[first[k]:first[k] + sizes[k] - 2]]
            area = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])[:, axis] * np.sign(normal[axis])
            assert area.min() >= -1e-12 * abs(normal[axis]), f"polygon {k}"
            checked += 1
    assert checked >= 1
