"""The format families, one descriptor each: what the registry, the command line, the
fuzzers and the tests read to find a family's codecs, CLI commands, corpus and docs.

Listing formats must stay cheap (no family import, no Pillow), so what each codec
declares is also kept in ``formats/manifest.json``, generated from the codecs by
``python3 -c "import potsherd.families as f; f.write_manifest()"`` and checked against them by the tests.  Once the
families are loaded (any read or write), the live codecs are used instead.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Family:
    """One format family."""

    name: str
    title: str
    #: the package whose ``CODECS`` list holds the family's codecs
    package: str
    #: folders of the family in the real-file test corpus (the first is the main one)
    corpus: tuple[str, ...]
    #: ``"module:function"`` adding the family's subcommands, and those commands' names
    cli_hook: str | None = None
    cli_commands: tuple[str, ...] = ()
    #: the family's format document, relative to the checkout
    docs: str = ""

    def codecs(self) -> list:
        """The family's codec objects (imports the family)."""
        return list(getattr(importlib.import_module(self.package), "CODECS", ()))

    def add_cli(self) -> Callable | None:
        """The function adding the family's subcommands (imports only that module)."""
        if not self.cli_hook:
            return None
        module, _, func = self.cli_hook.partition(":")
        return getattr(importlib.import_module(module), func)

    def corpus_dirs(self, root: str | Path) -> list[Path]:
        """The family's corpus folders under the corpus ``root``, present or not."""
        return [Path(root) / d for d in self.corpus]


FAMILIES: tuple[Family, ...] = (
    Family("ko", "Knight Online (N3 engine)", "potsherd.formats.ko", ("ko",),
           cli_hook="potsherd.cli.ko:add_cli", cli_commands=("table",),
           docs="docs/formats/knight-online.md"),
    Family("darkstar", "Dynamix Darkstar / 3Space", "potsherd.formats.darkstar",
           ("dts", "darkstar-world", "tribes"),
           cli_hook="potsherd.cli.darkstar:add_cli",
           cli_commands=("ls", "extract", "heightmap"), docs="docs/formats/darkstar.md"),
    Family("fbx", "Autodesk FBX", "potsherd.formats.fbx", ("fbx",), docs="docs/formats/fbx.md"),
    Family("trle", "Tomb Raider Level Editor", "potsherd.formats.trle", ("tr4wad", "trlevels"),
           cli_hook="potsherd.cli.trle:add_cli", cli_commands=("trle",),
           docs="docs/formats/trle.md"),
)

NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)

#: families added by plugins (``potsherd.codecs`` entry points), filled by
#: :func:`potsherd.registry.load_plugins`
PLUGIN_FAMILIES: list[Family] = []


def all_families() -> tuple[Family, ...]:
    """The built-in families, then those plugins added (once loaded)."""
    return FAMILIES + tuple(PLUGIN_FAMILIES)


def family(name: str) -> Family:
    """The descriptor of a family by name (KeyError when unknown)."""
    for f in all_families():
        if f.name == name:
            return f
    raise KeyError(name)


def command_family(command: str) -> Family | None:
    """The family whose CLI hook adds ``command``, or None."""
    for f in FAMILIES:
        if command in f.cli_commands:
            return f
    return None


def describe_codec(codec: Any) -> dict:
    """What one codec declares: the row ``potsherd formats`` prints."""
    def opts(options) -> list[dict]:
        return [{"name": o.name, "type": o.type.__name__, "help": o.help, "default": o.default}
                for o in options]
    return {"name": codec.name, "family": codec.family, "origin": codec.origin,
            "extensions": list(codec.extensions),
            "magic": codec.magic.hex() if codec.magic else None,
            "description": codec.description, "features": codec.features(),
            "export_options": opts(codec.export_options),
            "import_options": opts(codec.import_options)}


def build_manifest() -> list[dict]:
    """Every family's codec rows, from the live codecs (imports every family)."""
    return [describe_codec(c) for f in FAMILIES for c in f.codecs()]


def read_manifest() -> list[dict]:
    """The stored codec rows (no family import)."""
    text = resources.files("potsherd.formats").joinpath(MANIFEST).read_text("utf-8")
    return json.loads(text)


def write_manifest() -> Path:
    """Regenerate ``formats/manifest.json`` from the codecs; returns its path."""
    from .core.fileio import atomic_write
    path = Path(__file__).resolve().parent / "formats" / MANIFEST
    atomic_write(path, (json.dumps(build_manifest(), indent=1) + "\n").encode("utf-8"))
    return path
