"""The hierarchy evaluated a level at a time, nodes of one path stacked
(``scene_rig.evaluate``), gives the same bits as the node-by-node evaluation
it replaced (kept below as the reference), for every inherit mode, split
nodes, constant and animated inputs, and parents whose glTF world needed a
decomposition."""
from __future__ import annotations

import numpy as np

from potsherd.formats.fbx import scene_rig
from potsherd.formats.fbx.scene_rig import (COMPONENTWISE_SCALE, IGNORE_PARENT_SCALE, NORMAL,
                                            evaluate)
from potsherd.scene import decompose_matrix, trs_to_matrix


class _Ref:
    __slots__ = ("world", "unscaled", "inherit_scale", "scale_parent", "gltf_world",
                 "gltf_unscaled")


def _reference_evaluate(order, parent_of, mode_of, local_trs, split):
    """Node by node, as FBX nodes were evaluated before the stacking."""
    states, gltf, helper = {}, {}, {}
    for nid in order:
        t, q, s = local_trs[nid]
        parent = states.get(parent_of.get(nid))
        mode = mode_of.get(nid, NORMAL) if parent is not None else NORMAL
        if parent is None:
            world, unscaled = trs_to_matrix(t, q, s), trs_to_matrix(t, q, None)
            inherit, scale_parent, ref, ref_exact, lt, ls = s, None, None, True, t, s
        elif mode == NORMAL:
            world = parent.world @ trs_to_matrix(t, q, s)
            unscaled = parent.world @ trs_to_matrix(t, q, None)
            inherit, scale_parent, ref = s, None, parent.gltf_world
            ref_exact, lt, ls = ref is parent.world, t, s
        else:
            scale_parent = parent if mode == COMPONENTWISE_SCALE else parent.scale_parent
            ps = scale_parent.inherit_scale if scale_parent is not None else np.ones(3)
            ls, lt = s * ps, t * parent.inherit_scale
            world = parent.unscaled @ trs_to_matrix(lt, q, ls)
            unscaled = parent.unscaled @ trs_to_matrix(lt, q, None)
            inherit, ref = ls, parent.gltf_unscaled
            ref_exact = ref is parent.unscaled
        is_split = nid in split
        target = unscaled if is_split else world
        if ref_exact:
            local, realised = (lt, q, np.ones_like(ls) if is_split else ls), target
        else:
            local = decompose_matrix(np.linalg.inv(ref) @ target)
            realised = ref @ trs_to_matrix(*local)
            if np.allclose(realised, target, rtol=1e-9, atol=1e-9):
                realised = target
        st = _Ref()
        st.world, st.unscaled, st.inherit_scale, st.scale_parent = world, unscaled, inherit, \
            scale_parent
        if is_split:
            helper[nid] = ls
            st.gltf_unscaled = realised
            st.gltf_world = world if realised is unscaled else realised @ trs_to_matrix(scale=ls)
        else:
            st.gltf_unscaled = st.gltf_world = realised
        states[nid], gltf[nid] = st, local
    return states, gltf, helper


def _random_rig(rng: np.random.Generator, count: int, samples: int) -> tuple:
    order, parent_of, mode_of, local = [], {}, {}, {}
    for nid in range(100, 100 + count):
        parent_of[nid] = int(rng.choice(order)) if order and rng.random() < 0.9 else None
        mode_of[nid] = [NORMAL, COMPONENTWISE_SCALE, IGNORE_PARENT_SCALE][int(rng.integers(0, 3))]
        rows = [samples if rng.random() < 0.3 else 1 for _ in range(3)]
        q = rng.normal(size=(rows[1], 4))
        s = rng.uniform(0.3, 2.5, size=(rows[2], 3))
        if rng.random() < 0.4:
            s[:] = s[:, :1]  # uniform scales keep some glTF worlds exact
        local[nid] = (rng.normal(size=(rows[0], 3)), q / np.linalg.norm(q, axis=1, keepdims=True),
                      s)
        order.append(nid)
    split = {nid for nid in order if rng.random() < 0.2}
    return order, parent_of, mode_of, local, split


def _bits(x) -> bytes:
    return np.ascontiguousarray(x).tobytes() + str(np.shape(x)).encode()


def test_stacked_hierarchy_matches_node_by_node_bit_for_bit(monkeypatch):
    decompositions, groups = [], []
    group = scene_rig._evaluate_group
    monkeypatch.setattr(scene_rig, "_evaluate_group",
                        lambda jobs, *a: groups.append(len(jobs)) or group(jobs, *a))
    for seed in range(6):
        rig = _random_rig(np.random.default_rng(seed), 80, 7)
        ref_states, ref_gltf, ref_helper = _reference_evaluate(*rig)
        states, gltf, helper = evaluate(*rig)
        assert list(states) == list(gltf) == rig[0]
        assert list(helper) == list(ref_helper)
        for nid in rig[0]:
            assert _bits(states[nid].world) == _bits(ref_states[nid].world)
            assert _bits(states[nid].gltf_world) == _bits(ref_states[nid].gltf_world)
            assert [_bits(x) for x in gltf[nid]] == [_bits(x) for x in ref_gltf[nid]]
            decompositions.append(ref_states[nid].gltf_world is not ref_states[nid].world)
        for nid in helper:
            assert _bits(helper[nid]) == _bits(ref_helper[nid])
    # negative controls: both paths were taken, and nodes really were stacked
    assert any(decompositions) and not all(decompositions)
    assert max(groups) > 1
