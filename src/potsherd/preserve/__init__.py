"""Preservation: name every file in archivists' terms (``identify``), publish the
formats' signatures for DROID and FIDO (``signatures``), document the formats for
PRONOM (``pages``) and package a game as a BagIt archive (``bundle``).

Everything here is derived from what the codecs declare (extensions, magic bytes,
:class:`~potsherd.registry.Signature` version words), so a codec added to a
family or by a plugin is identified, signed and bundled without a list to edit.
"""
