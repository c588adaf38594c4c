"""Finding the files a Knight Online file refers to: the client root is found by its
folder layout, names are in the client's code page (one module, so the scene export,
the item-table lookup and the importers share it without importing each other)."""
from __future__ import annotations

from typing import Any

from ... import resolve
from ...core.limits import Limits
from .text import text


#: sub-folders of a Knight Online client's data folder: the nearest folder above
#: a file with two of them is the client root its references are relative to
CLIENT_LAYOUT = ("Chr", "ChrSelect", "Item", "Object", "Misc", "UI", "UI_US", "Zones", "DTex",
                 "fx", "Intro", "N3Indoor", "symbol")


class Resolver(resolve.Resolver):
    """Finds referenced client files (see :class:`potsherd.resolve.Resolver`): names
    in the client's code page, warnings into the scene being built.  The client
    root is found by its layout (:data:`CLIENT_LAYOUT`), never by climbing
    parent folders that do not have it; ``given`` are the option values the
    user named as files (skeleton, animation)."""

    def __init__(self, source: str | None, data_root: str | None, *,
                 limits: Limits | None = None,
                 listings: resolve.Listings | None = None, given: tuple = ()) -> None:
        super().__init__(source, data_root, limits=limits, listings=listings, name_of=text,
                         game_layout=CLIENT_LAYOUT, given=given)

    def load(self, ref: Any, scene: Any, what: str):  # type: ignore[override]  (a Scene)
        """The decoded document a reference names, or None (with a warning)."""
        return super().load(ref, scene.warnings, what)
