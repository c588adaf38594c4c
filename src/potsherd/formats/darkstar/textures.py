"""Phoenix bitmaps to and from RGBA images, the palette a bitmap is drawn
with, and the material textures of Darkstar shapes and interiors.

Which palette draws a bitmap follows the engine (docs/formats/darkstar.md,
"Which palette draws a bitmap"): a bitmap with a ``PiDX`` is drawn with the
PL98 sub-palette of that index, looked for in its own volume, the volumes of
its world (``<world>World.vol``, ``<world>DML.vol``, ``<world>Terrain.vol``,
and volumes a caller such as a mission names), its game tree, then
``--data-root`` (:class:`PaletteFinder`).  A bitmap without one takes its
context's palette (its own RIFF chunk, else the first palette of those places).
No reachable palette with the index: one warning and a grey ramp, never an
unrelated palette.  ``palette=FILE`` overrides.  :func:`draw_bitmap` is the one
entry point every exporter uses.
"""
from __future__ import annotations

import os
from pathlib import Path
from functools import lru_cache
from typing import Any, Callable, Iterable

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


@lru_cache(maxsize=64)
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
# the engine's rule: which palette draws a bitmap

#: ``PiDX`` value meaning "any palette" (GFXBitmap's default; findMultiPalette
#: answers the first sub-palette)
ANY_PALETTE = 0xFFFFFFFF
#: volume-name suffixes of one world's volumes (marsWorld.vol, marsDML.vol, marsTerrain.vol)
WORLD_SUFFIXES = ("world", "dml", "terrain")
PL98_TRANSLUCENT = 2


def grey_ramp() -> np.ndarray:
    """(256, 4) RGBX: index i drawn as grey i, the neutral colours of a bitmap
    whose palette cannot be found."""
    ramp = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 4, axis=1)
    ramp[:, 3] = 0
    return ramp


class PaletteChoice:
    """The palette one bitmap is drawn with: ``colors`` (256, 4) RGBX (X: the
    entry's flags byte, the alpha of translucent palettes), ``spec`` (file or
    ``ARCHIVE::member``, "" for the grey ramp), the ``index`` asked (PiDX or
    None), ``how`` it was chosen (said to the user), the other files holding the
    index (``alternatives``) and the sub-palette's type (PL98 only)."""

    __slots__ = ("colors", "spec", "index", "how", "alternatives", "palette_type")

    def __init__(self, colors: np.ndarray, spec: str, index: int | None, how: str,
                 alternatives: tuple[str, ...] = (), palette_type: int | None = None) -> None:
        self.colors, self.spec, self.index, self.how = colors, spec, index, how
        self.alternatives, self.palette_type = alternatives, palette_type

    @property
    def found(self) -> bool:
        return bool(self.spec)

    def describe(self) -> str:
        more = f" (also in {', '.join(self.alternatives)})" if self.alternatives else ""
        return f"{self.spec or 'grey ramp'}: {self.how}{more}"


def _archive_of(path: str) -> str | None:
    """The volume a bitmap is in: ``X.vol`` of ``X.vol::member``, or a folder
    named ``*.vol`` holding an extracted volume; None for a loose file."""
    if "::" in path:
        return os.path.abspath(path.split("::")[0])
    folder = os.path.dirname(os.path.abspath(path))
    return folder if folder.lower().endswith(ARCHIVE_EXTS) else None


def world_volume_names(volume: str) -> list[str]:
    """The volumes of the world a volume belongs to: ``marsDML.vol`` ->
    ``marsWorld.vol``, ``marsDML.vol``, ``marsTerrain.vol`` (none for a volume
    whose name names no world)."""
    stem = os.path.splitext(os.path.basename(volume))[0]
    for suffix in WORLD_SUFFIXES:
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            world = stem[:-len(suffix)]
            return [f"{world}World.vol", f"{world}DML.vol", f"{world}Terrain.vol"]
    return []


