"""Generic pixel decoders: block-compressed (BC1/BC2/BC3 = DXT1/DXT3/DXT5) and
packed 16/24/32-bit formats to RGBA ``uint8`` arrays of shape ``(h, w, 4)``.

Everything is vectorised with numpy over all blocks / pixels at once; no
format-specific knowledge of any game lives here.
"""
from .bcn import decode_bc1, decode_bc2, decode_bc3, bc_block_bytes
from .pixels import PIXEL_DECODERS, decode_pixels
from .png import rgba_to_image, rgba_to_png

__all__ = ["decode_bc1", "decode_bc2", "decode_bc3", "bc_block_bytes", "PIXEL_DECODERS",
           "decode_pixels", "rgba_to_image", "rgba_to_png"]
