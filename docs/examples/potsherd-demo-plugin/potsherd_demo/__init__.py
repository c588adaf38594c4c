"""The "demo points" format (``.dpts``) as a potsherd codec plugin.

A file is the magic ``DPTS``, a u16 version (1), a u32 point count and that many
points of three little-endian f32.  The layout below is the whole codec:
decode, encode, both JSON forms, byte spans for the viewer and error paths all
come from it.
"""
from potsherd.core.layout import Layout
from potsherd.families import Family
from potsherd.registry import ByteSequence, LayoutCodec, Signature

LAYOUT = Layout("\n".join([
    "points",
    'magic\t{"kind":"bytes","count":4}\t"always"',
    'version\t"u16"\t"always"',
    'count\t"u32"\t"always"',
    'points\t{"kind":"array","count":"count","item":"vec3"}\t"always"',
    "",
]))


class PointsCodec(LayoutCodec):
    """Every codec feature potsherd has is optional; this one reads, writes and
    dumps JSON (no glTF export: it declares no ``to_scene``)."""

    #: what identifies the format for ``potsherd identify`` and the DROID / FIDO
    #: signature files: the magic, and the version word after it
    signatures = (
        Signature("1", (ByteSequence(0, b"DPTS"), ByteSequence(4, b"\x01\x00"))),
        Signature("", (ByteSequence(0, b"DPTS"),)),      # any other version
    )

    def info(self, doc):
        return {"format": self.name, "family": self.family,
                "version": doc.root["version"], "points": doc.root["count"]}


CODECS = [PointsCodec("demopts", LAYOUT, "points", family="demo", extensions=(".dpts",),
                      magic=b"DPTS", description="Demo point cloud (potsherd plugin example)",
                      allow_trailing=True)]

#: the family descriptor the entry point names (its package lists CODECS)
FAMILY = Family("demo", "Demo formats (plugin example)", __name__, corpus=())