class PaletteFinder:
    """One batch's palette look-up for bitmaps from ``source`` (cached: the
    places, the palette files in each, the indices each holds).

    Places, in the order the engine's worlds make them: the bitmap's own volume
    (or folder), the volumes of its world and any ``volumes`` the caller names
    (a mission's), its game tree, then ``data_root``.  Palettes are read within
    ``limits``; each missing index is warned about once (``warnings``)."""

    def __init__(self, source: str, *, palette: str = "", data_root: str | None = None,
                 volumes: Iterable[str] = (), limits: Limits | None = None,
                 warnings: list[str] | None = None) -> None:
        self.source = source
        self.palette = palette
        self.data_root = data_root or None
        self.volumes = [str(v) for v in volumes]
        self.limits = limits or DEFAULT_LIMITS
        self.warnings = warnings if warnings is not None else []
        self._places: list[tuple[str, list[str]]] | None = None
        self._indices: dict[str, dict[int, int]] = {}
        self._warned: set[int] = set()
        self._chosen: dict[Any, PaletteChoice] = {}
        #: the choices already said to the user (each once per batch)
        self.reported: set[str] = set()
        #: remarks on choices the user made (not losses: said, not warned)
        self.notes: list[str] = warnings if warnings is not None else []

    # --- where palettes are ----------------------------------------------
    def _volume_palettes(self, volume: str) -> list[str]:
        if os.path.isdir(volume):  # an extracted volume: its folder
            return sorted(os.path.join(volume, e.name) for e in os.scandir(volume)
                          if e.name.lower().endswith(PALETTE_EXTS)
                          and is_regular_file(Path(volume, e.name)))
        if not is_regular_file(Path(volume)):
            return []
        return [f"{volume}::{m}" for m in _archive_members(volume, self.limits)
                if m.lower().endswith(PALETTE_EXTS)]

    def places(self) -> list[tuple[str, list[str]]]:
        """(label, palette files) per place, in search order, each file once."""
        if self._places is not None:
            return self._places
        seen: set[str] = set()
        out: list[tuple[str, list[str]]] = []

        def add(label: str, specs: Iterable[str]) -> None:
            fresh = [x for x in specs if x not in seen]
            seen.update(fresh)
            out.append((label, fresh))

        own = _archive_of(self.source)
        if own is not None:
            add(f"its volume {os.path.basename(own)}", self._volume_palettes(own))
        else:
            here = os.path.dirname(os.path.abspath(self.source.split("::")[0]))
            add(f"its folder {here}", sorted(
                os.path.join(here, e.name) for e in os.scandir(here)
                if e.name.lower().endswith(PALETTE_EXTS) and is_regular_file(Path(here, e.name)))
                if os.path.isdir(here) else [])
        roots = search_roots(self.source, None)
        world: list[str] = []
        # the world's volumes by name, beside the bitmap's volume or in its tree; the
        # caller's volumes (a mission's) as given
        wanted = [(n, None) for n in world_volume_names(own or "")]
        wanted += [(os.path.basename(v), v) for v in self.volumes]
        for name, given in wanted:
            path = given if given is not None and os.path.exists(given) else None
            if path is None:
                for root in [os.path.dirname(own or ""), *roots]:
                    cand = os.path.join(root, name) if root else ""
                    if cand and os.path.exists(cand):
                        path = cand
                        break
            if path is None:  # any case, anywhere in the tree
                want = os.path.basename(name).lower()
                path = next((p for r in roots if os.path.isdir(r)
                             for base, p in _tree_listing(os.path.abspath(r), self.limits)
                             if base == want and "::" not in p), None)
            if path is not None and os.path.abspath(path) != own:
                world.extend(self._volume_palettes(os.path.abspath(path)))
        add("the volumes of its world", world)
        add("its game tree", find_palettes(roots, self.limits))
        if self.data_root:
            add(f"--data-root {self.data_root}", find_palettes([self.data_root], self.limits))
        self._places = out
        return out

    def where(self) -> str:
        """The places looked in, for messages."""
        return "; ".join(f"{label} ({len(specs)} palette{'s' * (len(specs) != 1)})"
                         for label, specs in self.places())

    def _indices_of(self, spec: str) -> dict[int, int]:
        """PL98 palette index -> sub-palette position in that file (empty for a
        RIFF palette or one that does not decode)."""
        got = self._indices.get(spec)
        if got is None:
            got = {}
            try:
                doc = load_palette_doc(spec, self.limits, found=spec != self.palette)
                if doc.format == "pl98":
                    for i, p in enumerate(doc.root["palettes"]):
                        got.setdefault(int(p["paletteIndex"]), i)
            except (FormatError, OSError) as e:
                self.warnings.append(f"palette {spec} skipped: {e}")
            self._indices[spec] = got
        return got

    def holding(self, index: int) -> list[str]:
        """Every reachable PL98 file holding a sub-palette of ``index``, in search order."""
        return [spec for _, specs in self.places() for spec in specs
                if index in self._indices_of(spec)]

    # --- the choice ----------------------------------------------------------
    def _sub_palette(self, spec: str, index: int | None) -> tuple[np.ndarray, int | None]:
        doc = load_palette_doc(spec, self.limits, found=spec != self.palette)
        if doc.format != "pl98":
            rgb = palette_colors(doc)
            out = np.zeros((256, 4), np.uint8)
            out[:, :3] = rgb
            return out, None
        pals = doc.root["palettes"]
        if not pals:
            raise ValueFormatError(f"{spec}: the PL98 file holds no palette")
        pos = self._indices_of(spec).get(index, 0) if index is not None else 0
        pick = pals[pos]
        return np.ascontiguousarray(pick["colors"], dtype=np.uint8), int(pick["paletteType"])

    def choose(self, bm: dict, own=None) -> PaletteChoice:
        """The palette ``bm`` is drawn with (``own``: the palette document it
        carries, a RIFF chunk or a Windows bitmap's table)."""
        index = bitmap_field(bm, "paletteIndex")
        index = None if index is None or int(index) == ANY_PALETTE else int(index)
        key = (index, id(own) if own is not None else None)
        if key in self._chosen and own is None:
            return self._chosen[key]
        choice = self._choose(index, own)
        if own is None:
            self._chosen[key] = choice
        return choice

    def _choose(self, index: int | None, own) -> PaletteChoice:
        if self.palette:  # named: it overrides, its sub-palette of the index when it has one
            colors, ptype = self._sub_palette(self.palette, index)
            held = index is None or index in self._indices_of(self.palette)
            if not held and index not in self._warned:
                self._warned.add(index)
                self.notes.append(f"the named palette {self.palette} holds no palette index "
                                  f"{index}; its first palette was used as asked")
            return PaletteChoice(colors, self.palette, index, "named with palette=", (), ptype)
        if index is not None:
            held = self.holding(index)
            if held:
                colors, ptype = self._sub_palette(held[0], index)
                return PaletteChoice(colors, held[0], index, f"holds its PiDX {index}",
                                     tuple(held[1:]), ptype)
            if index not in self._warned:
                self._warned.add(index)
                self.warnings.append(f"no palette with index {index} (the bitmap's PiDX) is "
                                     f"reachable; looked in {self.where()}; drawn with a grey "
                                     f"ramp (name one with --option palette=FILE)")
            return PaletteChoice(grey_ramp(), "", index, f"no palette holds its PiDX {index}")
        if own is not None:
            rgb = palette_colors(own)
            out = np.zeros((256, 4), np.uint8)
            out[:, :3] = rgb
            label = ("its own RIFF chunk" if "tag" in own.root
                     else "its own colour table (Windows bitmap)")
            return PaletteChoice(out, label, None, "no PiDX; the palette it carries")
        for label, specs in self.places():
            for k, spec in enumerate(specs):
                try:
                    colors, ptype = self._sub_palette(spec, None)
                except (FormatError, OSError) as e:  # unreadable: the next one
                    if spec not in self._indices:
                        self._indices[spec] = {}
                        self.warnings.append(f"palette {spec} skipped: {e}")
                    continue
                return PaletteChoice(colors, spec, None, f"no PiDX; the first palette of {label}",
                                     tuple(specs[k + 1:k + 2]), ptype)
        if None not in self._warned:
            self._warned.add(None)
            self.warnings.append(f"no palette (.ppl/.pal) reachable; looked in {self.where()}; "
                                 f"bitmaps without a PiDX drawn with a grey ramp")
        return PaletteChoice(grey_ramp(), "", None, "no PiDX and no palette reachable")


