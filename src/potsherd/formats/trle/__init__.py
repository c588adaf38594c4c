"""Tomb Raider Level Editor (TR4 engine): the ``.wad`` family and ``.trwad``.

``layouts`` holds the record tables, ``codecs`` the codecs, ``model`` the
derived views (skeleton, keyframe angles, commands, pixels), ``moveables`` the
WadMerger-style cut (``extract``) and paste (``insert``) of one moveable; ``levels``
the codecs of the game levels TR1-TR5 (``levelstore`` their storages, ``trng``
TRNG's encryption).  The ``potsherd trle`` subcommands live in
:mod:`potsherd.cli.trle`.
"""
from .codecs import CODECS as _WAD_CODECS
from .levels import CODECS as _LEVEL_CODECS

CODECS = [*_WAD_CODECS, *_LEVEL_CODECS]

__all__ = ["CODECS"]
