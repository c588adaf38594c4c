"""Darkstar interiors (``.dis`` + ``.dig`` + ``.dil``) to the neutral scene."""
from __future__ import annotations

from typing import Any


def name_at(buffer: bytes, offset: int) -> str:
    """The NUL-terminated name at ``offset`` of a name buffer ('' when outside)."""
    if not 0 <= offset < len(buffer):
        return ""
    end = buffer.find(b"\0", offset)
    return buffer[offset:end if end >= 0 else len(buffer)].decode("latin-1")


def dis_names(doc) -> dict[str, Any]:
    """File names an interior shape refers to: per LOD geometry, lighting states, materials."""
    root = doc.root
    buf = bytes(root["nameBuffer"])
    geometry = [name_at(buf, lod["geometryFileOffset"]) for lod in root["lods"]]
    lighting = [name_at(buf, int(off)) for off in root["lodLightStates"]]
    return {"geometry": geometry, "lighting": lighting,
            "states": [name_at(buf, s["nameIndex"]) for s in root["states"]],
            "materialList": name_at(buf, root["materialListOffset"])}