def draw_bitmap(bm: dict, finder: PaletteFinder, *, level: int = 0, own=None,
                transparent: bool = False) -> tuple[np.ndarray, PaletteChoice]:
    """``(rgba (h, w, 4) uint8, choice)`` of one mip level of a Phoenix bitmap
    drawn as the engine draws it: colours of the palette :class:`PaletteFinder`
    chooses; index 0 clear when the bitmap (or its material: ``transparent``) is
    transparent; translucent bitmaps take their alpha from a translucent
    palette's entry flags (the engine's OpenGL path), else half alpha."""
    if own is None:
        own = embedded_palette(bm)
    choice = finder.choose(bm, own)
    rgba = bitmap_rgba(bm, choice.colors[:, :3], level)
    attr = bitmap_head(bm)["attribute"]
    if attr & BMA_TRANSLUCENT and choice.palette_type == PL98_TRANSLUCENT:
        idx = mip_levels(bm)[min(level, len(mip_levels(bm)) - 1)]
        rgba[..., 3] = choice.colors[:, 3][idx]
    if transparent:
        idx = mip_levels(bm)[min(level, len(mip_levels(bm)) - 1)]
        rgba[..., 3][idx == 0] = 0
    return rgba, choice


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
    """(256, 3) colours of a named palette document for ``bm``: the sub-palette of
    its PiDX when the file holds one, else the file's first."""
    index = bitmap_field(bm, "paletteIndex")
    return palette_colors(palette_doc, index)


