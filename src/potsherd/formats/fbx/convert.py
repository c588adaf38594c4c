"""Former name of :mod:`.transcode` (kept so existing imports keep working)."""
from .transcode import *  # noqa: F401,F403
from .transcode import (_cli_params, _ensure_binary_header_nodes,  # noqa: F401
                        _real_version)
