"""The Darkstar world codecs (bitmaps, palettes, volumes, interiors); their
commands ``potsherd ls ARCHIVE``, ``potsherd extract ARCHIVE -o DIR`` and
``potsherd heightmap`` are in :mod:`potsherd.cli.darkstar`.

Interiors: ``.dis`` (``ITRs`` shape: states, levels of detail naming their
``.dig`` geometry and ``.dil`` lighting files) is a layout-table record
(``layouts/world.layout``); ``.dig`` (``ITRGeometry``) and ``.dil``
(``ITRLighting``) are PERS blocks described in ``itr_structures.json`` and read
by the same PERS machinery as shapes.
"""
from __future__ import annotations

from importlib import resources
from typing import Any

from ...core.layout import Layout
from ...registry import LayoutCodec, Option
from .codecs import DarkstarCodec
from .phoenix import BMP, PBA, CODECS as PHOENIX_CODECS
from .textures import bitmap_textures
from .volumes import VOL


def _world_layout() -> Layout:
    path = resources.files(__package__).joinpath("layouts/world.layout")
    return Layout(path.read_text("utf-8"), source=str(path))


WORLD_LAYOUT = _world_layout()

INTERIOR_OPTIONS = (
    Option("state", int, "interior state to export", 0),
    Option("palette", str, "palette file for the textures (.ppl/.pal; default: for each "
                           "bitmap the PL98 sub-palette its PiDX names)", ""),
    Option("lighting", bool, "apply the .dil light maps as vertex colours", True),
    Option("ambient", float, "ambient light added to the light maps (the engine adds the "
                             "mission's at run time)", 0.4),
    Option("lod", int, "level of detail of the state (0 = finest)", 0),
    Option("data_root", str, "game data folder (or volumes) searched for the geometry, "
           "lighting, material list, bitmaps and palettes"),
)


class InteriorShapeCodec(LayoutCodec):
    """``.dis``: exports to glTF with its geometry, lighting and textures."""

    export_options = INTERIOR_OPTIONS

    def to_scene(self, doc, **options: Any):
        from .interiors import to_scene
        return to_scene(doc, **options)

    def info(self, doc) -> dict:
        from .interiors import dis_names
        names = dis_names(doc)
        return {"format": self.name, "family": self.family, "states": len(doc.root["states"]),
                "lods": len(doc.root["lods"]), "geometry": names["geometry"],
                "lighting": names["lighting"], "materialList": names["materialList"]}


DIS = InteriorShapeCodec("dis", WORLD_LAYOUT, "dis", family="darkstar", extensions=(".dis",),
                         magic=b"ITRs", description="Darkstar interior shape (ITRs: states, "
                         "LODs naming .dig/.dil files)")
class InteriorPartCodec(DarkstarCodec):
    """A PERS file recognised by its class name (so a .dig/.dil read without its
    name is still told apart from a shape)."""

    def __init__(self, name: str, extensions: tuple[str, ...], description: str,
                 *class_names: bytes) -> None:
        super().__init__(name, extensions, description,
                         tuple(c.decode("ascii") for c in class_names))
        self.class_names = class_names

    def sniff(self, data: bytes) -> bool:
        if not data.startswith(b"PERS") or len(data) < 10:
            return False
        n = int.from_bytes(data[8:10], "little")
        return data[10:10 + n] in self.class_names


DIG = InteriorPartCodec("dig", (".dig",), "Darkstar interior geometry (PERS ITRGeometry v4, v7: "
                    "BSP, surfaces, points, planes)", b"ITRGeometry")
DIL = InteriorPartCodec("dil", (".dil",), "Darkstar interior lighting (PERS ITRLighting v4, v6-v7, "
                    "ITRMissionLighting v7: light states, light maps)", b"ITRLighting",
                        b"ITRMissionLighting")

# bitmaps and bitmap arrays extract their images to PNG through the palette machinery
BMP.textures = PBA.textures = bitmap_textures

WORLD_CODECS = [*PHOENIX_CODECS, VOL, DIS, DIG, DIL]
