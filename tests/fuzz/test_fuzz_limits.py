"""Safety limits: each one enforced where it matters, with exact errors, and
overridable through ``potsherd.read(..., limits=Limits(...))`` and the CLI."""
import struct
import time
import tracemalloc
import zlib

import pytest

import potsherd
from potsherd import registry
from potsherd.cli import main
from potsherd.core.compress import inflate, inflation_budget
from potsherd.core.errors import CountError, FormatError, LimitError, TruncatedError
from potsherd.core.layout import Layout
from potsherd.core.limits import DEFAULT_LIMITS, Limits
from potsherd.core.stream import Reader
from potsherd.registry import LayoutCodec

# a record that occupies no bytes, inside an array inside an array: both counts
# come from the 8-byte header, so nothing stops the product but the budget
NESTED_EMPTY = Layout("\n".join([
    "top",
    'outer\t"u32"\t"always"',
    'inner\t"u32"\t"always"',
    'rows\t{"kind":"array","count":"outer","item":"row"}\t"always"',
    "",
    "row",
    'cells\t{"kind":"array","count":"inner","item":"cell"}\t"always"',
    "",
    "cell",
    'maybe\t"u8"\t{"gt":["inner",4000000000]}',
]))

TREE = Layout("\n".join([
    "tree",
    'root\t"node"\t"always"',
    "",
    "node",
    'childCount\t"u8"\t"always"',
    'children\t{"kind":"array","count":"childCount","item":"node"}\t"always"',
]))

FLOATS = Layout('r\n\nn\t"i32"\t"always"\nxs\t{"kind":"array","count":"n","item":"f32"}\t"always"\n')

TEST_CODEC = LayoutCodec("limitstest", FLOATS, "r", family="test", extensions=[".limtest"])


@pytest.fixture
def codec():
    registry.register(TEST_CODEC)
    yield TEST_CODEC
    registry._CODECS.pop(TEST_CODEC.name, None)


def chain(depth: int) -> bytes:
    """A tree that is a single chain ``depth`` nodes deep."""
    return b"\x01" * (depth - 1) + b"\x00"


def test_defaults_are_documented_values():
    assert DEFAULT_LIMITS == Limits(max_depth=256, max_elements=1 << 28, max_inflated=1 << 30,
                                    max_inflation_ratio=1100, max_input=1 << 32)


# --- counts: checked against the bytes left, before allocating ----------------

