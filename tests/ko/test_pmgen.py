"""Progressive meshes of meshes big enough for the batched cost refresh
(``pmgen.REFRESH_BATCH``): the replay still ends exactly at the input, every
level is valid, and the levels keep the shape (a sphere's faces stay near it)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from potsherd.formats.ko import pmgen
from potsherd.formats.ko.pmgen import build_progressive, replay


def uv_sphere(rings=24, segments=48):
    """A Blender-style UV sphere: the seam column and each pole's corner are
    separate vertices at one position (what a UV-mapped export holds)."""
    theta = np.linspace(0, np.pi, rings + 1)
    phi = np.linspace(0, 2 * np.pi, segments + 1)          # last column = seam copy of the first
    t, p = np.meshgrid(theta, phi, indexing="ij")
    pos = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    pos[np.abs(pos) < 1e-12] = 0.0
    pos[:segments + 1] = (0, 1, 0)                           # exact poles, as files hold them
    pos[-(segments + 1):] = (0, -1, 0)
    n = segments + 1
    tris = []
    for i in range(rings):
        for j in range(segments):
            a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
            if i > 0:
                tris.append((a, b, c))
            if i < rings - 1:
                tris.append((b, d, c))
    return pos, np.array(tris, np.int64)


def canon(tris):
    return sorted(tuple(np.roll(t, -int(np.argmin(t)))) for t in np.asarray(tris).reshape(-1, 3))


def sagitta(pos, tris):
    """How far the level's faces sink below the unit sphere (centroid depth)."""
    return float((1 - np.linalg.norm(pos[tris].mean(axis=1), axis=1)).max())


@pytest.fixture(scope="module")
def sphere():
    return sphere_without_unused(24, 48)


@pytest.fixture(scope="module", params=["python", "compiled"])
def sphere_pm(sphere, request):
    """The reference generator's collapses, and the compiled simplifier's order
    replayed into the same records (what imports use): every test below holds
    for both."""
    if request.param == "compiled":
        pytest.importorskip("fast_simplification")
    return build_progressive(*sphere, order=request.param)


def test_a_big_mesh_replays_exactly_and_every_level_is_valid(sphere, sphere_pm):
    pos, tris = sphere
    assert len(pos) >> 5 > 1                                 # the batched refresh is in play
    p = sphere_pm
    assert (p.min_vertices, p.min_indices) == (0, 0)
    assert int(p.collapses["verticesToLose"].sum()) == len(pos)
    nv, ni, idx = replay(p)
    assert (nv, ni) == (len(pos), tris.size)
    assert canon(p.order[idx[:ni]]) == canon(tris)          # full detail is the input, winding kept
    for target in range(0, len(pos) + 1, 37):
        nv, ni, idx = replay(p, target)
        live = idx[:ni].reshape(-1, 3)
        assert nv <= target + 2 and (live < nv).all()   # over only to finish a seam pair
        assert (live[:, 0] != live[:, 1]).all() and (live[:, 1] != live[:, 2]).all()
        assert (live[:, 0] != live[:, 2]).all()


def test_levels_keep_the_shape_of_a_sphere(sphere, sphere_pm):
    pos, tris = sphere
    p = sphere_pm
    full = sagitta(pos, tris)
    depth = {}
    for share in (0.5, 0.25, 0.1):
        nv, ni, idx = replay(p, int(len(pos) * share))
        level = p.order[idx[:ni]].reshape(-1, 3)
        assert len(level) < len(tris) * share * 2.5          # the level really is coarser
        depth[share] = sagitta(pos, level)
    # uniform faces of each count sink about 0.01, 0.02 and 0.06
    assert full < 0.01 and depth[0.5] < 0.03 and depth[0.25] < 0.05 and depth[0.1] < 0.15
    # the measure is not vacuous: the coarsest polyhedron on the sphere sinks 0.42
    octahedron = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    assert sagitta(octahedron, np.array([[0, 1, 2]])) > 0.4


def test_seam_copies_collapse_in_flagged_pairs(sphere_pm):
    """The seam column's copies follow each other: each follow-up collapse is
    flagged (shouldCollapse), so the engine does not stop between the two."""
    flagged = int(sphere_pm.collapses["shouldCollapse"].sum())
    assert flagged >= 20


def sphere_without_unused(rings, segments):
    pos, tris = uv_sphere(rings, segments)
    used = np.unique(tris)
    remap = np.full(len(pos), -1)
    remap[used] = np.arange(len(used))
    return pos[used], remap[tris]


