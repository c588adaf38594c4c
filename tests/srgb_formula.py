"""The sRGB transfer functions of IEC 61966-2-1, written out here so tests that
derive expected pixels do not borrow the code under test (the renderer takes
its own from ``potsherd.scene.bake_colors``)."""
from __future__ import annotations

import numpy as np


def decode(c) -> np.ndarray:
    """sRGB-encoded values in [0, 1] as linear light."""
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def encode(c) -> np.ndarray:
    """Linear light (clipped to [0, 1]) sRGB-encoded."""
    c = np.clip(np.asarray(c, np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)
