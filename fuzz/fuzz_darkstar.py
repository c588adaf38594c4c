"""Fuzz harness for the Darkstar family (DTS shapes and DML material lists: PERS blocks).

Seeds (see ``fuzzlib.family_seeds``): files written by the project's own
encoders (``potsherd.examples``, zero-filled minimal files every codec
re-encodes exactly), real files from ``../shared/corpus/dts`` when present,
and shrunk copies of the real files (lists and arrays cut, re-encoded).

    python fuzz/run.py --family darkstar --seconds 60
    python fuzz/fuzz_darkstar.py --seconds 60                 # the same
    python fuzz/fuzz_darkstar.py --engine atheris --seconds 300
"""
from __future__ import annotations

import sys
from pathlib import Path

FAMILY = "darkstar"


def seed_documents() -> dict:
    """Extra encoder-made seeds: JSON documents (or bytes) by name.  The world
    formats (bitmaps, palettes, volumes, interiors) have no corpus folder of this
    family, so each gets a small file made by potsherd's encoders."""
    try:
        from potsherd.formats.darkstar.world_examples import seed_files
    except ImportError:  # older trees
        return {}
    return {name: (lambda data=data: data) for name, data in seed_files().items()}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run
    sys.exit(run.main(["--family", FAMILY, *sys.argv[1:]]))
