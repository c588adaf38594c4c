"""Bounded decompression shared by every family.

``zlib.decompress`` trusts the stream: a 1 KiB "zip bomb" inflates to
gigabytes.  :func:`inflate` stops as soon as the output would pass the size the
caller expects (when the format states it) and, in any case, the limits
``max_inflated`` and ``max_inflation_ratio`` x input size (+ 1 MiB).
"""
from __future__ import annotations

import zlib

from .errors import FormatError, LimitError
from .limits import DEFAULT_LIMITS, Limits


class DocumentBudget:
    """What one document may still expand to, shared by all its compressed
    payloads (:meth:`Limits.document_budget`): a file of many small bombs,
    each under the per-payload limits, is refused once their sum passes it."""

    __slots__ = ("total", "left")

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total

    def charge(self, n: int, offset: int | None = None, what: str = "compressed data") -> None:
        if n > self.left:
            raise LimitError(f"{what} would expand to more than {self.total} bytes in total for "
                             f"this document (raise max_inflated / --max-inflated)", offset=offset,
                             expected=f"<= {self.total}", found=self.total - self.left + n)
        self.left -= n


def inflation_budget(input_size: int, limits: Limits = DEFAULT_LIMITS) -> int:
    """Most bytes one payload may inflate to, for an input of ``input_size`` bytes."""
    return min(limits.max_inflated, limits.max_inflation_ratio * input_size + (1 << 20))


def inflate(payload: bytes, *, expected_size: int | None = None, input_size: int | None = None,
            limits: Limits = DEFAULT_LIMITS, offset: int | None = None, wbits: int = zlib.MAX_WBITS,
            what: str = "compressed payload") -> bytes:
    """Inflate a zlib stream without ever holding more than the allowed output.

    ``expected_size``: the size the format announces; more output is an error
    (checked before it is produced).  ``input_size``: the size of the whole
    file, for the ratio limit (defaults to the payload size).
    ``offset``: where the payload starts, for error messages.
    """
    budget = inflation_budget(len(payload) if input_size is None else input_size, limits)
    if expected_size is not None:
        if expected_size < 0:
            raise FormatError(f"{what}: negative inflated size {expected_size}", offset=offset)
        if expected_size > budget:
            raise LimitError(f"{what}: announced inflated size {expected_size} exceeds the limit of "
                             f"{budget} bytes (raise max_inflated / --max-inflated)",
                             offset=offset, expected=f"<= {budget}", found=expected_size)
        cap = expected_size
    else:
        cap = budget
    d = zlib.decompressobj(wbits)
    try:
        # one byte more than allowed tells "too big" from "exactly the cap"
        out = d.decompress(payload, cap + 1)
    except zlib.error as e:
        raise FormatError(f"{what}: invalid zlib stream ({e})", offset=offset) from None
    if len(out) > cap:
        if expected_size is not None:
            raise FormatError(f"{what} inflates to more than the announced {expected_size} bytes",
                              offset=offset, expected=expected_size, found=f"> {expected_size}")
        raise LimitError(f"{what} inflates to more than {cap} bytes (raise max_inflated / "
                         f"--max-inflated)", offset=offset, expected=f"<= {cap}")
    if not d.eof:
        raise FormatError(f"{what}: zlib stream is truncated", offset=offset)
    return out
