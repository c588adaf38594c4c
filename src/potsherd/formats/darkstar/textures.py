"""Phoenix bitmaps to and from RGBA images, palette lookup in a game tree, and
the material textures of Darkstar shapes and interiors.

Which palette draws a bitmap is the game's choice (per world), not the
bitmap's: a bitmap only carries a palette index (``PiDX``).  So a palette is
either named (``palette=FILE``, a ``.ppl``/``.pal`` file or ``ARCHIVE::member``)
or the first one found in the bitmap's game tree (:func:`find_palettes`), and
the choice is always reported.  Within a multi-palette PL98 file the palette
whose index equals the bitmap's is used, else the file's first palette.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from functools import lru_cache
from typing import Any, Iterable

import numpy as np

from ...core.errors import FormatError, ValueFormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from ...registry import Option
from ...resolve import Confinement, Listings, is_regular_file, read_bounded, read_spec
from .phoenix import (BMA_ADDITIVE, BMA_TRANSLUCENT, BMA_TRANSPARENT, bitmap_field, bitmap_head,
                      mip_levels, palette_colors)

PALETTE_EXTS = (".ppl", ".pal")
BITMAP_EXTS = (".bmp",)
ARCHIVE_EXTS = (".vol",)
#: folders above a file searched for its game tree
TREE_LEVELS = 2
#: files looked at in one tree (a bound on work for huge folders)
MAX_TREE_FILES = 20000


# ----------------------------------------------------------------------------
# finding files in a game tree (folders and the volumes in them)


def tree_root(path: str) -> str:
    """The game tree of a file: its folder's parent when the file sits in a
    volume-named folder or beside volumes, else its own folder."""
    folder = os.path.dirname(os.path.abspath(path.split("::")[0]))
    if "::" in path:  # a member: the archive's folder is the tree
        return folder
    if folder.lower().endswith(ARCHIVE_EXTS):
        return os.path.dirname(folder)
    return folder


def _tree_listing(root: str, limits: Limits = DEFAULT_LIMITS) -> tuple[tuple[str, str], ...]:
    """The listing of a tree (files and volume members, through the shared
    resolver's walker), cached while the tree's top folders are unchanged."""
    try:
        stamp = tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size)
                             for e in os.scandir(root)))
        stamp += ((".", os.stat(root).st_mtime_ns, 0),)
    except OSError:
        return ()
    return _tree_listing_at(root, stamp, limits)


@lru_cache(maxsize=32)
def _tree_listing_at(root: str, stamp: tuple, limits: Limits) -> tuple[tuple[str, str], ...]:
    """(lower-case base name, path or ARCHIVE::member) of every file under
    ``root`` and of every member of the volumes there, sorted by path."""
    def members(path: str) -> list[str]:
        return _archive_members(path, limits) if path.lower().endswith(ARCHIVE_EXTS) else []
    return Listings(MAX_TREE_FILES).tree(Path(root), members)


def _archive_members(path: str, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """A volume's member names (read and decoded within ``limits``; none when
    it does not decode)."""
    from ... import registry
    try:   # (listed below a root: opened without blocking, regular files only)
        doc = registry.decode(read_bounded(path, limits), path=path, limits=limits)
        return doc.codec.member_names(doc) if hasattr(doc.codec, "member_names") else []
    except (FormatError, OSError):
        return []


def find_in_tree(name: str, roots: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> str | None:
    """A file named ``name`` (case-insensitive) in the first root that has it."""
    want = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    roots = [r for r in roots if r]
    inside = Confinement(roots, limits)
    for root in roots:
        if not os.path.isdir(root):
            continue
        for base, p in _tree_listing(os.path.abspath(root), limits):
            if base == want and inside.allowed(p.split("::")[0]) and \
                    is_regular_file(Path(p.split("::")[0])):
                return p
    return None


def find_palettes(roots: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> list[str]:
    out = []
    for root in roots:
        if root and os.path.isdir(root):
            inside = Confinement([root], limits)   # (a link leaving the tree is not one)
            out.extend(p for base, p in _tree_listing(os.path.abspath(root), limits)
                       if base.endswith(PALETTE_EXTS) and inside.allowed(p.split("::")[0])
                       and is_regular_file(Path(p.split("::")[0])))
    return out


def search_roots(path: str, data_root: str | None = None) -> list[str]:
    """Where a file's references are looked for: beside it, its game tree,
    then ``--data-root``."""
    here = os.path.dirname(os.path.abspath(path.split("::")[0]))
    roots = [here, tree_root(path)]
    if data_root:
        roots.append(data_root)
    seen, out = set(), []
    for r in roots:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


# ----------------------------------------------------------------------------
# palettes


def load_palette_doc(spec: str, limits: Limits | None = None, found: bool = False):
    """A decoded palette file, read and decoded within ``limits`` (cached while
    the file on disk is unchanged); ``found``: found in a tree, not named by
    the user (read by the rule for referenced files)."""
    try:
        st = os.stat(spec.split("::")[0])
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    return _load_palette_doc(spec, stamp, limits or DEFAULT_LIMITS, found)


@lru_cache(maxsize=16)
def _load_palette_doc(spec: str, stamp: tuple | None, limits: Limits, found: bool = False):
    from ... import registry
    from ...containers import read_input
    if found:   # found in a game tree: the rule for referenced files
        data = read_spec(spec, Confinement([os.path.dirname(spec.split("::")[0])], limits))
    else:       # named by the user
        data = read_input(spec, limits)
    doc = registry.decode(data, path=spec, limits=limits)
    if doc.format not in ("pl98", "riffpal"):
        raise FormatError(f"{spec}: a {doc.format} file is not a palette")
    return doc


def choose_palette(path: str, palette: str = "", data_root: str | None = None,
                   limits: Limits = DEFAULT_LIMITS) -> str:
    """The palette file to use for a bitmap or shape at ``path``."""
    if palette:
        return palette
    found = find_palettes(search_roots(path, data_root), limits)
    if not found:
        raise FormatError(f"{path}: no palette (.ppl/.pal) found in its game tree; "
                          f"name one with --option palette=FILE")
    return found[0]


# ----------------------------------------------------------------------------
# bitmap -> image


def bitmap_rgba(bm: dict, colors: np.ndarray, level: int = 0) -> np.ndarray:
    """(h, w, 4) uint8 RGBA of one mip level: colours through the palette;
    index 0 clear when the bitmap is transparent, half alpha when translucent."""
    levels = mip_levels(bm)
    idx = levels[min(level, len(levels) - 1)]
    rgba = np.empty(idx.shape + (4,), np.uint8)
    rgba[..., :3] = colors[idx]
    attr = bitmap_head(bm)["attribute"]
    rgba[..., 3] = 255
    if attr & (BMA_TRANSLUCENT | BMA_ADDITIVE):
        rgba[..., 3] = 128
    if attr & BMA_TRANSPARENT:
        rgba[..., 3][idx == 0] = 0
    return rgba


def bitmap_image(bm: dict, colors: np.ndarray, level: int = 0):
    from PIL import Image
    return Image.fromarray(bitmap_rgba(bm, colors, level), "RGBA")


def embedded_palette(bm: dict):
    """A bitmap's own palette (a ``RIFF`` chunk) as a palette document, or None."""
    from ...document import Document
    for c in bm["chunks"]:
        if "palette" in c:
            return Document("riffpal", c["palette"], {}, b"", [])
    return None


