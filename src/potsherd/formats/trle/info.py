"""``potsherd info`` summaries of the TRLE documents: wad, ``.trwad``, sprites,
sound map and the text lists."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...document import Document
from . import model
from .catalog import moveable_name
from .model import animation_ranges


def mesh_summary(meshes: Any) -> dict:
    """Mesh, vertex and polygon counts (or the size of a mesh blob that did not parse)."""
    if isinstance(meshes, (bytes, bytearray)):
        return {"meshes": "raw", "mesh_bytes": len(meshes)}
    return {"meshes": len(meshes),
            "vertices": sum(int(m["vertex_count"]) for m in meshes),
            "polygons": sum(int(m["polygon_count"]) for m in meshes)}


def wad_info(doc: Document, name: str, family: str) -> dict:
    r = doc.root
    ranges = animation_ranges(r)
    return {
        "format": name, "family": family, "version": r["version"],
        "textures": r["texture_count"], "texture_pages": r["page_byte_count"] / model.PAGE_BYTES,
        "mesh_pointers": r["mesh_pointer_count"], **mesh_summary(r["meshes"]),
        "animations": r["animation_count"], "state_changes": r["state_change_count"],
        "dispatches": r["dispatch_count"], "keyframe_words": r["keyframe_word_count"],
        "statics": r["static_count"],
        "moveables": [{"id": m["object_id"], "name": moveable_name(m["object_id"]),
                       "meshes": m["mesh_count"], "animations": a1 - a0}
                      for m, (a0, a1) in zip(model.records(r["moveables"]), ranges)],
    }


def trwad_info(doc: Document, name: str, family: str) -> dict:
    r = doc.root
    out: dict[str, Any] = {"format": name, "family": family, "version": r["version"],
                           "moveable_count": r["moveable_count"]}
    if "moveable" not in r:
        return out
    m = r["moveable"]
    out.update({
        "moveable": {"id": m["object_id"], "name": moveable_name(m["object_id"]),
                     "source_indices": {k: m[k] for k in ("first_mesh_pointer", "links_index",
                                                          "keyframe_offset", "anim_index")}},
        "num_meshes": m["mesh_count"], "link_words": r["link_word_count"],
        **mesh_summary(r["meshes"]), "textures": r["texture_count"],
        "animations": r["animation_count"], "commands": r["command_count"],
        "keyframe_words": r["keyframe_word_count"], "state_changes": len(r["state_changes"]),
        "dispatches": sum(len(s["dispatches"]) for s in r["state_changes"]),
        "sounds": r["sound_count"], "sound_bytes": len(r["sound_data"]),
        "mesh_pad": doc.params.get("mesh_pad"),
    })
    return out


def swd_info(doc: Document, name: str, family: str) -> dict:
    r = doc.root
    return {"format": name, "family": family, "version": r["version"],
            "sprites": r["sprite_count"], "pages": r["page_byte_count"] / model.PAGE_BYTES,
            "sequences": [{"id": s["object_id"], "name": moveable_name(s["object_id"]),
                           "sprites": -s["negative_count"], "first": s["first"]}
                          for s in model.records(r["sequences"])]}


def sfx_info(doc: Document, name: str, family: str) -> dict:
    r = doc.root
    return {"format": name, "family": family, "map_size": doc.params.get("map_size"),
            "mapped_sounds": int(np.count_nonzero(np.asarray(r["sound_map"]) >= 0)),
            "sound_infos": r["info_count"], "samples": r["sample_count"]}


def text_list_info(doc: Document, name: str, family: str, text_encoding: str) -> dict:
    lines = [bytes(x).decode(text_encoding).rstrip("\r") for x in doc.root["lines"]]
    entries = [x for x in lines if x]
    out: dict[str, Any] = {"format": name, "family": family, "entries": len(entries)}
    if name == "tr4was":
        out["names"] = [x.split(":", 1)[0] for x in entries]
    else:
        out["files"] = entries
    return out
