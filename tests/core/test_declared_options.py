"""Each family declares exactly the options its ``to_scene`` reads."""
from __future__ import annotations

import importlib
import inspect
import re

import pytest

from potsherd import registry

#: what ``document_scene`` passes itself, and what a mission's export hands the interiors
#: and shapes it places (the world's volumes, a list): not user options
INTERNAL = {"source_path", "volumes"}
READ = re.compile(r"""options(?:\.get\(|\[)\s*["'](\w+)["']""")


def _names_read(module_name: str) -> set:
    mod = importlib.import_module(module_name)
    names = set(READ.findall(inspect.getsource(mod)))
    sig = inspect.signature(mod.to_scene) if hasattr(mod, "to_scene") else None
    if sig is not None:
        names |= {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
    return names - INTERNAL


#: modules besides ``formats.<family>.scene`` whose converters a codec's ``to_scene`` calls
MORE_SCENE_MODULES = {"ko": ("potsherd.formats.ko.zone",),
                      "darkstar": ("potsherd.formats.darkstar.interiors",
                                   "potsherd.formats.darkstar.terrain_scene",
                                   "potsherd.formats.darkstar.mission_scene"),
                      "trle": ("potsherd.formats.trle.levelscene",)}


@pytest.mark.parametrize("family", registry.FAMILIES)
def test_declarations_match_what_to_scene_reads(family):
    declared = {o.name for c in registry.codecs() if c.family == family
                for o in c.export_options}
    read = set()
    for module in (f"potsherd.formats.{family}.scene", *MORE_SCENE_MODULES.get(family, ())):
        read |= _names_read(module)
    assert declared == read, (family, sorted(declared ^ read))


def test_every_declared_option_has_a_type_and_help():
    for c in registry.codecs():
        for o in c.export_options:
            assert o.type in (int, float, str, bool) and o.help, (c.name, o)
            if o.default is not None:
                assert isinstance(o.default, o.type), (c.name, o)


def test_the_scan_sees_reads_negative_control():
    assert READ.findall('x = options.get("lod") or options["skeleton"]') == ["lod", "skeleton"]
    assert READ.findall('opts.get("lod")') == []