def test_huge_count_is_refused_before_allocation():
    FLOATS.decode("r", struct.pack("<i", 1) + b"\x00" * 4)  # compile outside the measurement
    tracemalloc.start()
    try:
        with pytest.raises(CountError) as ei:
            FLOATS.decode("r", struct.pack("<i", 0x7FFFFFFF) + b"\x00" * 8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ei.value.offset == 4 and ei.value.path == "r.xs"
    assert peak < 1 << 20


def test_negative_count_reads_an_empty_array():
    v, end, _ = FLOATS.decode("r", struct.pack("<i", -1))
    assert v["xs"].size == 0 and end == 4


def test_nested_zero_size_items_are_bounded_by_the_input():
    # 65536 x 65536 empty cells would be 4 G dicts; the budget stops it early
    data = struct.pack("<II", 65536, 65536)
    NESTED_EMPTY.decode("top", struct.pack("<II", 1, 1))  # compile outside the measurement
    t0 = time.perf_counter()
    with pytest.raises(LimitError) as ei:
        NESTED_EMPTY.decode("top", data)
    assert time.perf_counter() - t0 < 2.0
    tracemalloc.start()
    try:
        with pytest.raises(LimitError):
            NESTED_EMPTY.decode("top", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
    # budget 65536 + 8 bytes: rows[0] and its 65536 cells, then 7 more cells
    assert ei.value.path == "top.rows[1].cells[7]" and ei.value.offset == 8
    assert "occupy no bytes" in ei.value.message


def test_zero_size_items_within_the_budget_still_decode():
    v, end, _ = NESTED_EMPTY.decode("top", struct.pack("<II", 3, 4))
    assert end == 8 and len(v["rows"]) == 3 and v["rows"][2]["cells"] == [{}] * 4
    assert NESTED_EMPTY.encode("top", v) == struct.pack("<II", 3, 4)


def test_count_of_zero_size_items_larger_than_input_plus_slack_is_a_count_error():
    with pytest.raises(CountError) as ei:
        NESTED_EMPTY.decode("top", struct.pack("<II", 70000 + 8, 1))
    assert ei.value.offset == 8 and ei.value.found == 70008


def test_max_elements_limits_every_array():
    data = struct.pack("<i", 4) + struct.pack("<4f", 1, 2, 3, 4)
    FLOATS.decode("r", data)  # fine by default
    with pytest.raises(LimitError) as ei:
        FLOATS.decode("r", data, limits=Limits(max_elements=3))
    assert ei.value.found == 4 and ei.value.path == "r.xs" and ei.value.offset == 4


def test_reader_check_count_orders_checks():
    r = Reader(b"\x00" * 16, limits=Limits(max_elements=2))
    with pytest.raises(CountError):
        r.check_count(-1, 4)
    with pytest.raises(CountError):
        r.check_count(5, 4)        # more than the bytes left: a count error first
    with pytest.raises(LimitError):
        r.check_count(3, 4)        # fits the bytes, exceeds the limit
    r.check_count(2, 4)


@pytest.mark.parametrize("count", [float("inf"), float("nan"), "x"])
def test_byte_count_that_is_not_a_number_is_refused(count):
    L = Layout('r\n\nn\t"f32"\t"always"\nb\t{"kind":"bytes","count":{"float":"n"}}\t"always"\n')
    from potsherd.core.layout import _byte_count
    with pytest.raises(CountError):
        _byte_count(count, 3)
    # through the layout: an f32 count of +inf
    with pytest.raises(CountError) as ei:
        L.decode("r", struct.pack("<f", float("inf")) + b"abc")
    assert ei.value.offset == 4 and ei.value.path == "r.b"


# --- depth ------------------------------------------------------------------

def test_max_depth_stops_deep_nesting_with_its_offset():
    with pytest.raises(LimitError) as ei:
        TREE.decode("tree", chain(300))
    assert "256" in ei.value.message
    v, end, _ = TREE.decode("tree", chain(300), limits=Limits(max_depth=400))
    assert end == 300
    with pytest.raises(LimitError):
        TREE.decode("tree", chain(20), limits=Limits(max_depth=10))


def test_nesting_deeper_than_python_allows_is_a_format_error_not_a_crash():
    # raising the limit past what recursion allows must still end cleanly
    with pytest.raises(FormatError) as ei:
        TREE.decode("tree", chain(50000), limits=Limits(max_depth=10 ** 6))
    assert not isinstance(ei.value, TruncatedError)


# --- inflation --------------------------------------------------------------

def test_inflate_bomb_is_stopped_at_the_cap():
    bomb = zlib.compress(b"\x00" * (16 << 20), 9)  # ~16 KiB that inflates to 16 MiB
    tracemalloc.start()
    try:
        with pytest.raises(LimitError) as ei:
            inflate(bomb, limits=Limits(max_inflated=1 << 20), offset=100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ei.value.offset == 100
    assert peak < 4 << 20


def test_inflate_ratio_limit_uses_the_input_size():
    payload = zlib.compress(b"\x00" * (3 << 20))
    assert inflation_budget(1000, Limits(max_inflation_ratio=1000)) == 1000 * 1000 + (1 << 20)
    with pytest.raises(LimitError):
        inflate(payload, input_size=1000, limits=Limits(max_inflation_ratio=1000))
    assert len(inflate(payload, input_size=1000, limits=Limits(max_inflation_ratio=3000))) == 3 << 20


def test_inflate_checks_the_announced_size():
    payload = zlib.compress(b"abcdef" * 10)
    assert inflate(payload, expected_size=60) == b"abcdef" * 10
    with pytest.raises(FormatError) as ei:
        inflate(payload, expected_size=59, offset=7)
    assert "more than the announced 59" in ei.value.message and ei.value.offset == 7
    with pytest.raises(LimitError):
        inflate(payload, expected_size=1 << 40)
    with pytest.raises(FormatError, match="truncated"):
        inflate(payload[:-6], expected_size=60)
    with pytest.raises(FormatError, match="invalid zlib"):
        inflate(b"\x78\x9c\xff\xff\xff", expected_size=60)


# --- input size, and the API / CLI overrides --------------------------------

def test_max_input_through_the_api(codec, tmp_path):
    data = struct.pack("<i", 2) + struct.pack("<2f", 1, 2)
    p = tmp_path / "a.limtest"
    p.write_bytes(data)
    assert potsherd.read(p).root["n"] == 2
    for src in (p, data):
        with pytest.raises(LimitError) as ei:
            potsherd.read(src, format="limitstest", limits=Limits(max_input=8))
        assert ei.value.offset == 0 and "12 bytes" in ei.value.message


def test_limits_keyword_reaches_the_decoder(codec):
    data = struct.pack("<i", 4) + struct.pack("<4f", 1, 2, 3, 4)
    with pytest.raises(LimitError):
        potsherd.read(data, format="limitstest", limits=Limits(max_elements=2))
    assert potsherd.read(data, format="limitstest", limits=Limits(max_elements=4)).root["n"] == 4


def test_cli_limit_flags(codec, tmp_path, capsys):
    p = tmp_path / "a.limtest"
    p.write_bytes(struct.pack("<i", 4) + struct.pack("<4f", 1, 2, 3, 4))
    assert main(["validate", str(p)]) == 0
    capsys.readouterr()
    assert main(["validate", "--max-elements", "3", str(p)]) == 1
    assert "exceeds the limit of 3 elements" in capsys.readouterr().out
    assert main(["info", "--max-input", "10", str(p)]) == 1
    assert "exceeds the limit of 10" in capsys.readouterr().err
    assert main(["dump", "--max-elements", "4", str(p)]) == 0