def bitmap_textures(doc, *, palette: str = "", mips: bool = False, data_root: str = "",
                    finder: PaletteFinder | None = None,
                    info: Callable[[str, str], None] | None = None, **_: Any) -> list:
    """``potsherd textures`` for PBMP / PBMA documents: each bitmap drawn with the
    palette the engine would use (:class:`PaletteFinder`), the choice said once
    per palette to ``info(path, text)``, a missing index warned about in
    ``doc.warnings``."""
    src = doc.source or "bitmap"
    if finder is None:
        finder = PaletteFinder(src, palette=palette, data_root=data_root or None,
                               limits=doc.limits, warnings=doc.warnings)
    if finder.notes is finder.warnings:  # on the command line, notes are info lines
        finder.notes = []
    stem = os.path.splitext(os.path.basename(src.split("::")[-1]))[0]
    bitmaps = ([doc.root] if doc.format == "pbmp"
               else [c["bitmap"] for c in doc.root["chunks"] if "bitmap" in c])
    out = []
    for i, bm in enumerate(bitmaps):
        name = stem if doc.format == "pbmp" else f"{stem}_{i:03d}"
        levels = len(mip_levels(bm)) if mips else 1
        for lv in range(levels):
            rgba, choice = draw_bitmap(bm, finder, level=lv)
            if choice.describe() not in finder.reported:  # each choice is said once
                finder.reported.add(choice.describe())
                if info is not None:
                    info(src, f"palette {choice.describe()}")
            while finder.notes is not finder.warnings and finder.notes:
                note = finder.notes.pop(0)
                if info is not None:
                    info(src, note)
            from PIL import Image
            out.append((name if lv == 0 else f"{name}_mip{lv}", Image.fromarray(rgba, "RGBA")))
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
                     finder: PaletteFinder | None = None):
    """``(PNG bytes, attribute, palette choice, (w, h))`` of a material bitmap, or
    None when it cannot be found or read (the reason goes to ``warnings``).  The
    bitmap is drawn by :func:`draw_bitmap` with ``finder`` (made for the bitmap's
    own place when not given)."""
    import io
    from ... import registry
    limits = limits or DEFAULT_LIMITS  # the bitmap is found and read as the shape was
    spec = resolve_bitmap(name, source, data_root, limits)
    if spec is None:
        if warnings is not None:
            warnings.append(f"texture {name!r} not found beside the shape, in its tree or on "
                            f"--data-root")
        return None
    try:
        # found in the shape's tree: read by the rule for referenced files
        data = read_spec(spec, Confinement(search_roots(source, data_root), limits), name)
        own = None
        if bytes(data[:2]) == b"BM":  # a Windows bitmap (the engine reads those too)
            bm, own = windows_bitmap(bytes(data), spec)
        else:
            doc = registry.decode(data, path=spec, limits=limits)
            if doc.format != "pbmp":
                raise FormatError(f"{spec} is a {doc.format} file, not a Phoenix bitmap")
            bm = doc.root
        if finder is None:
            finder = PaletteFinder(spec, palette=palette, data_root=data_root, limits=limits,
                                   warnings=warnings)
        rgba, choice = draw_bitmap(bm, finder, own=own, transparent=transparent)
        from PIL import Image
        img = Image.fromarray(rgba, "RGBA")
    except (FormatError, OSError) as e:
        if warnings is not None:
            warnings.append(f"texture {name!r}: {e}")
        return None
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue(), bitmap_head(bm)["attribute"], choice, img.size


