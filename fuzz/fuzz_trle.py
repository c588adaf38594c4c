"""Fuzz harness for the TRLE family (TR4 wad/swd/sfx/sam/was and .trwad).

Seeds (see ``fuzzlib.family_seeds``): files written by the project's own
encoders (``potsherd.examples``, zero-filled minimal files every codec
re-encodes exactly), real files from ``../shared/corpus/tr4wad`` when present,
and shrunk copies of the real files (lists and arrays cut, re-encoded).

    python fuzz/run.py --family trle --seconds 60
    python fuzz/fuzz_trle.py --seconds 60                 # the same
    python fuzz/fuzz_trle.py --engine atheris --seconds 300
"""
from __future__ import annotations

import sys
from pathlib import Path

FAMILY = "trle"


def seed_documents() -> dict:
    """Extra encoder-made seeds: JSON documents (or bytes) by name.  The game
    levels (2+ MB in the corpus) get minimal levels of each engine: every count
    zero, TR4/TR5 with their zlib chunks, one TRNG-encrypted."""
    return {f"{name}.{ext}": (lambda name=name: minimal_level(name))
            for name, ext in (("tr1", "phd"), ("tr2", "tr2"), ("tr3", "tr2"), ("tr4", "tr4"),
                              ("tr5", "trc"), ("tr4c", "tr4"))}


def minimal_level(engine: str) -> bytes:
    """A level of ``engine`` whose counts are all zero (the content record read
    from zeros, its trailing padding dropped), re-encoded by the codec."""
    import struct
    import zlib
    from potsherd.core.limits import DEFAULT_LIMITS
    from potsherd.formats.trle import trng
    from potsherd.formats.trle.levels import LEVEL_LAYOUT

    def content(record: str) -> bytes:
        root, _, _ = LEVEL_LAYOUT.decode(record, bytes(4096), {}, DEFAULT_LIMITS, [])
        root["extra"] = b"\x00" * 6
        end = b"\x00" if record.startswith("tr5") else b""
        root["sprite_marker"], root["texture_marker"] = b"SPR" + end, b"TEX" + end
        return LEVEL_LAYOUT.encode(record, root, {})

    def chunk(raw: bytes) -> bytes:
        z = zlib.compress(raw, 6)
        return struct.pack("<II", len(raw), len(z)) + z

    version = {"tr1": 0x20, "tr2": 0x2D, "tr3": 0xFF180038}
    if engine in version:
        root, _, _ = LEVEL_LAYOUT.decode(f"{engine}level", struct.pack("<I", version[engine])
                                         + bytes(20000), {}, DEFAULT_LIMITS, [])
        root.pop("extra", None)
        return LEVEL_LAYOUT.encode(f"{engine}level", root, {})
    import hashlib
    pixels = b"".join(hashlib.sha256(bytes([i])).digest() for i in range(8))  # incompressible
    head = b"TR4\x00" + struct.pack("<3H", 0, 0, 0) + chunk(pixels) * 3
    if engine == "tr5":
        level = content("tr5_level_data")
        return head + bytes(32) + struct.pack("<II", len(level), len(level)) + level + bytes(4)
    out = head + chunk(content("tr4_level_data") + pixels) + bytes(4)
    return trng.encrypt(out) if engine == "tr4c" else out


def shrink_document(doc):
    """A small wad from a real one: texture pages cut to 4 rows of one page (the
    page byte count follows), then the generic list/array cuts.  Texture
    records may then point past the pages: the decoder must not care."""
    import fuzzlib
    if doc.format != "tr4wad" or not isinstance(doc.root, dict) or "pages" not in doc.root:
        return None
    r = doc.root
    r["pages"] = bytes(r["pages"][:3 * 256 * 4])
    r["page_byte_count"] = len(r["pages"])
    if isinstance(r.get("meshes"), list) and len(r["meshes"]) > 3:
        # keep 3 meshes; the blob's word count follows (pointers may now dangle)
        from potsherd.formats.trle.moveables import mesh_size
        r["meshes"] = r["meshes"][:3]
        r["mesh_word_count"] = sum(mesh_size(m, True) for m in r["meshes"]) // 2
    small = fuzzlib.shrink_document(doc)
    if small is not None:
        return small
    return fuzzlib.stable_encoding(doc)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run
    sys.exit(run.main(["--family", FAMILY, *sys.argv[1:]]))
