"""Tomb Raider Level Editor (TR4 engine): the ``.wad`` family and ``.trwad``.

``layouts`` holds the record tables, ``codecs`` the codecs, ``model`` the
derived views (skeleton, keyframe angles, commands, pixels), ``moveables`` the
WadMerger-style cut (``extract``) and paste (``insert``) of one moveable; the
``potsherd trle`` subcommands live in :mod:`potsherd.cli.trle`.
"""
from .codecs import CODECS

__all__ = ["CODECS"]
