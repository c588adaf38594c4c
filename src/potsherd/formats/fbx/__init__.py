"""Autodesk FBX: binary (every version, either byte order) and ASCII, byte-exact,
with conversion between them (see ``convert.py``) and a node-tree JSON form."""
from .codec import CODECS, FbxAsciiCodec, FbxBinaryCodec
from .model import FbxArray, FbxNode

__all__ = ["CODECS", "FbxAsciiCodec", "FbxBinaryCodec", "FbxArray", "FbxNode"]
