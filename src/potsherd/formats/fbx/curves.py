"""FBX animation curves: keys with their tangents (auto, user, broken; weights and
velocity), evaluated as the SDK does; layers, defaults and 5.x/6.x takes."""
from __future__ import annotations

from typing import Any

import numpy as np

from .model import FbxNode
from .objects import KTIME_PER_SECOND, _Object


class _Curve:
    """An animation curve: KTime ticks, values and (7.x) per-key attributes.

    ``KeyAttrFlags`` pick constant (0x02), linear (0x04) or cubic (0x08)
    interpolation; cubic segments are Bezier curves in (time, value) built from
    the right / next-left slopes of ``KeyAttrDataFloat`` (4 floats per
    attribute, shared by ``KeyAttrRefCount`` consecutive keys) and, when the
    weighted flags (0x01000000 right, 0x02000000 next left) are set, the
    tangent weights packed in its third float (two 16-bit fixed points, 1/10000);
    otherwise weights are 1/3 (a plain Hermite spline).
    """

    def __init__(self, t, v, flags=None, data=None, refcount=None, prepare: bool = True) -> None:
        self.t = np.asarray(t, dtype=np.int64)
        self.v = np.asarray(v, dtype=np.float64)
        n = len(self.t)
        self.mode = np.full(n, 0x04, dtype=np.int64)
        self.slopes = np.zeros((n, 2))
        self.weights = np.full((n, 2), 1.0 / 3.0)
        self._attrs = (flags, data, refcount)
        if prepare:
            prepare_curves([self])

    def sample(self, ticks: np.ndarray) -> np.ndarray:
        """The curve's values at ``ticks`` (see :func:`sample_curves`)."""
        return sample_curves([self], ticks)[0]


