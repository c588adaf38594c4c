"""Codec plugins: third-party packages register codecs and families through
the entry point group ``potsherd.codecs`` (docs/extending.md).  Loaded once,
after the built-in families, by :func:`potsherd.registry.load_plugins`."""
from __future__ import annotations

from typing import Any

from . import families as _families

#: the entry point group third-party packages register codecs and families in
PLUGIN_GROUP = "potsherd.codecs"
_PLUGINS_LOADED = False
#: plugins that failed to load: (entry point, error text); potsherd runs without them
PLUGIN_ERRORS: list[tuple[str, str]] = []


def load_plugins(registry: Any) -> None:
    """Register the codecs of installed plugins (entry point group
    ``potsherd.codecs``), once, after the built-in families.

    An entry point names a :class:`~potsherd.families.Family` (whose ``package``
    module lists ``CODECS``), a module with ``CODECS`` (and optionally
    ``FAMILY``), a list of codecs, or a function returning one of these.  Each
    codec's ``origin`` becomes the distribution's "name version".  A plugin that
    fails to import or clashes with a registered codec name is skipped, with
    the reason in :data:`PLUGIN_ERRORS` and a warning.  ``registry`` is
    :mod:`potsherd.registry`, which calls this."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            _register_plugin(ep, registry)
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break potsherd
            import warnings
            PLUGIN_ERRORS.append((f"{ep.name} = {ep.value}", f"{type(e).__name__}: {e}"))
            warnings.warn(f"potsherd plugin {ep.name!r} ({ep.value}) not loaded: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)


def _register_plugin(ep: Any, registry: Any) -> None:
    """Register one entry point's codecs in ``registry`` (the module: passed in,
    so that this module does not import it back)."""
    Codec, _CODECS, _EARLY = registry.Codec, registry._CODECS, registry._EARLY
    import inspect
    obj = ep.load()
    if callable(obj) and not isinstance(obj, (Codec, _families.Family, type)) \
            and not inspect.ismodule(obj):
        obj = obj()
    dist = getattr(ep, "dist", None)
    origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
    fam = None
    if isinstance(obj, _families.Family):
        fam, codecs_ = obj, obj.codecs()
    elif inspect.ismodule(obj):
        fam = getattr(obj, "FAMILY", None)
        codecs_ = list(getattr(obj, "CODECS", ()))
    elif isinstance(obj, Codec):
        codecs_ = [obj]
    else:
        codecs_ = list(obj)
    if not codecs_ or not all(isinstance(c, Codec) for c in codecs_):
        raise TypeError("a potsherd.codecs entry point gives Codec objects "
                        "(a Family, a module with CODECS, a list, or a function returning one)")
    for c in codecs_:
        if c.name in _CODECS and _CODECS[c.name] is not c:
            raise ValueError(f"codec name {c.name!r} is already registered "
                             f"(by {_CODECS[c.name].origin})")
        if not c.family:
            raise ValueError(f"codec {c.name!r} declares no family")
    known = {f.name for f in _families.all_families()}
    if fam is not None and fam.name not in known:
        _families.PLUGIN_FAMILIES.append(fam)
        known.add(fam.name)
    for c in codecs_:
        if c.family not in known:  # a family only named by its codecs
            _families.PLUGIN_FAMILIES.append(_families.Family(
                c.family, c.family, getattr(ep, "module", "") or "", ()))
            known.add(c.family)
        c.origin = origin
        registry.register(c)
        if c.name in _EARLY:   # listed after the built-in codecs, whenever loaded
            _EARLY.remove(c.name)
