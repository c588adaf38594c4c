"""``potsherd trle``: extract / insert moveables, export textures."""
from __future__ import annotations


def add_cli(subparsers, common) -> None:
    return None