def palette_for_bitmap(bm: dict, palette_doc) -> np.ndarray:
    index = bitmap_field(bm, "paletteIndex")
    return palette_colors(palette_doc, index)


def bitmap_textures(doc, *, palette: str = "", mips: bool = False, data_root: str = "",
                    **_: Any) -> list:
    """``potsherd textures`` for PBMP / PBMA documents."""
    src = doc.source or "bitmap"
    own = embedded_palette(doc.root) if doc.format == "pbmp" else None
    if own is not None and not palette:
        spec, pdoc = "its own RIFF chunk", own
    else:
        spec = choose_palette(src, palette, data_root or None, doc.limits)
        pdoc = load_palette_doc(spec, doc.limits, found=not palette)
    print(f"info  {src}: palette {spec}", file=sys.stderr)  # the choice is always said
    stem = os.path.splitext(os.path.basename(src.split("::")[-1]))[0]
    bitmaps = ([doc.root] if doc.format == "pbmp"
               else [c["bitmap"] for c in doc.root["chunks"] if "bitmap" in c])
    out = []
    for i, bm in enumerate(bitmaps):
        colors = palette_for_bitmap(bm, pdoc)
        name = stem if doc.format == "pbmp" else f"{stem}_{i:03d}"
        levels = len(mip_levels(bm)) if mips else 1
        for lv in range(levels):
            out.append((name if lv == 0 else f"{name}_mip{lv}", bitmap_image(bm, colors, lv)))
    return out


# ----------------------------------------------------------------------------
# image -> bitmap (for importers)


