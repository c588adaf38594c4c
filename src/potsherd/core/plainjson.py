"""Summaries and extras to strict JSON (``info --json``, glTF ``extras``).

Not the lossless document forms (those are layout-driven): this is for
values shown to people and other tools, where numpy scalars and arrays must
become lists and numbers, bytes become hex, and NaN/inf become strings
(strict JSON has no token for them).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def plain_json(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): plain_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_json(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, np.ndarray):
        return plain_json(v.tolist())
    if isinstance(v, np.generic):
        return plain_json(v.item())
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)
