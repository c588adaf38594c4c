"""Compare a scene with what the glTF writer + reader give back.

The writer normalises some data on the way out (normals, quaternions, skin
weights, float32 everywhere, identity transforms omitted, repeated faces on
their own vertices); this comparison
applies the same normalisation to the original and then demands equality
(float32 exact, or within ``atol`` where the writer renormalises).
"""
from __future__ import annotations


import numpy as np

from potsherd.scene import Scene, quat_normalize
from potsherd.scene.ops import faces_apart


def _f32(a):
    return None if a is None else np.asarray(a, dtype=np.float32)


def _eq(a, b, where, atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
    if atol:
        assert np.allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=0), \
            f"{where}: max diff {np.abs(a.astype(np.float64) - b).max()}"
    else:
        assert np.array_equal(a, b), f"{where}: differs"


def _dense_weights(joints, weights, njoints):
    j = np.asarray(joints, np.int64)
    w = np.asarray(weights, np.float64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    s = w.sum(axis=1, keepdims=True)
    w = w / np.where(s > 0, s, 1.0)
    out = np.zeros((len(j), max(njoints, int(j.max(initial=0)) + 1)))
    np.add.at(out, (np.repeat(np.arange(len(j)), j.shape[1]), j.reshape(-1)), w.reshape(-1))
    return out


def _trs(node):
    if node.matrix is not None:
        return ("m", np.asarray(node.matrix, np.float64))
    t = np.zeros(3) if node.translation is None else np.asarray(node.translation, np.float64)
    r = np.array([0, 0, 0, 1.0]) if node.rotation is None else quat_normalize(node.rotation)
    s = np.ones(3) if node.scale is None else np.asarray(node.scale, np.float64)
    return ("trs", t, r, s)


def assert_scene_matches(orig: Scene, back: Scene) -> None:
    """``back`` (read from the glTF written from ``orig``) holds ``orig``'s content."""
    assert back.roots == orig.roots
    assert back.name == orig.name
    assert len(back.nodes) == len(orig.nodes)
    animated = {c.node for a in orig.animations for c in a.channels if c.path != "weights"}
    for i, (a, b) in enumerate(zip(orig.nodes, back.nodes)):
        assert a.name == b.name and a.children == b.children, f"nodes[{i}]"
        assert a.mesh == b.mesh and a.skin == b.skin, f"nodes[{i}] mesh/skin"
        ta, tb = _trs(a), _trs(b)
        if ta[0] == "m" and i in animated:
            from potsherd.scene import decompose_matrix, trs_to_matrix
            ta = ("trs",) + tuple(decompose_matrix(ta[1]))
        if ta[0] == "m" and np.allclose(ta[1], np.eye(4), atol=0):
            ta = _trs(type(a)())
        assert ta[0] == tb[0], f"nodes[{i}] transform kind"
        for k, (x, y) in enumerate(zip(ta[1:], tb[1:])):
            _eq(np.float64(x) if ta[0] == "trs" else x, y, f"nodes[{i}] transform {k}", atol=1e-7)
    assert len(back.meshes) == len(orig.meshes)
    for mi, (ma, mb) in enumerate(zip(orig.meshes, back.meshes)):
        assert ma.name == mb.name, f"meshes[{mi}].name"
        assert (ma.target_names or None) == (mb.target_names or None)
        pa = [p for p in ma.primitives if len(p.positions)]
        assert len(pa) == len(mb.primitives), f"meshes[{mi}] primitives"
        for pi, (p, q) in enumerate(zip(pa, mb.primitives)):
            w = f"meshes[{mi}].primitives[{pi}]"
            p = faces_apart(p)               # the writer gives repeated faces their own vertices
            _eq(_f32(p.positions), q.positions, w + ".positions")
            if p.normals is None:
                assert q.normals is None
            else:
                n = np.asarray(p.normals, np.float64)
                n = n / np.linalg.norm(n, axis=1, keepdims=True)
                _eq(n, q.normals, w + ".normals", atol=1e-6)
            assert len(p.uvs) <= len(q.uvs), w + ".uvs"
            for k, uv in enumerate(p.uvs):
                _eq(_f32(uv), q.uvs[k], f"{w}.uvs[{k}]")
            if p.colors is None:
                assert q.colors is None
            else:
                c = np.asarray(p.colors)
                if c.dtype in (np.uint8, np.uint16) and c.shape[1] == 4:
                    _eq(c, q.colors, w + ".colors")
                else:
                    if c.dtype.kind in "ui":
                        c = c / float(np.iinfo(c.dtype).max)
                    _eq(np.clip(c, 0, 1).astype(np.float32), q.colors, w + ".colors")
            if p.joints is None:
                assert q.joints is None
            else:
                nj = int(np.asarray(p.joints).max()) + 1
                _eq(_dense_weights(p.joints, p.weights, nj),
                    _dense_weights(q.joints, q.weights, nj), w + ".weights", atol=2e-7)
            if p.indices is None:
                assert q.indices is None
            else:
                _eq(np.asarray(p.indices).reshape(-1).astype(np.int64),
                    q.indices.astype(np.int64), w + ".indices")
            assert p.material == q.material and p.mode == q.mode, w
            assert len(p.targets) == len(q.targets)
            for ti, (ta, tb) in enumerate(zip(p.targets, q.targets)):
                _eq(_f32(ta.positions), tb.positions, f"{w}.targets[{ti}]")
                if ta.normals is not None:
                    _eq(_f32(ta.normals), tb.normals, f"{w}.targets[{ti}].normals")
    assert len(back.materials) == len(orig.materials)
    for i, (a, b) in enumerate(zip(orig.materials, back.materials)):
        assert a.name == b.name and a.alpha_mode == b.alpha_mode, f"materials[{i}]"
        assert a.double_sided == b.double_sided and a.unlit == b.unlit, f"materials[{i}]"
        bc = list(np.clip(np.asarray(a.base_color, np.float64), 0, 1))
        bc += [1.0] * (4 - len(bc))
        _eq(bc, b.base_color, f"materials[{i}].base_color")
        assert b.metallic == np.clip(a.metallic, 0, 1) and b.roughness == np.clip(a.roughness, 0, 1)
        _eq(np.clip(a.emissive, 0, 1), b.emissive, f"materials[{i}].emissive")
        if a.alpha_mode == "MASK":
            assert b.alpha_cutoff == a.alpha_cutoff
        ra, rb = a.base_color_texture, b.base_color_texture
        assert (ra is None) == (rb is None)
        if ra is not None:
            assert (ra.image, ra.texcoord, ra.wrap_s, ra.wrap_t, ra.mag_filter, ra.min_filter) == \
                (rb.image, rb.texcoord, rb.wrap_s, rb.wrap_t, rb.mag_filter, rb.min_filter)
    assert len(back.images) == len(orig.images)
    for i, (a, b) in enumerate(zip(orig.images, back.images)):
        assert a.name == b.name, f"images[{i}]"
        if a.data is not None:
            assert b.data == bytes(a.data) and b.mime_type == a.mime_type, f"images[{i}]"
        else:
            assert b.uri == a.uri
    assert len(back.skins) == len(orig.skins)
    for i, (a, b) in enumerate(zip(orig.skins, back.skins)):
        assert list(a.joints) == b.joints and a.skeleton == b.skeleton and a.name == b.name
        if a.inverse_bind_matrices is None:
            assert b.inverse_bind_matrices is None
        else:
            ibm = np.array(a.inverse_bind_matrices, np.float64).reshape(-1, 4, 4)
            ibm[:, 3] = (0, 0, 0, 1)
            _eq(ibm.astype(np.float32), b.inverse_bind_matrices.astype(np.float32),
                f"skins[{i}].ibm")
    kept = [a for a in orig.animations if a.channels]
    assert len(back.animations) == len(kept)
    for ai, (a, b) in enumerate(zip(kept, back.animations)):
        assert a.name == b.name and len(a.channels) == len(b.channels), f"animations[{ai}]"
        for ci, (c, d) in enumerate(zip(a.channels, b.channels)):
            w = f"animations[{ai}].channels[{ci}]"
            assert (c.node, c.path, c.interpolation) == (d.node, d.path, d.interpolation), w
            _eq(_f32(c.times), d.times, w + ".times")
            v = np.asarray(c.values, np.float64).reshape(d.values.shape)
            if c.path == "rotation" and c.interpolation != "CUBICSPLINE":
                v = quat_normalize(v)
            _eq(v.astype(np.float32), d.values, w + ".values", atol=1e-7)
