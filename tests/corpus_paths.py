"""Where the real-file corpus lives, for the test modules and ``conftest.py``: one place
instead of a path computed in every module.  The corpus is ``../shared/corpus/`` beside
the checkout; a family's folders come from its descriptor in :mod:`potsherd.families`."""
from __future__ import annotations

from pathlib import Path

from potsherd import families

ROOT = Path(__file__).resolve().parents[1]
CORPUS_ROOT = ROOT.parent / "shared" / "corpus"


def corpus_path(name: str) -> Path:
    """A corpus folder (it may not exist): a family's main one by family name
    (``darkstar`` -> ``dts``), else the folder of that name (``darkstar-world``, ``glb``)."""
    try:
        return families.family(name).corpus_dirs(CORPUS_ROOT)[0]
    except KeyError:
        return CORPUS_ROOT / name
