"""The Darkstar LZH stream: round trips (property), the engine's own streams
re-encoded byte for byte (corpus), bounded expansion, hostile streams refused,
LZH volume members listed, extracted and re-packed."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

import potsherd
from potsherd.core.errors import FormatError, LimitError, TruncatedError
from potsherd.core.limits import Limits
from potsherd.formats.darkstar import lzh
from potsherd.formats.darkstar.volumes import build_volume, list_members

from corpus_paths import CORPUS_ROOT

TRIBES = CORPUS_ROOT / "tribes" / "base"


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=1, max_size=3000))
def test_decode_inverts_encode(data):
    stream = lzh.encode(data)
    out, used = lzh.decode(stream, len(data))
    assert out == data
    assert used == len(stream)          # the reader stops exactly where the writer did


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([b"ab", b"abc", b"\0" * 70, b"xyz" * 30, b"q"]), max_size=200))
def test_repetitive_inputs_use_long_matches(parts):
    data = b"".join(parts)
    stream = lzh.encode(data)
    assert lzh.decode(stream + b"trailing", len(data))[0] == data
    if len(data) > 2000:
        assert len(stream) < len(data) // 4


def test_ring_wraps_and_tree_rebuilds():
    # > 4096 bytes wraps the ring; > 0x8000 symbols rebuilds the Huffman tree
    data = bytes((i * 7 + (i >> 9)) & 0xFF for i in range(70000))
    stream = lzh.encode(data)
    assert lzh.decode(stream, len(data)) == (data, len(stream))


def test_empty_stream_is_the_writers_terminator():
    assert lzh.encode(b"") == b"\x00"
    assert lzh.decode(b"\x00", 0) == (b"", 0)


def test_stream_claiming_more_than_it_can_hold_is_refused():
    stream = lzh.encode(b"A" * 100)
    with pytest.raises(FormatError) as e:
        lzh.decode(stream, lzh.max_output(len(stream)) + 1)
    assert e.value.offset == 0
    with pytest.raises(LimitError):
        lzh.decode(stream, 1000, limits=Limits(max_inflated=999))
    with pytest.raises(FormatError):
        lzh.decode(stream, -1)


def test_truncated_stream_is_refused_with_offset():
    data = bytes(range(256)) * 4
    stream = lzh.encode(data)
    with pytest.raises(TruncatedError) as e:
        lzh.decode(stream[:len(stream) // 2], len(data))
    assert e.value.offset == len(stream) // 2
    # negative control: the whole stream decodes
    assert lzh.decode(stream, len(data))[0] == data


@settings(max_examples=80, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.integers(0, 5000))
def test_random_streams_never_escape_format_errors(junk, size):
    try:
        out, used = lzh.decode(junk, size)
    except FormatError:
        return
    assert len(out) == size and used <= len(junk)


def test_lzh_volume_members_list_extract_and_repack():
    files = [("a.txt", b"hello hello hello hello"), ("b.bin", bytes(range(256)) * 20), ("e", b"")]
    data = build_volume(files, compress="lzh")
    doc = potsherd._registry.decode(data, path="x.vol")
    assert [(m.name, m.size, m.compression) for m in list_members(doc)] == [
        (n, len(d), "lzh") for n, d in files]
    for n, d in files:
        assert doc.codec.read_member(doc, n) == d
    assert doc.encode() == data
    # each block holds exactly the engine's stream
    blocks = [b for b in doc.root["blocks"] if "tag" in b]
    assert [b["data"] for b in blocks] == [lzh.encode(d) for _, d in files]


def test_lzh_member_claiming_too_much_is_refused():
    data = bytearray(build_volume([("a", b"x" * 50)], compress="lzh"))
    # the index's size column (last 5 bytes of the 17-byte record hold size, compression)
    idx = data.rfind(b"voli") + 8
    struct.pack_into("<I", data, idx + 12, 1 << 29)
    doc = potsherd._registry.decode(bytes(data), path="x.vol")
    with pytest.raises(FormatError):
        doc.codec.read_member(doc, "a")


@pytest.mark.corpus
@pytest.mark.slow
def test_engine_streams_reencode_byte_exactly():
    ted = TRIBES / "missions" / "TheRedSands.ted"
    if not ted.exists():
        pytest.skip("tribes corpus absent")
    dtb = potsherd.read_bytes(f"{ted}::TheRedSands#0.dtb") if hasattr(potsherd, "read_bytes") \
        else None
    if dtb is None:
        from potsherd.containers import read_input
        dtb = read_input(f"{ted}::TheRedSands#0.dtb")
    off = 0x34
    size = struct.unpack_from("<I", dtb, off)[0]
    off += 4
    height, used = lzh.decode(dtb, size, off)
    off += used
    size = struct.unpack_from("<I", dtb, off)[0]
    off += 4
    material, used = lzh.decode(dtb, size, off)
    assert lzh.encode(material) == dtb[off:off + used]


def _reference_decode(stream: bytes, size: int) -> tuple[bytes, int]:
    """The engine's reader written plainly (one bit at a time, a 4096-byte ring,
    the tree update as in the engine), to check the fast decoder against:
    returns the bytes and the stream bytes consumed (bits used, rounded up,
    plus the one byte the reader holds ahead); ValueError when it runs out."""
    freq, son, prnt = lzh._new_tree()
    bits = "".join(f"{b:08b}" for b in stream) + "0" * 64
    pos = 0

    def bit() -> int:
        nonlocal pos
        if pos >= len(bits):
            raise ValueError("runs out")
        pos += 1
        return int(bits[pos - 1])

    ring = bytearray(b" " * (lzh.N - lzh.F) + bytes(lzh.F))
    r = lzh.N - lzh.F
    out = bytearray()
    while len(out) < size:
        c = son[lzh.R]
        while c < lzh.T:
            c = son[c + bit()]
        c -= lzh.T
        if freq[lzh.R] == lzh.MAX_FREQ:
            lzh._reconst(freq, son, prnt)
        k = prnt[c + lzh.T]
        while True:          # the engine's update, step for step
            freq[k] += 1
            f = freq[k]
            l = k + 1
            if f > freq[l]:
                while f > freq[l + 1]:
                    l += 1
                freq[k], freq[l] = freq[l], f
                i = son[k]
                prnt[i] = l
                if i < lzh.T:
                    prnt[i + 1] = l
                j = son[l]
                son[l] = i
                prnt[j] = k
                if j < lzh.T:
                    prnt[j + 1] = k
                son[k] = j
                k = l
            k = prnt[k]
            if k == 0:
                break
        if c < 256:
            run = [c]
        else:
            hi = sum(bit() << (7 - n) for n in range(8))
            extra = lzh.D_LEN[hi] - 2
            low = hi
            for _ in range(extra):
                low = (low << 1) | bit()
            p = (lzh.D_CODE[hi] << 6) | (low & 0x3F)
            src = (r - p - 1) % lzh.N
            run = []
            for n in range(min(c - 253, size - len(out))):
                run.append(ring[(src + n) % lzh.N])
                ring[r] = run[-1]
                r = (r + 1) % lzh.N
            out += bytes(run)
            continue
        out += bytes(run)
        ring[r] = c
        r = (r + 1) % lzh.N
    used = (pos + 7) // 8 + 1
    if used > len(stream):
        raise ValueError("runs out")
    return bytes(out), used


@settings(max_examples=120, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(1, 3000))
def test_fast_decoder_agrees_with_the_plain_reader_on_any_stream(junk, size):
    """Arbitrary bytes (hostile or not): the same output and the same consumed
    count as the plain reader, or a refusal exactly when it runs out."""
    try:
        want = _reference_decode(junk, size)
    except ValueError:
        want = None
    if want is None:
        with pytest.raises(FormatError):
            lzh.decode(junk, size)
    else:
        assert lzh.decode(junk, size) == want


def test_fast_decoder_agrees_with_the_plain_reader_past_a_tree_rebuild():
    data = bytes((i * 131 + (i >> 7) * 17) & 0xFF for i in range(40000))
    stream = lzh.encode(data)
    assert _reference_decode(stream, len(data)) == lzh.decode(stream, len(data)) == (data, len(stream))