def prepare_curves(curves: list) -> None:
    """Per-key modes, slopes and weights of curves made with ``prepare=False``
    (from their ``KeyAttr*`` arrays; automatic tangents recomputed), for all
    of them at once: the attribute decoding and the tangent rule run on every
    curve's keys stacked, the same elementwise arithmetic as curve by curve."""
    decoded = []  # (curve, per-key attribute index, the attributes' floats)
    auto = []
    for c in curves:
        attrs, c._attrs = c._attrs, None
        if attrs is None:
            continue
        flags, data, refcount = attrs
        n = len(c.t)
        if flags is None or refcount is None or len(flags) != len(refcount):
            continue
        # key k uses the attribute whose running refcount total first exceeds k
        # (no np.repeat: a hostile refcount must not size an allocation)
        ends = np.cumsum(np.clip(np.asarray(refcount, dtype=np.float64), 0, n))
        if not (len(ends) and ends[-1] >= n):
            continue
        per_key = np.searchsorted(ends, np.arange(n), side="right")
        c.mode = np.asarray(flags, dtype=np.int64)[per_key]
        if data is not None and len(data) >= 4 * len(refcount):
            decoded.append((c, per_key, np.asarray(data, dtype=np.float32)[:4 * len(refcount)]))
        auto.append(c)
    if decoded:
        raw = np.concatenate([r for _, _, r in decoded])
        firsts = np.cumsum([0] + [len(r) // 4 for _, _, r in decoded[:-1]])
        per_key = np.concatenate([k + b for (_, k, _), b in zip(decoded, firsts.tolist())])
        with np.errstate(invalid="ignore"):  # (a signalling NaN in the file: quiet, not a warning)
            slopes = raw.astype(np.float64).reshape(-1, 4)[per_key, :2]
        packed = raw.reshape(-1, 4)[:, 2].view(np.uint32)[per_key]
        mode = np.concatenate([c.mode for c, _, _ in decoded])
        right = np.where(mode & 0x01000000, (packed & 0xFFFF) / 10000.0, 1.0 / 3.0)
        left = np.where(mode & 0x02000000, (packed >> 16) / 10000.0, 1.0 / 3.0)
        at = 0
        for c, _, _ in decoded:
            n = len(c.t)
            c.slopes = slopes[at:at + n]
            c.weights[:, 0] = right[at:at + n]
            c.weights[:, 1] = left[at:at + n]
            at += n
    _auto_tangents([c for c in auto if len(c.t) >= 2])


def _auto_tangents(curves: list) -> None:
    """Cubic keys with automatic tangents (neither user 0x400 nor TCB 0x200)
    store an auto *bias* in their slope fields: the slopes are recomputed from
    the neighbouring keys, as Maya and ufbx do (clamped with 0x1000,
    progressive clamp with 0x4000, time-independent 0x2000).  Every curve's
    keys (two or more each) are stacked; neighbours stay within a curve."""
    if not curves:
        return
    counts = np.array([len(c.t) for c in curves], dtype=np.int64)
    mode = np.concatenate([c.mode for c in curves])
    auto = ((mode & 0x08) != 0) & ((mode & 0x02) == 0) & ((mode & 0x600) == 0)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has_auto = np.logical_or.reduceat(auto, starts)
    if not has_auto.all():
        if not has_auto.any():
            return
        curves = [c for c, keep in zip(curves, has_auto.tolist()) if keep]
        return _auto_tangents(curves)
    t = np.concatenate([c.t for c in curves]).astype(np.float64) / KTIME_PER_SECOND
    v = np.concatenate([c.v for c in curves])
    slopes = np.concatenate([c.slopes for c in curves])
    weights = np.concatenate([c.weights for c in curves])
    n = np.repeat(counts, counts)             # each key's curve length
    k = np.arange(len(t)) - np.repeat(starts, counts)  # each key's index in its curve
    first, last = k == 0, k == n - 1
    stored_left = np.concatenate([[0.0], slopes[:-1, 1]])
    stored_left[first] = 0.0
    stored_right = slopes[:, 0].copy()
    weight_left = np.concatenate([[1.0 / 3.0], weights[:-1, 1]])
    weight_left[first] = 1.0 / 3.0
    weight_right = weights[:, 0]
    g = np.arange(len(t))
    pk, nk = g - ~first, g + ~last
    pt, nt, pv, nv = t[pk], t[nk], v[pk], v[nk]
    interior = (k > 0) & (k < n - 1) & (t > pt) & (nt > t)
    first_only = ~interior & (k + 1 < n) & (nt > t) & ~((k > 0) & (t > pt))
    last_only = ~interior & (k > 0) & (t > pt)
    flags = mode
    with np.errstate(divide="ignore", invalid="ignore"):
        unified = np.abs(stored_left + stored_right) <= 1e-4
        right_in = _auto_slope(pt, t, nt, pv, v, nv, weight_left, weight_right,
                               stored_right, flags)
        left_in = np.where(unified, right_in, _auto_slope(
            pt, t, nt, pv, v, nv, weight_left, weight_right, -stored_left, flags))
        one_side_left = _one_side_slope(pt, t, pv, v, -stored_left, flags)
        one_side_right = _one_side_slope(t, nt, v, nv, stored_right, flags)
    left = np.where(interior, left_in, np.where(last_only, one_side_left,
                                                np.where(first_only, one_side_right, 0.0)))
    right = np.where(interior, right_in, np.where(last_only, one_side_left,
                                                  np.where(first_only, one_side_right, 0.0)))
    left = np.where(np.isfinite(left), left, 0.0)
    right = np.where(np.isfinite(right), right, 0.0)
    slopes[:, 0] = np.where(auto, right, slopes[:, 0])
    inner = np.flatnonzero(~last)  # a key's next-left slope comes from the next key
    slopes[inner, 1] = np.where(auto[inner + 1], left[inner + 1], slopes[inner, 1])
    at = 0
    for c, count in zip(curves, counts.tolist()):
        c.slopes = slopes[at:at + count]
        at += count



#: sample rows one stacked evaluation of cubic / constant segments holds at most
MAX_STACKED_SAMPLES = 262144


def sample_curves(curves: list, ticks: np.ndarray) -> list:
    """Each curve's values at the same ``ticks``, as FBX interpolates them:
    linear between keys (``np.interp``, also outside the keys), constant
    segments hold their first value, cubic ones follow their Bezier curve.

    Curves without a constant or cubic key are only interpolated; the others'
    segments are evaluated stacked (every curve's keys in one array, the
    samples of all of them in one row set, bounded in size), which is the same
    elementwise arithmetic as one curve at a time, so the same bits, for a
    few numpy calls per curve instead of a few dozen."""
    ticks = np.asarray(ticks)
    out = []
    shaped = []  # curves with cubic or constant keys (and two keys or more)
    for i, c in enumerate(curves):
        t = c.t.astype(np.float64)
        out.append(np.interp(ticks, t, c.v))
        if len(t) >= 2 and np.any(c.mode & 0x0A):
            shaped.append(i)
    n = len(ticks)
    chunk: list = []
    for i in shaped:
        if chunk and (len(chunk) + 1) * n > MAX_STACKED_SAMPLES:
            _shaped_segments([curves[k] for k in chunk], ticks, [out[k] for k in chunk], chunk, out)
            chunk = []
        chunk.append(i)
    if chunk:
        _shaped_segments([curves[k] for k in chunk], ticks, [out[k] for k in chunk], chunk, out)
    return out


def _shaped_segments(curves: list, ticks: np.ndarray, linear: list, where: list,
                     out: list) -> None:
    """Cubic and constant segments of ``curves`` at ``ticks``, stacked; the
    results replace ``out[where[k]]``."""
    n = len(ticks)
    counts = np.array([len(c.t) for c in curves], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(counts)[:-1]])
    t = np.concatenate([c.t for c in curves]).astype(np.float64)
    v = np.concatenate([c.v for c in curves])
    modes = np.concatenate([c.mode for c in curves])
    weights = np.concatenate([c.weights for c in curves])
    slopes = np.concatenate([c.slopes for c in curves])
    # per sample row: its curve's segment (searched in that curve's keys), first / last key
    seg = np.concatenate([np.searchsorted(t[b:b + k], ticks, side="right")
                          for b, k in zip(base.tolist(), counts.tolist())]) - 1
    seg = np.clip(seg, 0, np.repeat(counts - 2, n)) + np.repeat(base, n)
    x = np.tile(ticks, len(curves))
    inside = (x >= np.repeat(t[base], n)) & (x <= np.repeat(t[base + counts - 1], n))
    t0, t1 = t[seg], t[seg + 1]
    dt = np.where(t1 > t0, t1 - t0, 1.0)
    u = np.clip((x - t0) / dt, 0.0, 1.0)
    v0, v1 = v[seg], v[seg + 1]
    mode = modes[seg]
    const = (mode & 0x02) != 0
    cubic = ((mode & 0x08) != 0) & ~const
    secs = dt / KTIME_PER_SECOND
    w0 = np.clip(weights[seg, 0], 1e-4, 1.0)
    w1 = np.clip(weights[seg, 1], 1e-4, 1.0)
    # Bezier control points in normalised time u and in value
    x1, x2 = w0, 1.0 - w1
    y1 = v0 + slopes[seg, 0] * secs * w0
    y2 = v1 - slopes[seg, 1] * secs * w1
    sb = _bezier_parameter(u, x1, x2, inside & cubic)
    bez = ((1 - sb) ** 3 * v0 + 3 * (1 - sb) ** 2 * sb * y1 + 3 * (1 - sb) * sb ** 2 * y2
           + sb ** 3 * v1)
    res = np.where(inside & cubic, bez, np.concatenate(linear))
    res = np.where(inside & const & (x < t1), v0, res)
    for k, i in enumerate(where):
        out[i] = res[k * n:(k + 1) * n]



def _bezier_parameter(u: np.ndarray, x1: np.ndarray, x2: np.ndarray,
                      used: np.ndarray) -> np.ndarray:
    """The Bezier parameter s with x(s) = u, x(s) = 3(1-s)^2 s x1 + 3(1-s) s^2 x2 + s^3.

    With the unweighted tangents (x1 = 1/3, x2 = 2/3) x(s) is s itself, so only
    the samples of weighted cubic segments (``used``) are solved, by bisection
    (x is monotone for weights in (0, 1]) to 2^-40, over those samples alone."""
    s = u.copy()
    solve = used & ((x1 != 1.0 / 3.0) | (x2 != 1.0 - 1.0 / 3.0))
    if not solve.any():
        return s
    target, a, b = u[solve], x1[solve], x2[solve]
    lo, hi = np.zeros_like(target), np.ones_like(target)
    for _ in range(40):
        mid = (lo + hi) / 2
        x = 3 * (1 - mid) ** 2 * mid * a + 3 * (1 - mid) * mid ** 2 * b + mid ** 3
        below = x < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    s[solve] = (lo + hi) / 2
    return s

def _auto_slope(pt, t, nt, pv, v, nv, wl, wr, bias, flags) -> np.ndarray:
    """Automatic tangent slope at an interior key (Maya's rule, as ufbx solves it)."""
    slope = (nv - pv) / (nt - pt)
    dependent = (flags & 0x2000) == 0
    sl = (v - pv) / (t - pt)
    sr = (nv - v) / (nt - t)
    delta = (t - pt) / (nt - pt)
    blended = slope * 0.5 + (sl * (1.0 - delta) + sr * delta) * 0.5
    bias_weight = np.abs(bias) / 100.0
    target = np.where(bias > 0.0, sr, sl)
    biased = np.where(bias_weight > 0.0001, blended * (1.0 - bias_weight) + target * bias_weight,
                      blended)
    extra = bias_weight - 5.0
    sign = np.where(np.abs(target - blended) > 0.00001, target - blended, bias)
    biased = biased + np.where(extra > 0.0, extra * extra * np.where(sign > 0, 1.0, -1.0) * 40.0,
                               0.0)
    slope = np.where(dependent, biased, slope)
    progressive = (flags & 0x4000) != 0
    ssign = np.where(slope >= 0.0, 1.0, -1.0)
    range_left, range_right = wl * (t - pt), wr * (nt - t)
    max_left = np.where(range_left > 0, ssign * (v - pv) / np.where(range_left > 0, range_left, 1),
                        0.0)
    max_right = np.where(range_right > 0, ssign * (nv - v) /
                         np.where(range_right > 0, range_right, 1), 0.0)
    max_left = np.where(max_left > 0.0, max_left, 0.0)
    max_right = np.where(max_right > 0.0, max_right, 0.0)
    clamped = ssign * np.minimum(np.minimum(ssign * slope, max_left), max_right)
    slope = np.where(progressive, clamped, slope)
    flat = ((flags & 0x1000) != 0) & (np.minimum(np.abs(pv - v), np.abs(nv - v)) <= 0.0)
    return np.where(flat, 0.0, slope)


def _one_side_slope(t0, t1, v0, v1, bias, flags) -> np.ndarray:
    """Automatic slope at the first or last key: the chord, plus the large-bias term."""
    slope = (v1 - v0) / (t1 - t0)
    extra = np.abs(bias) / 100.0 - 5.0
    slope = slope + np.where(((flags & 0x2000) == 0) & (extra > 0.0),
                             extra * extra * np.where(bias > 0, 1.0, -1.0) * 40.0, 0.0)
    slope = np.where((flags & 0x4000) != 0, 0.0, slope)
    return np.where(((flags & 0x1000) != 0) & (np.abs(v1 - v0) <= 0.0), 0.0, slope)


class _Layer:
    """How one AnimationLayer blends (see :mod:`.scene_rig`); 6.x takes are one layer."""

    def __init__(self, index: int, layer: "_Object | None", weight_curve=None) -> None:
        self.index = index
        self.weight_curve = weight_curve
        weight = layer.number("Weight", 100.0) / 100.0 if layer is not None else 1.0
        self.weight = 1.0 if not weight <= 0.99999 else max(weight, 0.0)  # NaN: full
        self.blend_mode = int(layer.number("BlendMode", 0)) if layer is not None else 1
        self.compose_rotation = layer is None or layer.number("RotationAccumulationMode", 0) == 0
        self.compose_scale = layer is None or layer.number("ScaleAccumulationMode", 0) == 0

    def weight_at(self, ticks: np.ndarray) -> Any:
        """The weight (0..1) at ``ticks``: animated only for blending modes, as in ufbx."""
        if self.weight_curve is None or self.blend_mode not in (0, 2):
            return self.weight
        w = self.weight_curve.sample(ticks) / 100.0
        return np.where(~(w <= 0.99999), 1.0, np.clip(w, 0.0, 1.0))  # NaN: full weight


class _Defaults:
    """Stands in for an AnimationCurveNode: channel defaults by ``d|X`` name."""

    def __init__(self, props: dict) -> None:
        self.props = props


def _take_keys(node: FbxNode | None) -> "_Curve | None":
    """A 6.x Key list as a curve; None when it cannot be split.

    Each key starts with its KTime (typed L), then the value and an
    interpolation char: ``C`` constant, ``L`` linear, ``U`` cubic followed by a
    tangent-mode char, the right and next-left slopes, and optionally a
    weight-mode char (``a`` both weights, ``r`` right, ``n``/``l``...) with
    its weights.
    """
    if node is None or not node.props:
        return None
    props = node.props
    starts = [i for i, (c, _) in enumerate(props) if c == "L"]
    if not starts or starts[0] != 0:
        return None
    ends = starts[1:] + [len(props)]
    n = len(starts)
    times = np.zeros(n, dtype=np.int64)
    values = np.zeros(n)
    mode = np.full(n, 0x04, dtype=np.int64)
    slopes = np.zeros((n, 2))
    weights = np.full((n, 2), 1.0 / 3.0)
    for k, (a, b) in enumerate(zip(starts, ends)):
        key = props[a:b]
        if len(key) < 2 or key[1][0] not in "DFIL":
            return None
        times[k] = key[0][1]
        values[k] = float(key[1][1])
        chars = [(i, chr(v)) for i, (c, v) in enumerate(key) if c in "CB" and 0 <= v < 256]
        if not chars:
            continue
        interp = chars[0][1]
        if interp == "C":
            mode[k] = 0x02
        elif interp == "U":
            mode[k] = 0x08
            nums = [float(v) for c, v in key[chars[0][0] + 1:] if c in "DFIL"]
            if len(nums) >= 2:
                slopes[k] = nums[:2]
            wmode = chars[2][1] if len(chars) > 2 else "n"
            if wmode == "a" and len(nums) >= 4:
                weights[k] = nums[2:4]
            elif wmode == "r" and len(nums) >= 3:
                weights[k, 0] = nums[2]
    if n > 1 and np.any(np.diff(times) <= 0):
        return None
    curve = _Curve(times, values)
    curve.mode, curve.slopes, curve.weights = mode, slopes, weights
    return curve
