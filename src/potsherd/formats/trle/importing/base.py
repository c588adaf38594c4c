"""What the TRLE importer refuses and the engine bounds it checks against (game frame
rate, 16-bit frame numbers, sampled transforms), shared by its modules."""
from __future__ import annotations

from ....core.errors import FormatError


FPS = 30.0


MAX_BAKED = 64


#: frame numbers are u16: an animation cannot span more game frames
MAX_GAME_FRAMES = 0xFFFF


#: keyframes x nodes of one animation sampled at once (bounds memory: 4x4 doubles each)
MAX_SAMPLED_TRANSFORMS = 4_000_000


class ImportRefused(FormatError):
    """The scene cannot become a TR4 moveable."""
