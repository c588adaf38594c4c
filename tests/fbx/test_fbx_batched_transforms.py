"""Model transforms built in stacked chains (``local_trs_many``) give the same
bits as one model at a time (``local_trs``), for every mix of rotation order,
pivots / offsets / pre-post rotations, rest or sampled values, Euler or
quaternion rotations, and across batch splits."""
from __future__ import annotations

import numpy as np
import pytest

from potsherd.core.errors import ValueFormatError
from potsherd.formats.fbx import objects
from potsherd.formats.fbx.model import FbxNode
from potsherd.formats.fbx.objects import (STATIC_FACTORS, _Object, local_trs, local_trs_many,
                                          local_trs_of_inputs, transform_inputs)


def _model(oid: int, props: dict) -> _Object:
    rows = [FbxNode(b"P", [("S", name.encode()), ("S", b""), ("S", b""), ("S", b"A")]
                    + [("D" if isinstance(v, float) else "S", v) for v in values])
            for name, values in props.items()]
    node = FbxNode(b"Model", [("L", oid), ("S", f"m{oid}\x00\x01Model".encode()), ("S", b"Mesh")],
                   [FbxNode(b"Properties70", [], rows)])
    return _Object(node)


def _random_models(rng: np.random.Generator, count: int) -> list:
    models = []
    for i in range(count):
        props = {"Lcl Translation": rng.normal(size=3).tolist(),
                 "Lcl Rotation": (rng.uniform(-180, 180, size=3)).tolist(),
                 "Lcl Scaling": rng.uniform(0.2, 3.0, size=3).tolist(),
                 "RotationOrder": [float(rng.choice([0, 4, 5]))]}
        # none, the two pivots, or every pivot / offset / pre-post rotation
        for name in [(), ("RotationPivot", "ScalingPivot"), STATIC_FACTORS][int(rng.integers(0, 3))]:
            props[name] = (rng.normal(size=3) * 20).tolist()
        models.append(_model(i + 1, props))
    return models


def _same_bits(a: tuple, b: tuple) -> None:
    assert len(a) == len(b) == 3
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert x.tobytes() == y.tobytes()


def test_rest_transforms_match_one_by_one_bit_for_bit(monkeypatch):
    models = _random_models(np.random.default_rng(7), 120)
    single = [local_trs(m) for m in models]
    calls = []
    chain = objects._chain
    monkeypatch.setattr(objects, "_chain", lambda *a: calls.append(1) or chain(*a))
    batched = local_trs_many([(m, None, None, None, None) for m in models])
    for a, b in zip(single, batched):
        _same_bits(a, b)
    # negative control: the models really were stacked (fewer chains than models)
    assert 1 < len(calls) <= 9
    assert any(np.ptp(trs[0]) > 0 for trs in batched)


def test_sampled_transforms_match_with_quaternions_and_splits(monkeypatch):
    rng = np.random.default_rng(11)
    models = _random_models(rng, 30)
    items = []
    for k, m in enumerate(models):
        n = int(rng.integers(1, 40))
        t, s = rng.normal(size=(n, 3)), rng.uniform(0.5, 2.0, size=(n, 3))
        if k % 3 == 0:  # a blended layer gives R as quaternions
            q = rng.normal(size=(n, 4))
            items.append((m, t, None, s, q / np.linalg.norm(q, axis=1, keepdims=True)))
        else:
            items.append((m, t, rng.uniform(-360, 360, size=(n, 3)), s, None))
    single = [local_trs(*item) for item in items]
    monkeypatch.setattr(objects, "MAX_BATCH_ROWS", 50)  # several batches per group
    for a, b in zip(single, local_trs_many(items)):
        _same_bits(a, b)


def test_rest_inputs_read_in_model_order_and_errors_name_the_model():
    good = _model(1, {"Lcl Translation": [1.0, 2.0, 3.0]})
    bad = _model(2, {"Lcl Translation": [1.0, b"x", 3.0]})
    assert local_trs_of_inputs([transform_inputs(good)])[0][0].tolist() == [[1.0, 2.0, 3.0]]
    with pytest.raises(ValueFormatError) as e:
        local_trs_many([(good, None, None, None, None), (bad, None, None, None, None)])
    assert "Model::m2/Lcl Translation" in str(e.value)
