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
    """Extra encoder-made seeds: JSON documents (or bytes) by name."""
    return {}


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
