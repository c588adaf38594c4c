"""Words for counted things in what potsherd prints ("1 file", "2 files"), in one place
so no command says "1 files"."""
from __future__ import annotations

from collections import Counter

#: nouns whose plural is not the noun plus "s"
_IRREGULAR = {"glTF file": "glTF files", "byte": "bytes", "was": "were"}


def plural(noun: str, n: int) -> str:
    """``noun`` for one, its plural otherwise."""
    if n == 1:
        return noun
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"


def count(n: int, noun: str) -> str:
    """``"1 file"``, ``"3 files"``."""
    return f"{n} {plural(noun, n)}"


def tally(reasons: Counter) -> str:
    """``"3 skipped (2 no codec for the file name, 1 FIFO)"``, or "" when nothing was."""
    total = sum(reasons.values())
    if not total:
        return ""
    parts = ", ".join(f"{n} {why}" for why, n in reasons.most_common())
    return f"{total} skipped ({parts})"
