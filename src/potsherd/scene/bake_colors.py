"""Vertex colours baked into a texture, for targets with textures but no colours.

glTF draws a triangle as ``baseColorFactor x texture x COLOR_0`` (the texture
sRGB-decoded, the rest linear).  A format with a texture and no vertex colours
(KO parts, plugs, shapes; Darkstar shapes) can still show that product if the
texture holds it, so :func:`bake_colors` gives each material whose primitives
have colours a new material and image (a texture other primitives use is never
edited), made by rasterising the triangles in texture space (numpy, in batches
of triangles of similar size):

* direct: the primitives' own UVs, when they stay inside one tile and no two
  triangles with different colours cover the same texel; the image is the
  texture at its size, doubled up to ``limit`` while many triangles cover no
  texel centre (a white one from 16 texels, doubled till the median triangle
  covers ``UNTEXTURED_TEXELS``);
* atlas: otherwise (no UVs, tiling, overlaps: triangles of other colours on
  one texel, also where UVs collapse to a point, as on a palette texture)
  every triangle gets its own corners and half of a grid cell, its texture
  resampled there (bilinear, the material's wrap modes); corners sit on texel
  centres, so a vertex's UV samples its own colour.  With too many triangles for
  ``limit`` the cells shrink to one texel per triangle (its mean colour).

The new material has factor 1 (it is in the texels); what detail was lost is
returned for the caller's one warning.
"""
from __future__ import annotations

import dataclasses
import io
import math
from typing import Any

import numpy as np

from .model import (CLAMP_TO_EDGE, MIRRORED_REPEAT, Image, Material, Primitive, Scene,
                    TextureRef)

__all__ = ["bake_colors", "drop_orphaned_materials", "srgb_to_linear", "linear_to_srgb",
           "lit_colors", "unit_colors", "MAX_SIDE"]

