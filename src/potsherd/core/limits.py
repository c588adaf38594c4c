"""Safety limits shared by every decoder.

A decode of an N-byte file must never allocate much more than a small multiple
of N, whatever the counts inside say.  Counts are checked against the bytes
left *before* anything is allocated; these limits bound the rest (nesting,
inflation of compressed data, element counts of zero-size items).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    #: deepest nesting of records / nodes / blocks
    max_depth: int = 256
    #: most elements in one array (also bounds arrays of zero-byte items)
    max_elements: int = 1 << 28
    #: largest inflated size of one compressed payload (bytes)
    max_inflated: int = 1 << 30
    #: inflated payload may be at most this many times the input size (+1 MiB)
    max_inflation_ratio: int = 1100
    #: largest input accepted at all (bytes)
    max_input: int = 1 << 32
    #: most bytes one document may expand to in total (all its compressed arrays
    #: inflated, all an archive's members extracted); None: ``max_inflated`` and
    #: ``document_ratio`` x its size + 64 MiB, whichever is smaller
    max_document_inflated: "int | None" = None
    #: what a document may expand to per byte of its own size (see above)
    document_ratio: int = 8

    def document_budget(self, input_size: int) -> int:
        """Most bytes a document of ``input_size`` bytes may expand to in total
        (amplification: many small bombs under the per-payload limits)."""
        if self.max_document_inflated is not None:
            return self.max_document_inflated
        return min(self.max_inflated, self.document_ratio * input_size + (64 << 20))

    def replace(self, **changes) -> "Limits":
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()