def test_small_meshes_stay_strictly_greedy(monkeypatch):
    """Below 64 live vertices every collapse sees fresh costs, so the batch size
    changes nothing there; above, it does act (the control)."""
    def both(pos, tris):
        monkeypatch.setattr(pmgen, "REFRESH_BATCH", 64)
        batched = build_progressive(pos, tris)
        monkeypatch.setattr(pmgen, "REFRESH_BATCH", 1)
        return batched, build_progressive(pos, tris)

    small = sphere_without_unused(4, 10)
    assert len(small[0]) < 64
    batched, greedy = both(*small)
    assert np.array_equal(batched.collapses, greedy.collapses)
    assert np.array_equal(batched.indices, greedy.indices)
    pos, tris = sphere_without_unused(10, 20)
    assert len(pos) >= 128
    bumpy = pos * np.random.default_rng(5).uniform(0.9, 1.1, (len(pos), 1))  # no ties
    batched, greedy = both(bumpy, tris)
    assert not np.array_equal(batched.collapses, greedy.collapses)


def open_edges_by_position(label, tris):
    """Edges of the welded (by position) level used by an odd number of faces."""
    t = label[np.asarray(tris).reshape(-1, 3)]
    t = t[(t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])]
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return int((counts % 2).sum())


def test_no_stopping_point_opens_a_crack(sphere, sphere_pm):
    """The sphere is closed by position; every level the engine can stop at is
    too: a position's copies (seam column, pole fans) collapse together."""
    pos, tris = sphere
    _, label = np.unique(pos, axis=0, return_inverse=True)
    label = label.reshape(-1)[sphere_pm.order]
    assert open_edges_by_position(label, replay(sphere_pm)[2]) == 0
    p = sphere_pm
    stops = 0
    for target in range(3, len(pos) + 1, 7):
        nv, ni, idx = replay(p, target)
        assert open_edges_by_position(label, idx[:ni]) == 0, target
        stops += 1
    assert stops > 100
    # the control: a level with one pole copy's face removed is open
    nv, ni, idx = replay(p, len(pos) // 2)
    assert open_edges_by_position(label, idx[3:ni]) > 0


def stretched_plane(n=21):
    """A flat n x n grid whose texture map bends: u = x^3, v = y.  Flat, so
    every collapse is free to the face planes and only the UVs tell them apart;
    the exact map says what a level's interpolated UVs should be."""
    x, y = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n))
    pos = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], axis=1)
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]
    tris = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                           np.stack([b, d, c], -1).reshape(-1, 3)])
    return pos, tris, np.stack([pos[:, 0] ** 3, pos[:, 1]], axis=1)


def level_with_triangles(p, triangles):
    """The coarsest stop with at least ``triangles`` triangles (original ids)."""
    for nv in range(p.min_vertices, len(p.order) + 1):
        _, ni, idx = replay(p, nv)
        if ni >= 3 * triangles:
            return p.order[idx[:ni]].reshape(-1, 3)
    raise AssertionError("no such level")


def texture_error(pos, uv, tris):
    """Area-weighted mean distance between the level's interpolated UVs and the
    exact map u = x^3, v = y, over fixed barycentric samples of each triangle."""
    w = np.random.default_rng(0).dirichlet((1, 1, 1), 32)              # (32, 3)
    p = np.einsum("sk,tkj->tsj", w, pos[tris])
    got = np.einsum("sk,tkj->tsj", w, uv[tris])
    exact = np.stack([p[..., 0] ** 3, p[..., 1]], axis=-1)
    area = np.linalg.norm(np.cross(pos[tris[:, 1]] - pos[tris[:, 0]],
                                   pos[tris[:, 2]] - pos[tris[:, 0]]), axis=1)
    return float((np.linalg.norm(got - exact, axis=-1).mean(axis=1) * area).sum() / area.sum())


