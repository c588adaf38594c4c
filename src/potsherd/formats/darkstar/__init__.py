"""Darkstar / 3Space 3.x (Starsiege, Starsiege: Tribes): ``.dts`` shapes and
``.dml`` material lists, all inside the engine's generic PERS block container.

``structs`` turns the spec's struct strings (the package's corrected
``structures.json``) into layout storages; ``pers`` is the PERS block layer;
``geometry`` decodes meshes (normal table, per-frame positions, face indices).
"""
from .codecs import CODECS, DML, DTS

__all__ = ["CODECS", "DTS", "DML"]

# Darkstar world files (bitmaps, palettes, volumes, interiors): their own modules.
from .world import WORLD_CODECS  # noqa: E402

CODECS = CODECS + WORLD_CODECS

# Tribes worlds: terrain grid files and blocks (the members of a .ted volume).
from .terrain import TERRAIN_CODECS  # noqa: E402

CODECS = CODECS + TERRAIN_CODECS

# Tribes missions (.mis): the object tree of a mission, kept byte for byte.
from .mission_codec import MISSION_CODECS  # noqa: E402

CODECS = CODECS + MISSION_CODECS
