"""Format families; each subpackage lists its codecs in ``CODECS``."""