def quantize(rgb: np.ndarray, colors: np.ndarray, *, dither: bool = False) -> np.ndarray:
    """Palette indices of an (h, w, 3) uint8 image: the nearest palette colour
    (squared RGB distance, lowest index on ties), or Floyd-Steinberg dithering
    through Pillow's quantiser."""
    rgb = np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)
    if dither:
        from PIL import Image
        pal = Image.new("P", (1, 1))
        pal.putpalette(colors.astype(np.uint8).reshape(-1).tolist())
        img = Image.fromarray(rgb, "RGB").quantize(palette=pal, dither=Image.Dither.FLOYDSTEINBERG)
        return np.asarray(img, dtype=np.uint8)
    flat = rgb.reshape(-1, 3)
    keys = (flat[:, 0].astype(np.uint32) << 16) | (flat[:, 1].astype(np.uint32) << 8) | flat[:, 2]
    uniq, inverse = np.unique(keys, return_inverse=True)
    u = np.stack([(uniq >> 16) & 255, (uniq >> 8) & 255, uniq & 255], axis=1).astype(np.int32)
    pal = colors.astype(np.int32)
    best = np.empty(len(u), np.uint8)
    for start in range(0, len(u), 4096):  # blocks of 4096 colours x 256 entries
        d = ((u[start:start + 4096, None, :] - pal[None, :, :]) ** 2).sum(axis=2)
        best[start:start + 4096] = d.argmin(axis=1)
    return best[inverse].reshape(rgb.shape[:2])


