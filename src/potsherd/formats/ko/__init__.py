"""Knight Online (N3 engine) codecs.

``codecs`` holds the record formats driven by the wire layout; ``textures``
holds the NTF texture formats (``.dxt``, ``.gtt``, ``.tct``) and the ``ntf``
storage the layout uses for terrain lightmaps; ``table`` the encrypted data
tables (``.tbl``); ``kotext`` the ``key = value`` text files (``.brd``,
``.lst``, ``.mcn``).
"""
from .codecs import CODECS as _RECORD_CODECS
from .textures import CODECS as _TEXTURE_CODECS
from .table import CODEC as _TABLE_CODEC
from .kotext import CODECS as _TEXT_CODECS

CODECS = [*_RECORD_CODECS, *_TEXTURE_CODECS, _TABLE_CODEC, *_TEXT_CODECS]
