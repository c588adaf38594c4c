"""Minimal inputs that once crashed a decoder (found by fuzzing), each pinned
to the clean FormatError it must give now: exact class and offset."""
import pytest

import potsherd
from potsherd import registry
from potsherd.core.errors import FormatError, InternalDecodeError


def refuse(data: bytes, fmt: str) -> FormatError:
    if fmt not in {c.name for c in registry.codecs()}:
        pytest.skip(f"codec {fmt} is not available")
    with pytest.raises(FormatError) as ei:
        potsherd.read(data, format=fmt)
    assert not isinstance(ei.value, InternalDecodeError), ei.value
    return ei.value


@pytest.mark.parametrize("data,offset", [
    (b'A: "abc', 3),        # unterminated string as a value
    (b"A: :", 3),           # a lone ':' as a value
    (b":", 0),              # a lone ':' where a node name is expected
    (b'"x', 0),             # an unterminated string where a node name is expected
    (b"A: 1 {\n :\n}", 8),  # inside a block
])
def test_fbx_ascii_unmatched_token_is_a_format_error(data, offset):
    # was: AttributeError: 'NoneType' object has no attribute 'lastgroup' (fbx/ascii.py)
    e = refuse(data, "fbx-ascii")
    assert type(e) is FormatError and e.offset == offset
    assert "unexpected" in e.message and e.expected