def image_to_bitmap(image, colors: np.ndarray, *, dither: bool = False, mips: int = 1,
                    attribute: int = 0, palette_index: int = 0xFFFFFFFF,
                    embed_palette: bool = False) -> bytes:
    """A PBMP file of an image (a PIL image or (h, w, 3|4) array) drawn with
    ``colors`` (256, 3): 8-bit rows padded to 4 bytes, ``mips`` levels (each a
    half-size box-filtered copy, quantised the same way), the chunks the engine
    writes (head, data, DETL, PiDX)."""
    from .phoenix import BMP
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueFormatError("expected an RGB or RGBA image")
    h, w = arr.shape[:2]
    if not (1 <= w <= 4096 and 1 <= h <= 4096):
        raise ValueFormatError(f"image of {w}x{h} pixels; bitmaps are 1..4096 wide and high")
    stride = (w + 3) & ~3
    level0 = np.zeros((h, stride), np.uint8)
    level0[:, :w] = quantize(arr[..., :3], colors, dither=dither)
    parts = [level0.reshape(-1)]
    cur = arr[..., :3].astype(np.float32)
    mips = max(1, min(int(mips), 9))
    made = 1
    for i in range(1, mips):
        lh, lw = h >> i, w >> i
        if lh < 1 or lw < 1:
            break
        ch, cw = cur.shape[:2]
        cur = cur[:ch - ch % 2, :cw - cw % 2].reshape(ch // 2, 2, cw // 2, 2, 3).mean(axis=(1, 3))
        parts.append(quantize(np.rint(cur).astype(np.uint8), colors, dither=dither).reshape(-1))
        made += 1
    data = np.concatenate(parts)
    root = {"chunks": [
        {"tag": "PBMP", "size": 0},
        {"tag": "head", "size": 20, "version": 0, "chunkCount": 3, "width": w, "height": h,
         "bitDepth": 8, "attribute": attribute},
        {"tag": "data", "size": len(data), "pixels": data},
        {"tag": "DETL", "size": 4, "detailLevels": made},
        {"tag": "PiDX", "size": 4, "paletteIndex": palette_index}]}
    if embed_palette:  # the engine's BMF_INCLUDE_PALETTE layout: RIFF after head
        rgbx = np.zeros((256, 4), np.uint8)
        rgbx[:, :3] = colors[:256, :3]
        pal = {"tag": "RIFF", "riffSize": 0, "form": "PAL ", "chunks": [
            {"tag": "data", "size": 0, "version": 0x300, "count": 256, "colors": rgbx,
             "extra": b"", "pad": b""}]}
        root["chunks"].insert(2, {"tag": "RIFF", "size": 1036, "palette": pal})
        root["chunks"][1]["chunkCount"] = 4
    body = BMP.encode_tree(root)
    root["chunks"][0]["size"] = len(body) - 8
    return BMP.encode_tree(root)


# ----------------------------------------------------------------------------
# shape / interior materials


def resolve_bitmap(name: str, source: str, data_root: str | None = None,
                   limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Where a material's ``.bmp`` is: beside the shape, in its game tree, or in
    the volumes under ``--data-root`` (case-insensitive), else None."""
    if not name:
        return None
    return find_in_tree(name, search_roots(source, data_root), limits)


def material_texture(name: str, source: str, *, palette: str = "",
                     data_root: str | None = None, warnings: list | None = None,
                     transparent: bool = False, limits: Limits | None = None,
                     palette_found: bool = False):
    """``(PNG bytes, attribute, palette spec, (w, h))`` of a material bitmap, or None
    when it cannot be found or read (the reason goes to ``warnings``)."""
    import io
    from ... import registry
    from ...containers import read_input
    limits = limits or DEFAULT_LIMITS  # the bitmap is found and read as the shape was
    spec = resolve_bitmap(name, source, data_root, limits)
    if spec is None:
        if warnings is not None:
            warnings.append(f"texture {name!r} not found beside the shape, in its tree or on "
                            f"--data-root")
        return None
    try:
        doc = registry.decode(read_spec(spec, Confinement(search_roots(source, data_root),
                                                          limits), name),
                              path=spec, limits=limits)
        if doc.format != "pbmp":
            raise FormatError(f"{spec} is a {doc.format} file, not a Phoenix bitmap")
        own = embedded_palette(doc.root)  # a bitmap that carries its palette is drawn with it
        pspec = "" if own is not None else choose_palette(source, palette, data_root, limits)
        colors = palette_for_bitmap(doc.root, own if own is not None else
                                    load_palette_doc(pspec, limits,
                                                     found=palette_found or not palette))
        rgba = bitmap_rgba(doc.root, colors)
        if transparent:  # the material says transparent: index 0 is clear, as the engine draws it
            rgba[..., 3][mip_levels(doc.root)[0] == 0] = 0
        from PIL import Image
        img = Image.fromarray(rgba, "RGBA")
    except (FormatError, OSError) as e:
        if warnings is not None:
            warnings.append(f"texture {name!r}: {e}")
        return None
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue(), bitmap_head(doc.root)["attribute"], pspec, img.size


SHAPE_TEXTURE_OPTIONS = (
    Option("palette", str, "palette for the material bitmaps (.ppl/.pal or ARCHIVE::member); "
                           "default: the first found in the shape's game tree", ""),
)


def texture_materials(scene, material_indices: list[int], source: str | None, *,
                      palette: str = "", data_root: str | None = None,
                      map_key: str = "map", limits: Limits | None = None) -> int:
    """Give the scene's materials their bitmaps (found case-insensitively beside
    the file, in its game tree, in volumes there or under ``data_root``), drawn
    with one palette for the whole file (named in a warning, since the game
    picks it per world).  Transparent bitmaps make the material MASK,
    translucent ones BLEND.  Returns how many materials got a texture."""
    from ...scene.model import Image, TextureRef
    if not source or not material_indices:
        return 0
    wanted = [i for i in material_indices
              if str(scene.materials[i].extras.get(map_key) or "").lower().endswith(".bmp")]
    if not wanted:
        return 0
    roots = search_roots(source, data_root)
    found = {i: find_in_tree(str(scene.materials[i].extras[map_key]), roots, limits or DEFAULT_LIMITS)
             for i in wanted}
    if not any(found.values()):
        # nothing of the shape's art is in its tree: untextured as before, said in extras only
        scene.extras = {**(scene.extras or {}), "textures": "no material bitmap in the tree"}
        return 0
    try:
        pspec = choose_palette(source, palette, data_root, limits or DEFAULT_LIMITS)
    except FormatError as e:
        scene.warnings.append(f"materials left untextured: {e}")
        return 0
    images: dict[str, int | None] = {}
    done = 0
    for i in wanted:
        m = scene.materials[i]
        name = str(m.extras[map_key])
        transparent = m.alpha_mode == "MASK"
        key = f"{name.lower()}|{transparent}"
        if key not in images:
            got = material_texture(name, source, palette=pspec, data_root=data_root,
                                   warnings=scene.warnings, transparent=transparent,
                                   limits=limits, palette_found=not palette)
            if got is None:
                images[key] = None
            else:
                png, attr, _, size = got
                images[key] = scene.add_image(Image(name=name, data=png,
                                                    extras={"bitmap_attribute": attr,
                                                            "size": size}))
        img = images[key]
        if img is None:
            continue
        attr = scene.images[img].extras["bitmap_attribute"]
        m.base_color_texture = TextureRef(image=img)
        m.base_color = (1.0, 1.0, 1.0, m.base_color[3] if len(m.base_color) > 3 else 1.0)
        if attr & (BMA_TRANSLUCENT | BMA_ADDITIVE) and m.alpha_mode == "OPAQUE":
            m.alpha_mode = "BLEND"
        elif attr & BMA_TRANSPARENT and m.alpha_mode == "OPAQUE":
            m.alpha_mode = "MASK"
        done += 1
    if done:
        how = "named" if palette else "the first found in the game tree; the game picks it per world"
        scene.warnings.append(f"textures drawn with palette {pspec} ({how})")
        scene.extras = {**(scene.extras or {}), "palette": pspec}
    return done
