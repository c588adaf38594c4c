"""Animation curves sampled together (``sample_curves``) give the same bits as
one curve at a time, and the values FBX interpolation defines: linear keys are
``np.interp``, constant segments hold, cubic segments pass through their keys."""
from __future__ import annotations

import numpy as np

from potsherd.formats.fbx import curves as curves_module
from potsherd.formats.fbx.curves import _Curve, sample_curves
from potsherd.formats.fbx.objects import KTIME_PER_SECOND

LINEAR, CONSTANT, CUBIC, USER, WEIGHTED = 0x04, 0x02, 0x08, 0x400, 0x03000000


def _curve(rng: np.random.Generator, n: int, flag_choices: list) -> _Curve:
    t = np.cumsum(rng.integers(1, 20, size=n)) * (KTIME_PER_SECOND // 30)
    v = rng.normal(size=n)
    flags = np.array([int(rng.choice(flag_choices)) for _ in range(n)], dtype=np.int32)
    data = rng.normal(size=(n, 4)).astype(np.float32)
    weights = rng.integers(500, 9000, size=(n, 2)).astype(np.uint32)
    data[:, 2] = (weights[:, 0] | (weights[:, 1] << 16)).view(np.float32)
    return _Curve(t, v, flags, data.reshape(-1), np.ones(n, dtype=np.int32))


def _mixed(rng: np.random.Generator) -> list:
    out = [_curve(rng, 1, [CUBIC]), _curve(rng, 7, [LINEAR])]
    for _ in range(25):
        out.append(_curve(rng, int(rng.integers(2, 12)),
                          [LINEAR, CONSTANT, CUBIC, CUBIC | USER, CUBIC | USER | WEIGHTED]))
    return out


def test_stacked_sampling_matches_one_curve_at_a_time_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(5)
    cs = _mixed(rng)
    ticks = np.linspace(-KTIME_PER_SECOND, 12 * KTIME_PER_SECOND, 301)
    alone = [sample_curves([c], ticks)[0] for c in cs]
    together = sample_curves(cs, ticks)
    monkeypatch.setattr(curves_module, "MAX_STACKED_SAMPLES", 3 * len(ticks))  # chunks of 3
    chunked = sample_curves(cs, ticks)
    for a, b, c in zip(alone, together, chunked):
        assert a.tobytes() == b.tobytes() == c.tobytes()
    assert [c.sample(ticks).tobytes() for c in cs] == [a.tobytes() for a in alone]


def test_sampled_values_follow_the_interpolation_modes():
    rng = np.random.default_rng(9)
    linear, constant, cubic = (_curve(rng, 6, [f]) for f in (LINEAR, CONSTANT, CUBIC | USER))
    keys = constant.t.astype(np.float64)
    mid = (keys[:-1] + keys[1:]) / 2
    lin, con, cub = sample_curves([linear, constant, cubic], mid)
    assert lin.tobytes() == np.interp(mid, linear.t.astype(np.float64), linear.v).tobytes()
    assert con.tolist() == constant.v[:-1].tolist()            # holds the segment's first value
    at_keys = sample_curves([cubic], cubic.t.astype(np.float64))[0]
    assert np.allclose(at_keys, cubic.v, rtol=0, atol=1e-12)  # a Bezier passes through its keys
    # negative control: between the keys a cubic curve with random slopes is not linear
    assert not np.allclose(sample_curves([cubic], mid)[0],
                           np.interp(mid, cubic.t.astype(np.float64), cubic.v))


def _raw_curve(rng: np.random.Generator) -> tuple:
    """KeyTime / KeyValueFloat / KeyAttr* arrays as a file stores them: one
    attribute for every key, one shared by all, or runs of keys sharing one."""
    n = int(rng.integers(1, 14))
    t = np.cumsum(rng.integers(0 if rng.random() < 0.1 else 1, 20, size=n)) * 1539538600
    v = rng.normal(size=n) * (0 if rng.random() < 0.1 else 1)
    if rng.random() < 0.1:
        return t, v, None, None, None
    shape = int(rng.integers(0, 3))
    refcount = [n] if shape == 0 else [1] * n if shape == 1 else \
        np.diff(np.unique(np.concatenate([[0, n], rng.integers(0, n, size=3)]))).tolist()
    flags = [int(rng.choice([LINEAR, CONSTANT, CUBIC, CUBIC | 0x1000, CUBIC | 0x4000,
                             CUBIC | 0x2000, CUBIC | USER, CUBIC | WEIGHTED, CUBIC | 0x200]))
             for _ in refcount]
    data = (rng.normal(size=(len(refcount), 4)) * rng.choice([1, 50, 900])).astype(np.float32)
    data[:, 2] = rng.integers(0, 2**32, size=len(refcount), dtype=np.uint64).astype(
        np.uint32).view(np.float32)
    if rng.random() < 0.1:
        data = data[:-1]  # too short: modes only, no slopes or weights
    return t, v, np.array(flags, np.int32), data.reshape(-1), np.array(refcount, np.int32)


def test_keys_decoded_together_match_one_curve_at_a_time():
    rng = np.random.default_rng(3)
    raws = [_raw_curve(rng) for _ in range(300)]
    alone = [_Curve(*r) for r in raws]
    together = [_Curve(*r, prepare=False) for r in raws]
    curves_module.prepare_curves(together)
    for a, b in zip(alone, together):
        for name in ("mode", "slopes", "weights"):
            assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    # negative control: automatic tangents were recomputed (slopes differ from the stored ones)
    stored = [r[3].reshape(-1, 4)[0, 0] for r in raws if r[2] is not None and r[2][0] == CUBIC
              and len(r[3]) >= 4 * len(r[4]) and len(r[0]) > 2]
    assert stored
    assert any(c.slopes[0, 0] != np.float32(s) for c, s in zip(
        [c for c, r in zip(alone, raws) if r[2] is not None and r[2][0] == CUBIC
         and len(r[3]) >= 4 * len(r[4]) and len(r[0]) > 2], stored))
