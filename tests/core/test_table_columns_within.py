"""Core hooks used by families: per-column JSON of a table, a bounded
sub-stream reader, and the compiled decoder run inside a family's storage."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from potsherd.core.errors import FormatError, JsonFormatError
from potsherd.core.limits import DEFAULT_LIMITS
from potsherd.core.expr import Scope
from potsherd.core.fastpath.compiled import fast_layout
from potsherd.core.layout import ColumnJson, JsonCtx, Layout, bounded_reader, reading
from potsherd.core.stream import Reader


class Upper(ColumnJson):
    """A 4-byte slot shown as upper-case text (anything visible will do)."""

    def to_json(self, col, ctx):
        return [bytes(x).rstrip(b"\0").decode().upper() for x in col]

    def from_json(self, o, dtype, ctx, jpath):
        if not isinstance(o, list):
            raise JsonFormatError("expected a list", path=jpath)
        return np.frombuffer(b"".join(x.lower().encode().ljust(4, b"\0") for x in o), dtype)


def layout(hook):
    spec = {"kind": "table", "count": "n", "format": "<4sH", "keys": "name v"}
    if hook:
        spec["columns"] = {"name": Upper()}
    return Layout({"root": [("n", "u8", "always"), ("t", spec, "always")]})


DATA = bytes([2]) + b"ab\0\0" + struct.pack("<H", 7) + b"cd\0\0" + struct.pack("<H", 9)


@pytest.mark.parametrize("form", ["wire", "readable"])
def test_column_hook_shapes_only_its_column(form):
    hooked, plain = layout(True), layout(False)
    v, end, _ = hooked.decode("root", DATA)
    ctx = JsonCtx(form)
    j = hooked.to_json("root", v, ctx)
    assert j["t"]["name"] == ["AB", "CD"]
    assert j["t"]["v"] == plain.to_json("root", v, ctx)["t"]["v"] == [7, 9]
    assert plain.to_json("root", v, ctx)["t"]["name"] == ["61620000", "63640000"]  # negative control
    back = hooked.from_json("root", j, ctx)
    assert hooked.encode("root", back) == DATA
    with pytest.raises(JsonFormatError, match="columns differ in length"):
        hooked.from_json("root", {"n": 2, "t": {"name": ["A"], "v": [1, 2]}}, ctx)


def test_decode_within_uses_the_callers_reader_and_scope():
    lay = layout(False)
    fast = fast_layout(lay)
    assert fast is not None
    buf = b"\xff\xff" + DATA + b"\xee"
    r = Reader(buf)
    sub = bounded_reader(r, 2, len(DATA))
    s = Scope({}, r)
    with reading(s, sub):
        assert s.reader is sub
        got = fast.decode_within("root", sub, s)
    assert s.reader is r
    assert got is not None and sub.pos == 2 + len(DATA) and len(s.frames) == 1
    assert got[0]["t"].tobytes() == DATA[1:]
    # bounded one byte short: declines and leaves reader, frames, warnings as they were
    short = bounded_reader(r, 2, len(DATA) - 1)
    s.warnings.append("before")
    assert fast.decode_within("root", short, s) is None
    assert short.pos == 2 and len(s.frames) == 1 and s.warnings == ["before"]


def test_the_compiled_decoder_reads_a_table_itself_and_agrees_with_the_reference():
    lay = layout(True)
    fast = fast_layout(lay)
    got = fast.decode("root", DATA, None, DEFAULT_LIMITS, 0)
    assert got is not None and got[0]["t"].tobytes() == DATA[1:]
    src = fast.source
    assert "_fbuf(buf" in src and ".decode(_R, _S)" not in src   # not delegated to Table.decode
    ref, _, _ = lay.decode("root", DATA, reference=True)
    assert ref["t"].dtype == got[0]["t"].dtype and ref["t"].tobytes() == got[0]["t"].tobytes()
    # a count past the input: proven short, and the reference fails too (negative control)
    assert fast.decode("root", bytes([3]) + DATA[1:], None, DEFAULT_LIMITS, 0) is False
    with pytest.raises(FormatError):
        lay.decode("root", bytes([3]) + DATA[1:], reference=True)