def windows_bitmap_textures(data: bytes, path: str, *, finder: PaletteFinder,
                            info: Callable[[str, str], None] | None = None, **_: Any) -> list:
    """``potsherd textures`` for a Windows bitmap member of a volume: one image,
    drawn like a Phoenix bitmap (its palette index, else its own colour table)."""
    from PIL import Image
    bm, own = windows_bitmap(data, path)
    rgba, choice = draw_bitmap(bm, finder, own=own)
    if choice.describe() not in finder.reported:
        finder.reported.add(choice.describe())
        if info is not None:
            info(path, f"palette {choice.describe()}")
    stem = os.path.splitext(os.path.basename(path.split("::")[-1]))[0]
    return [(stem, Image.fromarray(rgba, "RGBA"))]


#: bfReserved1 of a Windows bitmap whose bfReserved2 is a palette index (g_bitmap.h)
MS_BITMAP_PI_MAGIC = 0xF5F7


def windows_bitmap(data: bytes, where: str = "bitmap") -> tuple[dict, Any]:
    """A Windows ``BM`` bitmap as the bitmap dict :func:`draw_bitmap` takes (8-bit
    indices, its palette index when bfReserved1 is the engine's magic) and its
    own colour table as a palette document (used when it names no index).
    Only 8-bit palettised bitmaps are drawn through palettes."""
    import io
    from PIL import Image, UnidentifiedImageError
    from ...document import Document
    if len(data) < 14:
        raise ValueFormatError(f"{where}: a Windows bitmap needs 14 header bytes", offset=0)
    reserved1 = int.from_bytes(data[6:8], "little")
    reserved2 = int.from_bytes(data[8:10], "little")
    try:
        with Image.open(io.BytesIO(data)) as im:
            # at most 8-bit pixels, RLE8 runs of 255 per 2 bytes: more pixels than that is a lie
            if im.width * im.height > min(DEFAULT_LIMITS.max_elements, 128 * len(data)):
                raise ValueFormatError(f"{where}: {im.width}x{im.height} pixels in "
                                       f"{len(data)} bytes", offset=18)
            bits = int.from_bytes(data[28:30], "little") if len(data) >= 30 else 0
            if im.mode not in ("P", "L") or bits > 8:
                raise ValueFormatError(f"{where}: a {bits}-bit Windows bitmap is not "
                                       f"palettised; only 8-bit ones are drawn through palettes")
            idx = np.asarray(im, dtype=np.uint8)
            if im.mode == "P":
                pal = np.frombuffer(bytes(im.getpalette() or b""), np.uint8)
            else:  # a grey colour table, which Pillow reads as grey levels
                pal = np.repeat(np.arange(256, dtype=np.uint8), 3)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as e:
        raise ValueFormatError(f"{where}: not a readable Windows bitmap ({e})") from None
    h, w = idx.shape
    stride = (w + 3) & ~3
    rows = np.zeros((h, stride), np.uint8)
    rows[:, :w] = idx
    index = reserved2 if reserved1 == MS_BITMAP_PI_MAGIC and reserved2 != 0xFFFF else ANY_PALETTE
    bm = {"chunks": [{"tag": "head", "size": 20, "version": 0, "chunkCount": 2, "width": w,
                      "height": h, "bitDepth": 8, "attribute": 0},
                     {"tag": "data", "size": rows.size, "pixels": rows.reshape(-1)},
                     {"tag": "PiDX", "size": 4, "paletteIndex": index}]}
    cols = np.zeros((256, 4), np.uint8)
    rgb = pal[:768].reshape(-1, 3)
    cols[:len(rgb), :3] = rgb
    own = Document("riffpal", {"chunks": [{"tag": "data", "colors": cols}]}, {}, b"", [])
    return bm, own