#: the largest side of a baked texture (what the KO atlas and most old engines take)
MAX_SIDE = 2048
#: texels a side of an atlas cell (two triangles) for an untextured material
CELL = 8
#: texels the median triangle covers on a baked white texture (its side doubles till then)
UNTEXTURED_TEXELS = 32.0
#: samples handled at once by the rasteriser (its temporaries stay near 60 MB)
CHUNK = 1 << 19
#: two texels differing by more than this (sRGB, 0..1) under overlapping triangles conflict
CONFLICT = 2.5 / 255


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """sRGB-encoded values (0..1) as linear light (IEC 61966-2-1)."""
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c: np.ndarray) -> np.ndarray:
    """Linear light (clipped to 0..1) sRGB-encoded."""
    c = np.clip(np.asarray(c, np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)


def unit_colors(c: Any) -> np.ndarray:
    """Colours as float64 in their stored scale: glTF's normalised integers
    (uint8/uint16, as Blender and gltf-transform quantize them) divided by
    their type's range, floats kept."""
    a = np.asarray(c)
    if a.dtype.kind in "ui":
        return a.astype(np.float64) / float(np.iinfo(a.dtype).max)
    return np.asarray(a, np.float64)


def lit_colors(values: Any) -> np.ndarray:
    """Vertex light or colour the game multiplied in display space (every
    fixed-function engine here: TR shades and room light, Darkstar light maps,
    D3D diffuse words) as glTF's COLOR_0, which is linear light: float32 rows,
    RGB sRGB-decoded, a fourth column (alpha, never gamma-encoded) kept.
    ``values``: floats in 0..1, or uint8/uint16 normalised.  Float32, not 16-bit
    integers: those would merge the darkest of 8,192 TR shades."""
    a = unit_colors(values)
    out = a.copy()
    out[..., :3] = srgb_to_linear(np.clip(a[..., :3], 0.0, 1.0))
    return out.astype(np.float32)


_LUT = None


def encode(c: np.ndarray) -> np.ndarray:
    """:func:`linear_to_srgb` by a 65536-entry table (float32; under 0.06 of an
    8-bit level from the formula), for whole images."""
    global _LUT
    if _LUT is None:
        _LUT = linear_to_srgb(np.linspace(0.0, 1.0, 65536)).astype(np.float32)
    i = np.rint(np.clip(c, 0.0, 1.0) * np.float32(65535)).astype(np.int32)
    return _LUT[i]


def _colours(p: Primitive) -> np.ndarray:
    """COLOR_0 as linear RGBA floats (N, 4)."""
    c = np.clip(np.nan_to_num(unit_colors(p.colors), nan=1.0), 0.0, 1.0)
    if c.shape[1] == 3:
        c = np.concatenate([c, np.ones((len(c), 1))], axis=1)
    return c[:, :4]


def _triangles(p: Primitive) -> np.ndarray:
    n = len(p.positions)
    idx = np.arange(n, dtype=np.int64) if p.indices is None else \
        np.asarray(p.indices, dtype=np.int64).reshape(-1)
    return idx[:len(idx) - len(idx) % 3].reshape(-1, 3)


def _picture(scene: Scene, mat: Material | None, limit: int) -> tuple:
    """(linear RGBA float32 (H, W, 4) or None, problem or None) of the base colour
    texture, reduced by a whole factor to at most ``limit`` a side."""
    from .ops import base_color_picture
    img, pic, problem = base_color_picture(scene, mat)
    if img is None:
        return None, None
    if pic is None:
        return None, problem or "cannot be read"
    pic = pic.convert("RGBA")
    if max(pic.size) > limit:
        pic = pic.reduce(-(-max(pic.size) // limit))
    a = np.asarray(pic, np.float32) / np.float32(255)
    a[..., :3] = srgb_to_linear(a[..., :3]).astype(np.float32)
    return a, None


# ---- rasterising --------------------------------------------------------------------

def _pow2(n: np.ndarray) -> np.ndarray:
    return np.left_shift(1, np.ceil(np.log2(np.maximum(n, 1))).astype(np.int64))


def raster(xy: np.ndarray, width: int, height: int, strict: float = 0.0):
    """Yield (triangle ids, texel x, texel y, barycentrics (n, 3)) of every
    texel centre inside a triangle of ``xy`` (T, 3, 2), in texel units; the
    triangles are batched by bounding-box size, so no loop runs per triangle.
    ``strict`` > 0 keeps only centres that far inside (in barycentric units)."""
    xy = np.asarray(xy, np.float64)
    a, b, c = xy[:, 0], xy[:, 1], xy[:, 2]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
    good = np.abs(det) > 1e-12
    lo = np.ceil(xy.min(axis=1) - 0.5).astype(np.int64)
    hi = np.floor(xy.max(axis=1) - 0.5).astype(np.int64)
    lo = np.maximum(lo, 0)
    hi = np.minimum(hi, [width - 1, height - 1])
    size = hi - lo + 1
    good &= (size > 0).all(axis=1)
    ids = np.flatnonzero(good)
    if not len(ids):
        return
    bw, bh = _pow2(size[ids, 0]), _pow2(size[ids, 1])
    key = bw * (1 << 32) + bh
    order = np.argsort(key, kind="stable")
    ids, key = ids[order], key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    eps = -1e-9 if strict <= 0 else strict
    for s, e in zip(starts, ends):
        kw, kh = int(key[s] >> 32), int(key[s] & 0xFFFFFFFF)
        per = max(1, CHUNK // (kw * kh))
        ox, oy = np.arange(kw), np.arange(kh)
        for q in range(s, e, per):
            t = ids[q:q + per]
            gx = lo[t, 0][:, None, None] + ox[None, None, :]
            gy = lo[t, 1][:, None, None] + oy[None, :, None]
            px, py = gx + 0.5, gy + 0.5
            ax, ay = a[t, 0][:, None, None], a[t, 1][:, None, None]
            inv = 1.0 / det[t][:, None, None]
            l1 = ((px - ax) * (c[t, 1] - a[t, 1])[:, None, None]
                  - (c[t, 0] - a[t, 0])[:, None, None] * (py - ay)) * inv
            l2 = ((b[t, 0] - a[t, 0])[:, None, None] * (py - ay)
                  - (px - ax) * (b[t, 1] - a[t, 1])[:, None, None]) * inv
            l0 = 1.0 - l1 - l2
            inside = (l0 >= eps) & (l1 >= eps) & (l2 >= eps) & \
                (gx <= hi[t, 0][:, None, None]) & (gy <= hi[t, 1][:, None, None])
            ti, yi, xi = np.nonzero(inside)
            yield (t[ti], gx[ti, 0, xi], gy[ti, yi, 0],
                   np.stack([l0[inside], l1[inside], l2[inside]], axis=1))


def wrap_index(i: np.ndarray, n: int, mode: int) -> np.ndarray:
    """Texel indices ``i`` on an axis of ``n`` texels through a glTF wrap mode."""
    if mode == CLAMP_TO_EDGE:
        return np.clip(i, 0, n - 1)
    if mode == MIRRORED_REPEAT:
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    return np.mod(i, n)


def sample(tex: np.ndarray, uv: np.ndarray, wrap_s: int, wrap_t: int) -> np.ndarray:
    """Bilinear samples of ``tex`` (H, W, C) at ``uv`` (n, 2), glTF's origin top-left."""
    h, w = tex.shape[:2]
    x = np.nan_to_num(uv[:, 0] * w - 0.5)
    y = np.nan_to_num(uv[:, 1] * h - 0.5)
    x0, y0 = np.floor(x), np.floor(y)
    fx = (x - x0)[:, None].astype(np.float32)
    fy = (y - y0)[:, None].astype(np.float32)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    xa, xb = wrap_index(x0, w, wrap_s), wrap_index(x0 + 1, w, wrap_s)
    ya, yb = wrap_index(y0, h, wrap_t), wrap_index(y0 + 1, h, wrap_t)
    return ((tex[ya, xa] * (1 - fx) + tex[ya, xb] * fx) * (1 - fy)
            + (tex[yb, xa] * (1 - fx) + tex[yb, xb] * fx) * fy)


def _dilate(img: np.ndarray, done: np.ndarray, passes: int = 2) -> None:
    """Spread covered texels into the uncovered ones beside them (in place), so
    filtering at a triangle's edge does not pull in texels it never drew; only
    the texels on the border are gathered."""
    h, w = done.shape
    steps = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx]
    for _ in range(passes):
        near = np.zeros((h, w), np.uint8)
        for dy, dx in steps:
            near[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] += \
                done[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
        ys, xs = np.nonzero(~done & (near > 0))
        if not len(ys):
            return
        total = np.zeros((len(ys), img.shape[2]), np.float32)
        for dy, dx in steps:
            y, x = ys - dy, xs - dx
            ok = (y >= 0) & (y < h) & (x >= 0) & (x < w)
            y, x = np.where(ok, y, 0), np.where(ok, x, 0)
            total += img[y, x] * (ok & done[y, x])[:, None]
        img[ys, xs] = total / near[ys, xs][:, None]
        done[ys, xs] = True


# ---- one material's coloured primitives ---------------------------------------------

@dataclasses.dataclass
class _Part:
    prim: Primitive
    tris: np.ndarray                 # (T, 3) vertex indices
    colours: np.ndarray              # (N, 4) linear
    uv: Any                          # (N, 2) float64 or None


def _direct(parts: list, tex: Any, factor: np.ndarray, limit: int, notes: dict) -> Any:
    """The image baked on the parts' own UVs, or None when they cannot carry it
    (``notes['why']`` says why)."""
    uvs = np.concatenate([p.uv[p.tris] for p in parts])           # (T, 3, 2)
    cols = np.concatenate([p.colours[p.tris] for p in parts])     # (T, 3, 4)
    if not np.isfinite(uvs).all() or uvs.min() < -1e-6 or uvs.max() > 1 + 1e-6:
        notes["why"] = "UVs outside 0..1 (tiling)"
        return None
    h, w = tex.shape[:2] if tex is not None else (16, 16)
    area = 0.5 * np.abs((uvs[:, 1, 0] - uvs[:, 0, 0]) * (uvs[:, 2, 1] - uvs[:, 0, 1])
                        - (uvs[:, 2, 0] - uvs[:, 0, 0]) * (uvs[:, 1, 1] - uvs[:, 0, 1]))
    flat = (np.ptp(cols, axis=1).max(axis=1) <= CONFLICT)        # one colour: any texel shows it
    scale = 1
    # a texture keeps its own resolution unless triangles miss texels; a white one
    # grows until a triangle covers a few 4x4 blocks (DXT) or the limit
    # (UV points, triangles without area, need no more texels)
    want = 1.0 if tex is not None else UNTEXTURED_TEXELS
    sized = area[area > 1e-12]
    while len(sized) and (np.mean(sized * w * h * scale * scale < 1.0) > 0.01 or
                          np.median(sized) * w * h * scale * scale < want) \
            and max(w, h) * scale * 2 <= limit:
        scale *= 2
    w, h = w * scale, h * scale
    base = None if tex is None else np.repeat(np.repeat(tex, scale, axis=0), scale, axis=1)
    factor = factor.astype(np.float32)
    xy = uvs * [w, h]
    hit = np.zeros(len(uvs), bool)
    at, vals, inner, point = [], [], [], []
    for t, tx, ty, bary in raster(xy, w, h):
        c = np.einsum("nk,nkc->nc", bary, cols[t]).astype(np.float32)
        at.append(ty * w + tx)
        vals.append(factor * c if base is None else factor * base[ty, tx] * c)
        inner.append((bary > 1e-3).all(axis=1))
        point.append(np.zeros(len(t), bool))
        hit[t] = True
    # a triangle between texel centres (or without area: a palette texture's UV
    # point) is its texel's, at its centroid: averaged in, and without area it
    # takes part in the conflicts (triangles of other colours on that texel)
    miss = np.flatnonzero(~hit)
    if len(miss):
        cen = uvs[miss].mean(axis=1) * [w, h]
        tx = np.clip(np.floor(cen[:, 0]), 0, w - 1).astype(np.int64)
        ty = np.clip(np.floor(cen[:, 1]), 0, h - 1).astype(np.int64)
        c = cols[miss].mean(axis=1).astype(np.float32)
        at.append(ty * w + tx)
        vals.append(factor * c if base is None else factor * base[ty, tx] * c)
        inner.append(area[miss] * w * h <= 1e-9)
        point.append(inner[-1])
    at = np.concatenate(at) if at else np.zeros(0, np.int64)
    point = np.concatenate(point) if point else np.zeros(0, bool)
    vals = np.concatenate(vals) if vals else np.zeros((0, 4), np.float32)
    inner = np.concatenate(inner) if inner else np.zeros(0, bool)
    count = np.bincount(at, minlength=h * w).astype(np.float64)
    # conflicts: texels well inside several triangles that disagree
    ii = np.flatnonzero(inner)
    ii = ii[np.bincount(at[ii], minlength=h * w)[at[ii]] > 1]     # (texels under several)
    order = ii[np.argsort(at[ii], kind="stable")]
    clash, pinned = 0, False
    if len(order):
        key = at[order]
        enc = encode(vals[order, :3])
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        spread = (np.maximum.reduceat(enc, starts, axis=0)
                  - np.minimum.reduceat(enc, starts, axis=0)).max(axis=1)
        clash = int((spread > CONFLICT).sum())
        # a triangle without area on a clashing texel has nowhere else to show
        points = np.maximum.reduceat(point[order].astype(np.int8), starts) > 0
        pinned = bool((points & (spread > CONFLICT)).any())
    if pinned or clash > max(2, 0.002 * int((count > 0).sum())):
        notes["why"] = f"UVs overlapping with different colours ({clash} texels)"
        return None
    missed = int((~hit & ~flat & (area * w * h > 1e-9)).sum())
    if missed:
        notes["small"] = notes.get("small", 0) + missed
    out = (np.broadcast_to(factor, (h, w, 4)) if base is None else factor * base
           ).astype(np.float32).reshape(-1, 4)
    done = count > 0
    for k in range(4):
        out[done, k] = np.bincount(at, vals[:, k], minlength=h * w)[done] / count[done]
    out = out.reshape(h, w, 4)
    _dilate(out, done.reshape(h, w))
    return out, None


def _atlas(parts: list, tex: Any, ref: Any, factor: np.ndarray, limit: int, notes: dict):
    """The image of an atlas with a half cell per triangle, and each part's new
    (corner UVs (T*3, 2))."""
    tris = sum(len(p.tris) for p in parts)
    cells = max(1, (tris + 1) // 2)
    n = math.ceil(math.sqrt(cells))
    want = CELL
    if tex is not None:
        # a cell of about the texels the triangle covers in its own texture
        fp = []
        th, tw = tex.shape[:2]
        for p in parts:
            if p.uv is not None:
                u = p.uv[p.tris]
                fp.append(0.5 * np.abs((u[:, 1, 0] - u[:, 0, 0]) * (u[:, 2, 1] - u[:, 0, 1])
                                       - (u[:, 2, 0] - u[:, 0, 0]) * (u[:, 1, 1] - u[:, 0, 1]))
                          * tw * th)
        if fp:
            want = int(np.clip(math.ceil(math.sqrt(2 * np.percentile(np.concatenate(fp), 90)))
                               + 2, CELL, 128))
    side = int(min(limit, 1 << max(0, math.ceil(math.log2(n * want)))))
    k = side // n
    if k < 3:                          # one texel per triangle: its mean colour
        n = math.ceil(math.sqrt(tris))
        if n > limit:
            return None
        side = int(min(limit, 1 << max(0, math.ceil(math.log2(n)))))
        notes["flat"] = notes.get("flat", 0) + tris
        k = 1
    elif k < want:
        notes["shrunk"] = (k, want)
    width = height = side
    out = np.zeros((height, width, 4), np.float32)
    done = np.zeros((height, width), bool)
    all_xy = np.zeros((tris, 3, 2))
    t0 = 0
    j = np.arange(tris)
    if k == 1:
        cx, cy = j % n, j // n
        all_xy[:] = np.stack([cx + 0.5, cy + 0.5], axis=1)[:, None, :]
    else:
        cell = j // 2
        cx, cy = (cell % n) * k, (cell // n) * k
        m, d = 0.5, 1.0
        a_tri = np.array([[m, m], [k - m - d, m], [m, k - m - d]])
        b_tri = np.array([[k - m, k - m], [m + d, k - m], [k - m, m + d]])
        local = np.where((j % 2 == 0)[:, None, None], a_tri[None], b_tri[None])
        all_xy = local + np.stack([cx, cy], axis=1)[:, None, :]
    # per triangle: its corner colours and source UVs
    cols = np.concatenate([p.colours[p.tris] for p in parts])
    src = np.concatenate([(p.uv[p.tris] if p.uv is not None else np.zeros((len(p.tris), 3, 2)))
                          for p in parts])
    ws, wt = (ref.wrap_s, ref.wrap_t) if ref is not None else (CLAMP_TO_EDGE, CLAMP_TO_EDGE)
    if k == 1:
        c = cols.mean(axis=1)
        v = factor * c
        if tex is not None:
            v = v * sample(tex, src.mean(axis=1), ws, wt)
        ix, iy = j % n, j // n
        out[iy, ix] = v
        done[iy, ix] = True
    else:
        for t, tx, ty, bary in raster(all_xy, width, height):
            c = np.einsum("nk,nkc->nc", bary, cols[t])
            v = factor * c
            if tex is not None:
                v = v * sample(tex, np.einsum("nk,nkc->nc", bary, src[t]), ws, wt)
            out[ty, tx] = v
            done[ty, tx] = True
    _dilate(out, done)
    uv = (all_xy / [width, height]).reshape(-1, 2)
    news = []
    for p in parts:
        news.append(uv[t0 * 3:(t0 + len(p.tris)) * 3])
        t0 += len(p.tris)
    return out, news


def _png(rgba_linear: np.ndarray, opaque: bool) -> bytes:
    from PIL import Image as PILImage
    enc = np.empty(rgba_linear.shape, np.float32)
    enc[..., :3] = encode(rgba_linear[..., :3])
    enc[..., 3] = 1.0 if opaque else np.clip(rgba_linear[..., 3], 0, 1)
    a = np.rint(enc * np.float32(255)).astype(np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(a, "RGBA").save(buf, "PNG", compress_level=1)   # (importers re-encode it)
    return buf.getvalue()


def bake_colors(scene: Scene, *, drop_extras: tuple = (), limit: int = MAX_SIDE,
                keep: Any = None) -> tuple:
    """(scene, notes): ``scene`` with every triangle primitive's COLOR_0 baked
    into a new base colour texture of a new material (module docstring), and
    colours removed; ``notes`` counts what was baked and lost (``primitives``,
    ``white``: primitives whose colours are all white, simply dropped,
    ``atlas``: reasons, ``small``, ``flat``, ``shrunk``, ``dropped``: primitives
    whose texture could not be read).  ``drop_extras``: the material extras
    naming the old texture, which the new material must not carry; ``keep``: a
    test of a primitive whose colours the format holds (left as they are).  The
    given scene is not changed (the result has new lists)."""
    from .ops import _rows
    groups: dict = {}
    white = []
    for mi, mesh in enumerate(scene.meshes):
        for pi, p in enumerate(mesh.primitives):
            if keep is not None and keep(p):
                continue
            c = None if p.colors is None else np.asarray(p.colors)
            if p.mode == 4 and c is not None and c.ndim == 2 and c.shape[1] in (3, 4) and \
                    p.positions is not None and 0 < len(p.positions) == len(c):
                if (_colours(p) >= 1 - 0.5 / 255).all():
                    white.append((mi, pi))          # x 1 changes nothing: no texture needed
                    continue
                m = p.material if p.material is not None and \
                    0 <= p.material < len(scene.materials) else None
                groups.setdefault(m, []).append((mi, pi))
    notes: dict = {"primitives": 0, "atlas": {}, "dropped": 0, "white": len(white)}
    if not groups and not white:
        return scene, notes
    materials, images = list(scene.materials), list(scene.images)
    prims = [list(m.primitives) for m in scene.meshes]
    for mi, pi in white:
        prims[mi][pi] = dataclasses.replace(prims[mi][pi], colors=None)
    for m, members in groups.items():
        mat = scene.materials[m] if m is not None else Material(name="vertex colours")
        tex, problem = _picture(scene, mat, limit)
        if problem is not None:
            notes["dropped"] += len(members)
            for mi, pi in members:
                prims[mi][pi] = dataclasses.replace(prims[mi][pi], colors=None)
            continue
        ref = mat.base_color_texture
        slot = ref.texcoord if ref is not None else 0
        parts = []
        for mi, pi in members:
            p = prims[mi][pi]
            tris = _triangles(p)
            n = len(p.positions)
            if tris.size and (tris.min() < 0 or tris.max() >= n):
                tris = np.zeros((0, 3), np.int64)    # (the importer refuses such indices)
            uv = np.asarray(p.uvs[slot], np.float64) if slot < len(p.uvs) and \
                p.uvs[slot] is not None and len(p.uvs[slot]) == n else None
            parts.append(_Part(p, tris, _colours(p), uv))
        if not sum(len(p.tris) for p in parts):
            continue                        # (nothing drawn: the colours go with the importer)
        factor = np.ones(4)
        given = np.nan_to_num(np.asarray(mat.base_color, np.float64).ravel()[:4], nan=1.0)
        factor[:len(given)] = np.clip(given, 0.0, 1.0)
        opaque = mat.alpha_mode == "OPAQUE"
        local: dict = {}
        got = None
        if all(p.uv is not None for p in parts):
            got = _direct(parts, tex, factor, limit, local)
        else:
            local["why"] = "no UVs"
        atlas = got is None
        if atlas:
            got = _atlas(parts, tex, ref, factor, limit, local)
            if got is None:
                notes["dropped"] += len(members)
                for mi, pi in members:
                    prims[mi][pi] = dataclasses.replace(prims[mi][pi], colors=None)
                continue
            why = local.get("why", "")
            notes["atlas"][why] = notes["atlas"].get(why, 0) + len(members)
        for key in ("small", "flat"):
            notes[key] = notes.get(key, 0) + local.get(key, 0)
        if "shrunk" in local:
            notes["shrunk"] = local["shrunk"]
        img, new_uvs = got
        image = len(images)
        # (marked: a writer that block-compresses textures keeps a bake lossless,
        # since its smooth two-way gradients are what block compression loses)
        images.append(Image(name=f"{mat.name or 'material'}_vcol", data=_png(img, opaque),
                            extras={"baked": "vertex colours"}))
        sampler = {} if ref is None or atlas else \
            {"wrap_s": ref.wrap_s, "wrap_t": ref.wrap_t, "mag_filter": ref.mag_filter,
             "min_filter": ref.min_filter}
        if atlas:
            sampler = {"wrap_s": CLAMP_TO_EDGE, "wrap_t": CLAMP_TO_EDGE}
        new_ref = TextureRef(image=image, texcoord=0 if atlas else slot, **sampler)
        extras = {k: v for k, v in mat.extras.items() if k not in drop_extras}
        materials.append(dataclasses.replace(
            mat, name=f"{mat.name or 'material'} (vertex colours)", extras=extras,
            base_color=(1.0, 1.0, 1.0, 1.0), base_color_texture=new_ref))
        new_mat = len(materials) - 1
        for k, (mi, pi) in enumerate(members):
            part = parts[k]
            if atlas:
                corners = _rows(part.prim, part.tris.reshape(-1),
                                np.arange(part.tris.size, dtype=np.uint32))
                uvs = list(corners.uvs)
                uv = new_uvs[k].astype(np.float32)
                if uvs:
                    uvs[0] = uv
                else:
                    uvs = [uv]
                p = dataclasses.replace(corners, uvs=uvs, colors=None, material=new_mat)
            else:
                p = dataclasses.replace(part.prim, colors=None, material=new_mat)
            prims[mi][pi] = p
        notes["primitives"] += len(members)
    meshes = [dataclasses.replace(mesh, primitives=prims[i]) if any(
        a is not b for a, b in zip(prims[i], mesh.primitives)) else mesh
        for i, mesh in enumerate(scene.meshes)]
    return dataclasses.replace(scene, meshes=meshes, materials=materials, images=images), notes


def _used_materials(scene: Scene) -> set:
    return {p.material for m in scene.meshes for p in m.primitives if p.material is not None}


def drop_orphaned_materials(before: Scene, after: Scene) -> Scene:
    """``after`` (``before`` with its colours baked) without the materials that
    primitives of ``before`` used and none of ``after`` does: those the bake
    replaced by their "(vertex colours)" copies everywhere.  A target whose
    material list is written from the scene's then lists (and writes the
    texture of) only what the model uses; materials that nothing used before
    the bake stay, and the primitives' indices follow the shortened list."""
    orphans = _used_materials(before) - _used_materials(after)
    orphans = {i for i in orphans if 0 <= i < len(after.materials)}
    if not orphans:
        return after
    keep = [i for i in range(len(after.materials)) if i not in orphans]
    new_index = {old: new for new, old in enumerate(keep)}

    def moved(p: Primitive) -> Primitive:
        if p.material is None or p.material not in new_index:
            return p
        return dataclasses.replace(p, material=new_index[p.material])
    meshes = [dataclasses.replace(m, primitives=[moved(p) for p in m.primitives])
              for m in after.meshes]
    return dataclasses.replace(after, meshes=meshes, materials=[after.materials[i] for i in keep])
