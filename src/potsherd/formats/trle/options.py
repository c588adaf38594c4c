"""Declared options of the TRLE glTF conversions (``--option name=value``)."""
from __future__ import annotations

from ...registry import Option

EXPORT_OPTIONS = (
    Option("moveable", str, "object id or TR4 slot name of the moveable to export "
           "(a .wad exports all by default)"),
    Option("skin", bool, "1: one skinned mesh per material on a joint skeleton (default); "
           "0: one rigid node per mesh", True),
    Option("unit_scale", float, "metres per TR unit (default 1/512)", 1.0 / 512.0),
    Option("spacing", float, "TR units between moveables of a .wad along X", 2048.0),
)

IMPORT_OPTIONS = (
    Option("unit_scale", float, "metres per TR unit when the glTF has no TR4 root node "
           "(default 1/512)", 1.0 / 512.0),
    Option("frame_rate", float, "keyframes per second of resampled animations (the engine "
           "runs at 30; 15 gives frame_duration 2)", 30.0),
    Option("object_id", int, "object id (slot) of the moveable (default: the glTF's, else 0)"),
    Option("moveable", str, "which moveable of a multi-moveable glTF to import "
           "(object id or slot name; default: the first)"),
)