SHAPE_TEXTURE_OPTIONS = (
    Option("palette", str, "palette for the material bitmaps (.ppl/.pal or ARCHIVE::member); "
                           "default: for each bitmap the PL98 sub-palette its PiDX names", ""),
)


def texture_materials(scene, material_indices: list[int], source: str | None, *,
                      palette: str = "", data_root: str | None = None,
                      map_key: str = "map", limits: Limits | None = None,
                      volumes: Iterable[str] = ()) -> int:
    """Give the scene's materials their bitmaps (found case-insensitively beside
    the file, in its game tree, in volumes there or under ``data_root``), each
    drawn with the palette the engine would use for it (:func:`draw_bitmap`,
    one :class:`PaletteFinder` per bitmap place, shared by the scene).  The
    palettes used go to the scene's extras and a warning.  Transparent bitmaps
    make the material MASK, translucent ones BLEND.  Returns how many
    materials got a texture."""
    from ...scene.model import Image, TextureRef
    if not source or not material_indices:
        return 0
    wanted = [i for i in material_indices
              if str(scene.materials[i].extras.get(map_key) or "").lower().endswith(".bmp")]
    if not wanted:
        return 0
    limits = limits or DEFAULT_LIMITS
    roots = search_roots(source, data_root)
    found = {i: find_in_tree(str(scene.materials[i].extras[map_key]), roots, limits)
             for i in wanted}
    if not any(found.values()):
        # nothing of the shape's art is in its tree: untextured as before, said in extras only
        scene.extras = {**(scene.extras or {}), "textures": "no material bitmap in the tree"}
        return 0
    finders: dict[str, PaletteFinder] = {}  # per bitmap place (volume or folder): one batch
    images: dict[str, int | None] = {}
    used: dict[str, str] = {}
    done = 0
    for i in wanted:
        m = scene.materials[i]
        name = str(m.extras[map_key])
        transparent = m.alpha_mode == "MASK"
        key = f"{name.lower()}|{transparent}"
        if key not in images:
            spec = found[i]
            place = (_archive_of(spec) or os.path.dirname(os.path.abspath(spec))) if spec else ""
            finder = finders.get(place)
            if finder is None and spec:
                finder = finders[place] = PaletteFinder(
                    spec, palette=palette, data_root=data_root, volumes=volumes, limits=limits,
                    warnings=scene.warnings)
            got = material_texture(name, source, palette=palette, data_root=data_root,
                                   warnings=scene.warnings, transparent=transparent,
                                   limits=limits, finder=finder)
            if got is None:
                images[key] = None
            else:
                png, attr, choice, size = got
                used[name] = choice.describe()
                images[key] = scene.add_image(Image(name=name, data=png,
                                                    extras={"bitmap_attribute": attr,
                                                            "size": size,
                                                            "palette": choice.spec or "grey ramp",
                                                            "paletteIndex": choice.index,
                                                            "paletteAlternatives":
                                                                list(choice.alternatives)}))
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
        kinds = sorted(set(used.values()))
        scene.warnings.append("textures drawn with palette " + "; ".join(kinds))
        specs = sorted({scene.images[images[k]].extras["palette"] for k in images
                        if images[k] is not None})
        scene.extras = {**(scene.extras or {}), "palette": specs[0] if len(specs) == 1 else specs}
    return done