@pytest.mark.parametrize("fraction", [0.5, 0.25, 0.1])
def test_uv_quadrics_keep_a_bent_texture_map(fraction):
    """The attribute quadrics (faces' planes in position + UV space) make a
    collapse cost what it does to the texture: on a flat plane whose map bends,
    the levels keep the vertices where u = x^3 curves.  Geometry alone cannot
    tell the collapses apart (the control, ``attributes=None``, as imports
    priced them before) smears the map 2.5-11 times as much (which of its many tied
    collapses goes first is arbitrary, so its figure moves with any change to
    the queue)."""
    pos, tris, uv = stretched_plane()
    n = int(fraction * len(tris))
    with_uv = texture_error(pos, uv, level_with_triangles(
        build_progressive(pos, tris, attributes=uv), n))
    without = texture_error(pos, uv, level_with_triangles(build_progressive(pos, tris), n))
    assert with_uv < 0.001 and without > 2 * with_uv, (with_uv, without)


def test_the_compiled_order_is_the_simplifiers_and_keeps_the_shape_as_well(sphere):
    """The compiled order is replayed, not ignored: its records differ from the
    reference's, and its levels sink at most about twice as deep."""
    pytest.importorskip("fast_simplification")
    pos, tris = sphere
    ref = build_progressive(pos, tris, order="python")
    fast = build_progressive(pos, tris, order="compiled")
    assert not np.array_equal(ref.collapses, fast.collapses)
    for share in (0.5, 0.25):
        depth = [sagitta(pos, p.order[idx[:ni]].reshape(-1, 3))
                 for p in (ref, fast) for nv, ni, idx in [replay(p, int(len(pos) * share))]]
        assert depth[1] <= 2.5 * depth[0] + 0.005, (share, depth)


def test_compiled_schedule_names_positions_not_seam_copies(sphere):
    """Its pairs are (removed, kept) position labels, never a position onto itself."""
    pytest.importorskip("fast_simplification")
    pos, tris = sphere
    _, label = np.unique(pos, axis=0, return_inverse=True)
    label = label.reshape(-1)
    sched = pmgen.compiled_schedule(pos, tris, label)
    assert len(sched) > len(np.unique(label)) // 2
    assert (sched[:, 0] != sched[:, 1]).all() and sched.max() <= label.max()


def test_the_attribute_grid_sums_as_the_per_row_einsum(monkeypatch):
    """_candidates prices a vertex's (pair, copy) rows as one grid when there are
    many (a pole's fan) and row by row otherwise; both sum each row in the same
    order, so every vertex through the grid (QA_GRID 1) and none through it give
    the same costs, bit for bit (with UVs: the attribute quadrics in play)."""
    pos, tris = sphere_without_unused(8, 32)
    uv = np.random.default_rng(3).uniform(0, 1, (len(pos), 2))
    inner = pmgen._candidates

    def run(grid):
        seen = []

        def record(*a):
            out = inner(*a)
            seen.append(np.array(out, np.float64).tobytes())
            return out
        monkeypatch.setattr(pmgen, "QA_GRID", grid)
        monkeypatch.setattr(pmgen, "_candidates", record)
        return build_progressive(pos, tris, attributes=uv), seen

    rows, rows_costs = run(10 ** 12)
    grid, grid_costs = run(1)
    assert len(rows_costs) > 10 and grid_costs == rows_costs
    assert grid.collapses.tobytes() == rows.collapses.tobytes()
    assert np.array_equal(grid.indices, rows.indices)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 2), st.booleans()), max_size=25),
       st.integers(0, 4), st.integers(0, 6))
def test_counts_at_a_vertex_count_are_the_engine_loops(recs, min_v, min_i):
    """The prefix-sum counts (used to search LOD stops) equal the engine's
    split loop's for every target, zero-vertex records and flags included."""
    from potsherd.formats.ko.scene import pmesh_at_vertex_count, pmesh_counts_at_vertex_count
    from potsherd.formats.ko.wire import record_table
    t = np.zeros(len(recs), record_table("collapse").dtype)
    if recs:
        t["indicesToLose"], t["verticesToLose"], t["shouldCollapse"] = zip(*recs)
    m = {"collapses": t, "indices": np.zeros(3, np.uint16), "indexChanges": np.zeros(0, np.int32),
         "minVertexCount": min_v, "minIndexCount": min_i}
    targets = np.arange(-1, min_v + 2 * len(recs) + 2)
    nv, ni = pmesh_counts_at_vertex_count(m, targets)
    assert [(int(a), int(b)) for a, b in zip(nv, ni)] == \
        [pmesh_at_vertex_count(m, int(x))[:2] for x in targets]


