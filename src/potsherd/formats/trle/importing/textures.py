"""The textures of a glTF moveable packed into TR4 texture pages (used texels only), and
the object texture records (texinfos) its polygons point at."""
from __future__ import annotations

from typing import Any

import numpy as np

from ....scene.bake_colors import linear_to_srgb, srgb_to_linear
from ....scene.ops import base_color_picture
from .. import model
from ..moveables import _pack_textures
from .base import ImportRefused, MAX_BAKED


class _Textures:
    """Texinfos with pixels: the potsherd atlas' rectangles, baked polygons and
    solid colours, in order of first use (carried rectangles first, in order)."""

    def __init__(self, scene: Any, hx: dict, like: Any) -> None:
        self.scene = scene
        self.warnings: list[str] = []
        self.items: list[dict] = []
        self.by_key: dict[tuple, int] = {}
        self.images: dict[int, np.ndarray] = {}
        self.carried: dict[tuple, int] = {}
        self.rects: list[tuple] = []     # each carried texture's atlas rectangle
        self.mirrored_quad_zero = False
        for info in hx.get("tr4_textures", []) if isinstance(hx.get("tr4_textures"), list) else []:
            x, y, w, h = (int(v) for v in info["atlas"])
            self.carried[(x, y, w, h)] = len(self.items)
            self.rects.append((x, y, w, h))
            self.items.append({"pending": (x, y, w, h), **{k: int(info[k]) for k in (
                "x", "y", "page", "flip_x", "w", "flip_y", "h")}})
        self.carried_count = len(self.items)

    def image(self, material: int | None) -> tuple[np.ndarray | None, tuple]:
        """(RGBA array or None, base colour) of a material."""
        if material is None or not 0 <= material < len(self.scene.materials):
            return None, (1.0, 1.0, 1.0, 1.0)
        mat = self.scene.materials[material]
        ref = mat.base_color_texture
        if ref is None or not 0 <= ref.image < len(self.scene.images):
            return None, tuple(mat.base_color)
        if ref.image not in self.images:
            img, pic, _ = base_color_picture(self.scene, mat)
            if pic is None and img.data:        # (undecodable; no data at all is silent)
                self.warnings.append(f"image {ref.image} could not be decoded; "
                                     "its polygons use the base colour")
            self.images[ref.image] = None if pic is None else np.asarray(pic.convert("RGBA"))
        return self.images[ref.image], tuple(mat.base_color)

    def carried_index(self, material: int | None, uv: np.ndarray) -> tuple[int, tuple] | None:
        """(texture, corner ids) when a polygon's UVs are exactly the corners of a
        carried atlas rectangle."""
        if not self.carried:
            return None
        arr, _ = self.image(material)
        if arr is None:
            return None
        h, w = arr.shape[:2]
        px = uv * [w, h]
        r = np.round(px)
        if np.abs(px - r).max() > 1e-3:
            return None
        x0, y0 = r.min(0)
        x1, y1 = r.max(0)
        k = self.carried.get((int(x0), int(y0), int(x1 - x0), int(y1 - y0)))
        if k is None:
            return None
        corners = []
        for cx, cy in r:
            corners.append({(x0, y0): 0, (x1, y0): 1, (x1, y1): 2, (x0, y1): 3}[(cx, cy)]
                           if (cx, cy) in {(x0, y0), (x1, y0), (x1, y1), (x0, y1)} else -1)
        if -1 in corners:
            return None
        self._fill(k, arr)
        return k, tuple(corners)

    def fill(self, k: int, material: int | None) -> None:
        """Carried texture ``k`` gets its pixels from ``material``'s image (when
        the polygon using it is kept as it was)."""
        arr, _ = self.image(material)
        if arr is not None and 0 <= k < self.carried_count:
            self._fill(k, arr)

    def _fill(self, k: int, arr: np.ndarray) -> None:
        item = self.items[k]
        if "pending" not in item:
            return
        x, y, w, h = item.pop("pending")
        block = np.zeros((h, w, 3), np.uint8)
        part = arr[y:y + h, x:x + w]
        rgb = part[..., :3].copy()
        rgb[part[..., 3] < 128] = (255, 0, 255)
        block[:rgb.shape[0], :rgb.shape[1]] = rgb
        item["pixels"] = model.rgb_to_bgr_bytes(block)

    def add(self, rgb: np.ndarray) -> int:
        """A new texture of these RGB pixels (identical ones shared)."""
        h, w = rgb.shape[:2]
        key = (w, h, rgb.tobytes())
        if key not in self.by_key:
            self.by_key[key] = len(self.items)
            self.items.append({"x": 0, "y": 0, "page": 0, "flip_x": -1, "w": w - 1,
                               "flip_y": -1, "h": h - 1, "pixels": model.rgb_to_bgr_bytes(rgb),
                               "new": True})
        return self.by_key[key]

    def solid(self, colour: tuple) -> int:
        key = tuple(float(c) for c in colour[:3])
        solids = self.__dict__.setdefault("solids", {})
        if key not in solids:       # (the factor is linear light; texels are sRGB)
            rgb = np.clip(np.round(linear_to_srgb(np.asarray(key, np.float64)) * 255), 0, 255)
            solids[key] = self.add(np.tile(rgb.astype(np.uint8), (4, 4, 1)))
        return solids[key]

    def bake(self, material: int | None, uv: np.ndarray) -> tuple[int, tuple]:
        """A texture holding one polygon's UV area (see :meth:`bake_many`) and the
        rectangle corners nw, ne, sw (triangles) or nw, ne, se, sw (quads) it uses."""
        corners = (0, 1, 3) if len(uv) == 3 else (0, 1, 2, 3)
        full = np.zeros((1, 4, 2))
        full[0, :len(uv)] = uv
        return self.bake_many([material], full, np.array([len(uv)]))[0], corners

    def bake_many(self, materials: list, uv: np.ndarray, corners: np.ndarray) -> list[int]:
        """Textures holding polygons' UV areas (``uv`` (n, 4, 2), triangles' last
        row unused, ``corners`` 3 or 4 each), resampled onto rectangles whose
        corners nw, ne, sw (triangles) or nw, ne, se, sw (quads) the polygons use;
        solid base colours for untextured materials.  Blocks of one material and
        size are resampled together; textures are made in the polygons' order
        (identical ones shared), so the indices are those of baking one by one."""
        n = len(materials)
        blocks: list = [None] * n
        px_all = np.zeros((n, 4, 2))
        sized = np.zeros((n, 2), np.int64)      # (tw, th) of image-baked polygons, else 0
        codes, code = material_codes(materials)
        order = np.argsort(code, kind="stable")
        bounds = np.searchsorted(code[order], np.arange(len(codes) + 1))
        solid_of: dict = {}
        for m, c0 in codes.items():
            arr, colour = self.image(m)
            if arr is None:
                solid_of[m] = colour
                continue
            rows = order[bounds[c0]:bounds[c0 + 1]]
            for c in (3, 4):
                sel = rows[corners[rows] == c]
                if len(sel):
                    self._resample(arr, colour, uv[sel, :c], c, sel, blocks, px_all, sized)
        # textures made in polygon order: each baked block, and a material's solid
        # at its first polygon (only those rows are walked)
        solid = np.asarray([m in solid_of for m in codes], bool)[code]
        srows = np.flatnonzero(solid)
        first_solid = np.zeros(n, bool)
        first_solid[srows[np.unique(code[srows], return_index=True)[1]]] = True
        out = np.zeros(n, np.int64)
        solid_index = np.zeros(len(codes), np.int64)
        mats = list(codes)
        for k in np.flatnonzero(~solid | first_solid).tolist():
            if blocks[k] is None:
                solid_index[code[k]] = self.solid(solid_of[mats[code[k]]])
            else:
                out[k] = self.add(blocks[k])
        out[solid] = solid_index[code[solid]]
        out = out.tolist()
        baked = sized[:, 0] > 0
        if baked.any():     # for the shrink warning's texel counts (see finish)
            self.__dict__.setdefault("baked", []).append(
                (px_all[baked], corners[baked], sized[baked]))
        return out

    def _resample(self, arr: np.ndarray, colour: tuple, uv: np.ndarray, c: int, rows: np.ndarray,
                  blocks: list, px_all: np.ndarray, sized: np.ndarray) -> None:
        """The blocks of ``c``-cornered polygons of one image, by nearest texel."""
        ih, iw = arr.shape[:2]
        px = uv * [iw, ih]
        px_all[rows, :c] = px

        def norm(v: np.ndarray) -> np.ndarray:
            return np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1])
        if c == 3:
            w = np.maximum(norm(px[:, 1] - px[:, 0]), 1.0)
            h = np.maximum(norm(px[:, 2] - px[:, 0]), 1.0)
        else:
            w = np.maximum(np.maximum(norm(px[:, 1] - px[:, 0]), norm(px[:, 2] - px[:, 3])), 1.0)
            h = np.maximum(np.maximum(norm(px[:, 3] - px[:, 0]), norm(px[:, 2] - px[:, 1])), 1.0)
        cw, ch = np.ceil(w), np.ceil(h)
        self.shrunk = getattr(self, "shrunk", 0) + int(((cw > MAX_BAKED) | (ch > MAX_BAKED)).sum())
        tws = np.minimum(cw, MAX_BAKED).astype(np.int64)
        ths = np.minimum(ch, MAX_BAKED).astype(np.int64)
        sized[rows, 0], sized[rows, 1] = tws, ths
        tint = np.asarray(colour[:3], np.float64)
        for tw, th in set(zip(tws.tolist(), ths.tolist())):
            same = np.flatnonzero((tws == tw) & (ths == th))
            step = max(1, (1 << 20) // (tw * th))         # bounded memory per batch
            for lo in range(0, len(same), step):
                part = same[lo:lo + step]
                p = px[part][:, :, None, None, :]        # (n, c, 1, 1, 2)
                ss, tt = np.meshgrid((np.arange(tw) + 0.5) / tw, (np.arange(th) + 0.5) / th)
                ss, tt = ss[None, ..., None], tt[None, ..., None]
                if c == 3:   # nw + s (ne - nw) + t (sw - nw)
                    src = p[:, 0] + ss * (p[:, 1] - p[:, 0]) + tt * (p[:, 2] - p[:, 0])
                else:        # bilinear over nw, ne, se, sw
                    top = p[:, 0] + ss * (p[:, 1] - p[:, 0])
                    bottom = p[:, 3] + ss * (p[:, 2] - p[:, 3])
                    src = top + tt * (bottom - top)
                xs = np.floor(src[..., 0]).astype(np.int64) % iw
                ys = np.floor(src[..., 1]).astype(np.int64) % ih
                texels = arr[ys, xs]
                rgb = texels[..., :3].astype(np.float64)
                if (tint != 1.0).any():     # the linear factor times the texel in linear light
                    rgb = linear_to_srgb(srgb_to_linear(rgb / 255.0) * tint) * 255.0
                rgb = np.clip(np.round(rgb), 0, 255).astype(np.uint8)
                rgb[texels[..., 3] < 128] = (255, 0, 255)
                for q, k in enumerate(rows[part].tolist()):
                    blocks[k] = rgb[q]

    def _texel_counts(self) -> tuple[float, float]:
        """Texels of the sources the baked polygons cover, and those their blocks
        keep, summed polygon by polygon in baking order."""
        source = kept = 0.0
        for px, corners, sized in getattr(self, "baked", []):
            for p, c, (tw, th) in zip(px, corners.tolist(), sized.tolist()):
                area = _polygon_area(p[:c])
                source += area
                kept += min(tw * th / (2.0 if c == 3 else 1.0), area)
        return source, kept

    def finish(self) -> list[dict]:
        """The texinfo list; new textures packed onto 256x256 pages after the
        carried ones (a texinfo's place is where a wad would put it)."""
        for k, item in enumerate(self.items):
            if "pending" in item:     # carried but unused: still kept, in its slot
                arr = next((a for a in self.images.values() if a is not None), None)
                if arr is None:
                    x, y, w, h = item.pop("pending")
                    item["pixels"] = bytes(3 * w * h)
                else:
                    self._fill(k, arr)
        new = [i for i, it in enumerate(self.items) if it.pop("new", False)]
        if new:
            first_page = 1 + max((it["page"] for it in self.items[:self.carried_count]),
                                 default=-1)
            places = _pack_textures([(self.items[i]["w"] + 1, self.items[i]["h"] + 1)
                                     for i in new], first_page)
            for i, (page, x, y) in zip(new, places):
                self.items[i].update(x=x, y=y, page=page)
        if getattr(self, "shrunk", 0):
            source, kept = self._texel_counts()
            lost = 1.0 - kept / source if source else 0.0
            self.warnings.append(f"{self.shrunk} polygon textures were shrunk to at most "
                                 f"{MAX_BAKED}x{MAX_BAKED} pixels: {100 * lost:.0f}% of the "
                                 f"{source:.0f} source texels the baked polygons "
                                 "cover are lost")
        if len(self.items) > 0x1000:
            raise ImportRefused(f"{len(self.items)} textures: a TR4 triangle can address "
                                "only 4096")
        return [{k: it[k] for k in ("x", "y", "page", "flip_x", "w", "flip_y", "h", "pixels")}
                for it in self.items]


def material_codes(materials: list) -> tuple[dict, np.ndarray]:
    """Each distinct material's number (in order of first use) and every item's:
    a bone mesh is mostly of one material, found without a lookup per item."""
    codes = {m: c for c, m in enumerate(dict.fromkeys(materials))}
    if len(codes) == 1:
        return codes, np.zeros(len(materials), np.int64)
    return codes, np.fromiter((codes[m] for m in materials), np.int64, len(materials))


def _polygon_area(px: np.ndarray) -> float:
    """Area of a polygon given by its corners in order (shoelace)."""
    x, y = px[:, 0], px[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2)
