"""Knight Online (N3 engine) codecs.

``codecs`` holds the record formats driven by the wire layout; ``textures``
holds the NTF texture formats (``.dxt``, ``.gtt``) and the ``ntf`` storage the
layout uses for terrain lightmaps.
"""
from .codecs import CODECS as _RECORD_CODECS
from .textures import CODECS as _TEXTURE_CODECS
from .table import CODEC as _TABLE_CODEC

CODECS = [*_RECORD_CODECS, *_TEXTURE_CODECS, _TABLE_CODEC]
