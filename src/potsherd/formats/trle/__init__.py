"""Tomb Raider Level Editor (TR4 engine): the ``.wad`` family and ``.trwad``.

``layouts`` holds the record tables, ``codecs`` the codecs, ``model`` the
derived views (skeleton, keyframe angles, commands, pixels), ``moveables`` the
WadMerger-style cut (``extract``) and paste (``insert``) of one moveable, and
``cli`` the ``potsherd trle`` subcommands; ``levels`` the codecs of the
game levels TR1-TR5 (``levelstore`` their storages, ``trng`` TRNG's encryption).
"""
from .codecs import CODECS as _WAD_CODECS
from .levels import CODECS as _LEVEL_CODECS
from .cli import add_cli

CODECS = [*_WAD_CODECS, *_LEVEL_CODECS]

__all__ = ["CODECS", "add_cli"]
