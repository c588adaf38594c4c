"""RGBA arrays to Pillow images and PNG bytes."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image


def rgba_to_image(rgba: np.ndarray) -> Image.Image:
    """An ``(h, w, 4)`` uint8 array as an RGBA Pillow image."""
    return Image.fromarray(np.ascontiguousarray(rgba, dtype=np.uint8))


def rgba_to_png(rgba: np.ndarray) -> bytes:
    buf = io.BytesIO()
    rgba_to_image(rgba).save(buf, format="PNG")
    return buf.getvalue()