def test_requeueing_only_changed_choices_chooses_the_same_collapses(monkeypatch):
    """A collapse onto b changes the faces of a's neighbours and b's quadric;
    another neighbour of b keeps its faces, and its collapse onto b only gets
    dearer, so its queued choice stands unless it was b.  Strictly greedy and
    without ties (a bumpy sphere), requeueing only the changed choices gives
    the same mesh as requeueing every neighbour of b, with fewer costs computed
    (the control: the count of recomputed positions, which must fall)."""
    pos, tris = sphere_without_unused(10, 20)
    pos = pos * np.random.default_rng(5).uniform(0.9, 1.1, (len(pos), 1))
    monkeypatch.setattr(pmgen, "REFRESH_BATCH", 1)
    inner = pmgen._candidates
    priced = []

    def counting(m, q, vs, scale2):
        priced.append(len(vs))
        return inner(m, q, vs, scale2)

    monkeypatch.setattr(pmgen, "_candidates", counting)
    out = {}
    for only_changed in (True, False):
        monkeypatch.setattr(pmgen, "REQUEUE_CHANGED_ONLY", only_changed)
        priced.clear()
        out[only_changed] = build_progressive(pos, tris), sum(priced)
    (lean, lean_work), (full, full_work) = out[True], out[False]
    assert np.array_equal(lean.collapses, full.collapses)
    assert np.array_equal(lean.indices, full.indices)
    assert np.array_equal(lean.index_changes, full.index_changes)
    assert lean_work < 0.9 * full_work, (lean_work, full_work)


def mean_sagitta(pos, tris):
    """Area-weighted mean depth of a level's face centroids below the unit sphere."""
    t = np.asarray(tris).reshape(-1, 3)
    area = np.linalg.norm(np.cross(pos[t[:, 1]] - pos[t[:, 0]], pos[t[:, 2]] - pos[t[:, 0]]),
                          axis=1)
    return float(((1 - np.linalg.norm(pos[t].mean(axis=1), axis=1)) * area).sum() / area.sum())


def test_batched_refreshes_keep_the_levels_of_the_strictly_greedy_order(monkeypatch):
    """Refresh batches (a vertex changed by a collapse sits out until up to one
    in eight live vertices has) trade exact greed for fewer array passes; the
    levels they give sink no deeper than the strictly greedy ones' (within
    6 %, at every halving of the vertex count), and the orders do differ.
    The control: one batch per all live vertices sinks deeper than that."""
    pos, tris = sphere_without_unused(16, 32)

    def depths(batch, share):
        monkeypatch.setattr(pmgen, "REFRESH_BATCH", batch)
        monkeypatch.setattr(pmgen, "REFRESH_SHARE", share)
        p = build_progressive(pos, tris)
        return p, [mean_sagitta(pos, p.order[idx[:ni]]) for s in (2, 4, 8, 16)
                   for _, ni, idx in [replay(p, len(pos) // s)]]

    batched, depth = depths(64, 3)
    greedy, greedy_depth = depths(1, 3)
    _, coarse_depth = depths(10 ** 6, 0)
    assert not np.array_equal(batched.collapses, greedy.collapses)
    assert all(d <= 1.06 * g for d, g in zip(depth, greedy_depth)), (depth, greedy_depth)
    assert any(d > 1.06 * g for d, g in zip(coarse_depth, greedy_depth)), coarse_depth


def test_deferred_quadric_merges_sum_as_the_collapses_did():
    """A replayed order adds each removed quadric into its keeper, which may be
    removed later in turn; ``_merge_into_roots`` makes all those sums at once.
    With whole-number entries (exact in any order) they equal the additions
    made one collapse at a time, and a merge that was never made is not
    counted (the control: dropping one pair changes the result)."""
    rng = np.random.default_rng(7)
    n = 300
    start = rng.integers(-50, 50, (n, 4, 4)).astype(float)
    alive = list(range(n))
    pairs = []
    for _ in range(250):                      # a random merge forest, in order
        a, b = rng.choice(len(alive), 2, replace=False)
        removed, kept = alive[a], alive[b]
        pairs.append((removed, kept))
        alive.remove(removed)
    one_by_one = start.copy()
    for removed, kept in pairs:
        one_by_one[kept] += one_by_one[removed]
    merged = start.copy()
    pmgen._merge_into_roots(merged, [v for p in pairs for v in p])
    assert np.array_equal(merged[alive], one_by_one[alive])
    short = start.copy()
    pmgen._merge_into_roots(short, [v for p in pairs[:-1] for v in p])
    assert not np.array_equal(short[alive], one_by_one[alive])
