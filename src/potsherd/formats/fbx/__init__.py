"""Autodesk FBX: binary (every version, either byte order) and ASCII, byte-exact,
transcoded between them (``transcode.py``; ``upgrade.py`` is the codec's entry point,
upgrading pre-7.1 files through the scene) and a node-tree JSON form."""
from .codecs import CODECS, FbxAsciiCodec, FbxBinaryCodec
from .model import FbxArray, FbxNode

__all__ = ["CODECS", "FbxAsciiCodec", "FbxBinaryCodec", "FbxArray", "FbxNode"]
