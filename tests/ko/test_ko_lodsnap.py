"""Skin LODs as snapshots of the compiled simplifier's order (ko/lodsnap.py),
checked against the plain step-by-step rules and against the replay of a
progressive mesh they replace."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from potsherd.formats.ko import lodsnap
from potsherd.formats.ko.pmgen import build_progressive, replay

pytest.importorskip("fast_simplification")


def uv_sphere(rings: int = 24, segments: int = 48):
    """A closed UV sphere whose seam column and pole rows are vertices apart
    (copies at one position with other UVs), as exporters write it."""
    th = np.linspace(0, np.pi, rings + 1)
    ph = np.linspace(0, 2 * np.pi, segments + 1)
    t, p = np.meshgrid(th, ph, indexing="ij")
    pos = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    pos[np.abs(pos) < 1e-12] = 0.0
    uv = np.stack([p / (2 * np.pi), t / np.pi], -1).reshape(-1, 2)
    r, s = np.meshgrid(np.arange(rings), np.arange(segments), indexing="ij")
    a = (r * (segments + 1) + s).ravel()
    b, c, d = a + segments + 1, a + 1, a + segments + 2
    tris = np.concatenate([np.stack([a, c, b], 1), np.stack([c, d, b], 1)])
    # (the poles' flat triangles: two corners at one position)
    key = np.round(pos, 9)
    lab = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    lt = lab[tris]
    tris = tris[(lt[:, 0] != lt[:, 1]) & (lt[:, 1] != lt[:, 2]) & (lt[:, 0] != lt[:, 2])]
    return pos, uv, tris, lab


def step_by_step(schedule: np.ndarray, positions: int) -> np.ndarray:
    """The rule spelled out: a pair goes when neither of its positions went."""
    gone, out = set(), []
    for a, b in schedule.tolist():
        if a in gone or b in gone:
            continue
        gone.add(a)
        out.append((a, b))
    return np.asarray(out, np.int64).reshape(-1, 2)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                         .filter(lambda p: p[0] != p[1]), max_size=30))))
def test_accepted_collapses_are_the_step_by_step_rule(case):
    n, pairs = case
    schedule = np.asarray(pairs, np.int64).reshape(-1, 2)
    got = lodsnap.accepted_collapses(schedule, n)
    assert np.array_equal(got, step_by_step(schedule, n))


def test_accepted_collapses_skip_positions_already_gone():
    schedule = np.array([[0, 1], [0, 2], [3, 0], [2, 1], [4, 2]])
    got = lodsnap.accepted_collapses(schedule, 5)
    # (0, 2): 0 went; (3, 0): onto 0, gone; (4, 2): onto 2, gone by (2, 1)
    assert got.tolist() == [[0, 1], [2, 1]]
    # negative control: taking every pair keeps collapses onto removed positions
    assert len(schedule) != len(got)


def test_roots_follow_chains_to_their_last_keeper():
    pairs = np.array([[0, 1], [1, 2], [3, 2], [2, 5]])
    assert lodsnap.roots(pairs, 6).tolist() == [5, 5, 5, 5, 4, 5]
    # one step of parents (the control) stops early
    parent = np.arange(6)
    parent[pairs[:, 0]] = pairs[:, 1]
    assert parent.tolist() != lodsnap.roots(pairs, 6).tolist()


def open_edges(tris: np.ndarray, lab: np.ndarray) -> int:
    """Position edges used by one triangle only (a crack, on a closed mesh)."""
    lt = lab[tris]
    e = np.concatenate([lt[:, [0, 1]], lt[:, [1, 2]], lt[:, [2, 0]]])
    e.sort(axis=1)
    _, n = np.unique(e, axis=0, return_counts=True)
    return int((n == 1).sum())


def test_levels_nest_hit_their_vertex_counts_and_stay_closed():
    pos, uv, tris, lab = uv_sphere()
    V = len(np.unique(tris))
    targets = [None, V // 2, V // 4, V // 8]
    levels = lodsnap.lod_triangles(pos, tris, targets, uv)
    assert np.array_equal(levels[0], tris)
    assert open_edges(tris, lab) == 0
    for k in (1, 2, 3):
        used = len(np.unique(levels[k]))
        assert 0.99 * targets[k] <= used <= targets[k]
        assert open_edges(levels[k], lab) == 0              # no level opens a crack
        # nested: every position of a level is one of the level above
        assert set(lab[levels[k]].ravel()) <= set(lab[levels[k - 1]].ravel())
    # negative control: a triangle less opens the check
    assert open_edges(levels[2][1:], lab) > 0


def test_copies_keep_their_side_of_the_seam():
    """A copy lands on the copy at the target nearest in UV: no triangle of a
    level spans the texture from one seam side to the other (near a pole a
    ring's far sides meet in any level, the replay's as well)."""
    pos, uv, tris, lab = uv_sphere()
    V = len(np.unique(tris))
    targets = [V // 2, V // 4, V // 8]

    def widest(levels):       # (away from the poles, where the UV map is singular)
        return max(float(np.ptp(uv[t][:, :, 0], axis=1)[
            (np.abs(pos[t][:, :, 1]) < 0.9).all(axis=1)].max()) for t in levels)

    assert widest(lodsnap.lod_triangles(pos, tris, targets, uv)) < 0.5
    # negative control: without UVs to choose by, copies land on the first copy
    assert widest(lodsnap.lod_triangles(pos, tris, targets)) > 0.9


def test_levels_are_those_of_the_replay_they_replace():
    """Against the replay of a progressive mesh of the same order (the way the
    levels were taken before): depth below the sphere and UV error agree."""
    pos, uv, tris, lab = uv_sphere(40, 80)
    V = len(np.unique(tris))
    targets = [V // 2, V // 4, V // 8]
    new = lodsnap.lod_triangles(pos, tris, targets, uv)
    p = build_progressive(pos, tris, attributes=uv, order="compiled")
    old = []
    for t in targets:
        nv, ni, idx = replay(p, t)
        old.append(p.order[idx[:ni]].reshape(-1, 3))
    w = np.random.default_rng(0).dirichlet([1, 1, 1], 6)

    def depth(t):
        x = np.einsum("sk,tkd->tsd", w, pos[t]).reshape(-1, 3)
        return float((1 - np.linalg.norm(x, axis=1)).mean())

    for a, b in zip(new, old):
        assert depth(a) == pytest.approx(depth(b), rel=0.1)
        assert len(a) == pytest.approx(len(b), rel=0.03)
    # the measure tells levels apart (its control)
    assert depth(new[2]) > 1.5 * depth(new[0])


def test_without_the_simplifier_the_caller_replays(monkeypatch):
    pos, uv, tris, lab = uv_sphere(8, 16)
    monkeypatch.setattr(lodsnap, "compiled_schedule", lambda *a: None)
    assert lodsnap.lod_triangles(pos, tris, [None, 50], uv) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.data())
def test_restricted_welds_are_welding_the_rows_again(keys, data):
    """A level's welds are the full mesh's groups over its vertices ranked by
    first appearance: the same first rows and groups as welding its rows on
    their own."""
    from potsherd.scene import weld
    from potsherd.scene.geometry import first_labels
    keys = np.asarray(keys, np.int64)
    sel = np.flatnonzero(np.asarray(data.draw(st.lists(st.booleans(), min_size=len(keys),
                                                       max_size=len(keys)))))
    group = weld(keys)[1]
    first, remap = first_labels(group[sel])
    want_first, want_remap = weld(keys[sel])
    assert np.array_equal(first, want_first) and np.array_equal(remap, want_remap)


def test_copies_are_chosen_alike_in_chunks_and_a_huge_fan_is_bounded(monkeypatch):
    pos, uv, tris, lab = uv_sphere()
    V = len(np.unique(tris))
    targets = [V // 2, V // 4, V // 8]
    whole = lodsnap.lod_triangles(pos, tris, targets, uv)
    monkeypatch.setattr(lodsnap, "CHUNK_ROWS", 7)              # a few vertices per chunk
    chunked = lodsnap.lod_triangles(pos, tris, targets, uv)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))
    # a position of more copies than MAX_CHOICE is landed on at its first copy,
    # so the work stays vertices x MAX_CHOICE (here 1: the seam's two copies too)
    monkeypatch.setattr(lodsnap, "MAX_CHOICE", 1)
    capped = lodsnap.lod_triangles(pos, tris, targets, uv)
    assert len(capped[0]) == len(whole[0])                     # the same collapses
    assert not all(np.array_equal(a, b) for a, b in zip(whole, capped))   # other copies


def test_where_the_order_stops_short_the_skin_replays_to_its_counts():
    """The simplifier keeps a small grid's border and stops with more vertices
    than the last level asks: no snapshot is taken then (it would repeat the
    level above), and the skin's levels come from the replay's greedy tail."""
    from potsherd.formats.ko.importing import Geometry, skins_root
    from potsherd.formats.ko.importing.base import SKIN_LOD_FRACTIONS
    n = 4
    g = np.stack(np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"), -1).reshape(-1, 2)
    pos = np.c_[g, np.zeros(len(g))].astype(np.float32)
    a = (np.arange(n)[:, None] * (n + 1) + np.arange(n)[None]).ravel()
    tris = np.concatenate([np.stack([a, a + n + 1, a + 1], 1),
                           np.stack([a + 1, a + n + 1, a + n + 2], 1)])
    V = len(pos)
    assert lodsnap.lod_triangles(pos, tris, [V // 2, V // 4, V // 8], g / n) is None
    geo = Geometry(pos, np.tile(np.float32([0, 0, 1]), (V, 1)), (g / n).astype(np.float32),
                   tris, None, None)
    lods = skins_root(geo, "grid", progressive=True)["lods"]
    counts = [int(l["vertexCount"]) for l in lods]
    want = [round(f * V) for f in SKIN_LOD_FRACTIONS]
    assert counts[0] == V and all(c <= w for c, w in zip(counts[1:], want[1:]))
    assert counts[1] > counts[2] > counts[3] > 0


def test_a_tiny_part_keeps_triangles_at_every_lod():
    """The engine draws nothing for a skin LOD without vertices, so a part
    whose lower levels collapse to nothing would vanish at a distance; such a
    level repeats the one above."""
    from potsherd.formats.ko.importing import Geometry, skins_root
    from potsherd.formats.ko.importing.base import SKIN_LOD_FRACTIONS
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    pos, nrm, tris = [], [], []
    for q in [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]:   # flat-shaded: copies per face
        c = corners[list(q)]
        n = np.cross(c[1] - c[0], c[2] - c[0])
        tris.append((len(pos), len(pos) + 1, len(pos) + 2))
        pos += list(c)
        nrm += [n / np.linalg.norm(n)] * 3
    pos, nrm, tris = np.array(pos, np.float32), np.array(nrm, np.float32), np.array(tris)
    uv = np.zeros((len(pos), 2), np.float32)
    V = len(pos)
    targets = [None] + [max(int(round(f * V)), 3) for f in SKIN_LOD_FRACTIONS[1:]]
    raw = lodsnap.lod_triangles(pos, tris, targets, uv, nrm)
    assert [len(t) for t in raw] == [4, 2, 0, 0]           # (the control: levels of nothing)
    lods = skins_root(Geometry(pos, nrm, uv, tris, None, None), "tet", progressive=True)["lods"]
    assert [int(l["faceCount"]) for l in lods] == [4, 2, 2, 2]
