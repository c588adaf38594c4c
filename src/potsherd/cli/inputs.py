"""What every command takes from its argparse namespace: the input limits
(``--max-input`` ...), ``--format`` and ``--param``.  Below the CLI the library
takes these as plain values (:class:`~potsherd.core.limits.Limits`, a codec name,
a params dict)."""
from __future__ import annotations

from typing import Any

from ..api import LIMIT_FLAGS, make_limits, parse_params, read_doc as _read_doc
from ..core.limits import Limits


def limits_from_args(args: Any) -> Limits:
    """The limits an argparse namespace asks for (``--max-input`` ...)."""
    return make_limits(**{name: getattr(args, name, None) for name in LIMIT_FLAGS})


def read_doc(path: str, args: Any, format: str | None = None):
    """``(bytes, Document)`` of ``path`` with the limits, format and params of
    ``args`` (``format``: the codec when ``--format`` is not given)."""
    return _read_doc(path, limits=limits_from_args(args),
                     format=getattr(args, "format", None) or format,
                     params=parse_params(getattr(args, "param", None)))
