"""Tomb Raider Level Editor (TR4 engine): the ``.wad`` family and ``.trwad``.

``layouts`` holds the record tables, ``codecs`` the codecs, ``model`` the
derived views (skeleton, keyframe angles, commands, pixels), ``moveables`` the
WadMerger-style cut (``extract``) and paste (``insert``) of one moveable, and
``cli`` the ``potsherd trle`` subcommands.
"""
from .codecs import CODECS
from .cli import add_cli

__all__ = ["CODECS", "add_cli"]
