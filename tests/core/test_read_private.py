"""``potsherd.read(path)`` decodes a file in place: a codec with
``private_input`` gets the file in a PrivateBuffer (memory only the document
holds) and its arrays are writable views of it, not copies.  What must not
change: the document (same values, types, bytes written back), independence
(an edit never reaches the caller's buffer or another document), and the
refusals (OS errors, FIFOs, devices, limits, format errors)."""
from __future__ import annotations

import errno
import os
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import api, registry
from potsherd.core.errors import FormatError, LimitError
from potsherd.core.fastpath import PrivateBuffer, reference_only
from potsherd.examples import write_examples

from corpus_paths import corpus_path

KO_CORPUS = corpus_path("ko")


@pytest.fixture()
def cube(tmp_path):
    return next(p for p in write_examples(str(tmp_path)) if p.endswith(".n3pmesh"))


def _arrays(doc):
    return {k: v for k, v in doc.root.items() if isinstance(v, np.ndarray)}


def _viewed_buffer(arr: np.ndarray):
    """The object whose memory ``arr`` views (None for an array owning its data)."""
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_read_path_arrays_are_writable_views_of_a_private_buffer(cube):
    doc = potsherd.read(cube)
    arrays = _arrays(doc)
    assert set(arrays) == {"vertices", "indices", "collapses", "indexChanges", "lods"}
    for name, arr in arrays.items():
        assert arr.flags.writeable, name
        if arr.size:
            assert type(_viewed_buffer(arr)) is PrivateBuffer, name
    # negative control: the bytes path still copies (arrays own their memory)
    from_bytes = registry.decode(open(cube, "rb").read(), path=cube)
    assert all(_viewed_buffer(a) is None for a in _arrays(from_bytes).values())


def test_an_edit_changes_exactly_those_bytes(cube):
    data = open(cube, "rb").read()
    doc = potsherd.read(cube)
    name_len, = struct.unpack_from("<i", data, 0)
    first_vertex = 4 + name_len + 24
    doc.root["vertices"][1] = 123.5
    doc.root["indices"][0] = 7
    out = potsherd.write(doc)
    assert len(out) == len(data)
    changed = [i for i in range(len(data)) if out[i] != data[i]]
    want = bytearray(data)
    want[first_vertex + 4:first_vertex + 8] = struct.pack("<f", 123.5)
    idx = first_vertex + 4 * 8 * doc.root["vertexCount"]
    want[idx:idx + 2] = struct.pack("<H", 7)
    assert out == bytes(want)
    assert changed and all(first_vertex + 4 <= i < idx + 2 for i in changed)
    assert open(cube, "rb").read() == data  # the file is untouched


def test_two_reads_of_one_file_share_no_memory(cube):
    a, b = potsherd.read(cube), potsherd.read(cube)
    for name, x in _arrays(a).items():
        for y in _arrays(b).values():
            assert not np.shares_memory(x, y), name
    before = bytes(b.root["vertices"].tobytes())
    a.root["vertices"][:] = 0
    assert b.root["vertices"].tobytes() == before


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_a_callers_buffer_is_never_aliased(cube, kind):
    raw = open(cube, "rb").read()
    buf = kind(bytearray(raw)) if kind is memoryview else kind(raw)
    for doc in (potsherd.read(buf, "n3pmesh"), registry.decode(buf, format="n3pmesh")):
        for name, arr in _arrays(doc).items():
            assert arr.flags.writeable, name
            assert not np.shares_memory(arr, np.frombuffer(buf, np.uint8)), name
            arr.view(np.uint8).fill(0xAB)
        assert bytes(buf) == raw


def test_a_private_buffer_on_the_reference_decoder_gives_the_same_document(cube):
    data = open(cube, "rb").read()
    want = registry.decode(data, path=cube)
    with reference_only():
        got = potsherd.read(cube)
    assert got.encode() == data == potsherd.read(cube).encode()
    assert type(got.root["name"]) is type(want.root["name"])
    for name, arr in _arrays(got).items():
        assert arr.flags.writeable and arr.dtype == want.root[name].dtype, name


def test_truncated_file_fails_with_the_same_error_as_bytes(cube, tmp_path):
    data = open(cube, "rb").read()
    cut = tmp_path / "cut.n3pmesh"
    cut.write_bytes(data[:-5])
    with pytest.raises(FormatError) as from_bytes:
        registry.decode(data[:-5], path=str(cut))
    with pytest.raises(FormatError) as from_path:
        potsherd.read(cut)
    assert from_bytes.value.offset is not None and from_bytes.value.path
    assert (from_path.value.offset, from_path.value.path, from_path.value.message) == \
        (from_bytes.value.offset, from_bytes.value.path, from_bytes.value.message)


def test_trailing_bytes_and_opaque_bodies_are_bytes(cube, tmp_path):
    data = open(cube, "rb").read()
    longer = tmp_path / "longer.n3pmesh"
    longer.write_bytes(data + b"TAIL")
    doc = potsherd.read(longer)
    assert type(doc.trailing) is bytes and doc.trailing == b"TAIL"
    assert doc.encode() == data + b"TAIL"
    opaque = potsherd.read(cube, opaque=1)
    assert type(opaque.root["body"]) is bytes and opaque.encode() == data


def test_refusals_are_the_same(tmp_path, cube):
    missing = tmp_path / "missing.n3pmesh"
    with pytest.raises(FileNotFoundError) as e:
        potsherd.read(missing)
    assert e.value.filename == str(missing)
    folder = tmp_path / "folder.n3pmesh"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        potsherd.read(folder)
    assert e.value.filename == str(folder)
    if os.path.exists("/dev/null"):
        with pytest.raises(OSError) as e:
            potsherd.read("/dev/null", format="n3pmesh")
        assert e.value.errno == errno.EINVAL and e.value.filename == "/dev/null"
    size = os.path.getsize(cube)
    with pytest.raises(LimitError) as e:
        potsherd.read(cube, limits=api.make_limits(max_input=size - 1))
    assert f"input of {size} bytes exceeds the limit of {size - 1}" in str(e.value)
    assert potsherd.read(cube, limits=api.make_limits(max_input=size)).encode() == \
        open(cube, "rb").read()


def test_a_fifo_is_still_read_to_its_end(tmp_path, cube):
    data = open(cube, "rb").read()
    fifo = tmp_path / "pipe.n3pmesh"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed)
    t.start()
    try:
        doc = potsherd.read(fifo)
    finally:
        t.join(10)
    assert doc.encode() == data


def _same_shape(a, b, where="$"):
    """Same keys, lengths, leaf types and values; arrays equal in dtype and bytes."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes() and a.flags.writeable and b.flags.writeable, where
    elif isinstance(a, dict):
        assert type(b) is type(a) and list(a) == list(b), where   # (dict, or a subclass)
        for k in a:
            _same_shape(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert type(b) is type(a) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same_shape(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b), where
        if isinstance(a, float) and a != a:
            assert struct.pack("<d", a) == struct.pack("<d", b), where
        else:
            assert a == b, where


@pytest.mark.skipif(not KO_CORPUS.is_dir(), reason="no KO corpus")
def test_every_ko_corpus_file_reads_in_place_as_from_bytes():
    files = [p for p in sorted(Path(KO_CORPUS).rglob("*")) if p.is_file()
             and registry.codec_before_reading(str(p)) is not None]
    assert len(files) > 100
    in_place = 0
    for p in files:
        data = p.read_bytes()
        try:
            want = registry.decode(data, path=str(p))
        except FormatError:
            with pytest.raises(FormatError):
                potsherd.read(p)
            continue
        got = potsherd.read(p)
        assert got.format == want.format and got.params == want.params, p
        assert got.warnings == want.warnings and bytes(got.trailing) == bytes(want.trailing), p
        _same_shape(want.root, got.root, str(p))
        assert got.encode() == data, p
        in_place += any(_viewed_buffer(a) is not None for a in _arrays(got).values())
    assert in_place > 10  # the in-place path was taken, not only the fallback


def test_short_reads_are_continued_and_a_shrunk_file_gives_what_was_read(cube, monkeypatch):
    data = open(cube, "rb").read()
    real = os.readv
    calls = []

    def dribble(fd, buffers):  # at most 7 bytes per call, as a slow file system may
        calls.append(1)
        (buf,) = buffers
        with memoryview(buf) as view:
            return real(fd, [view[:7]])

    monkeypatch.setattr(api.os, "readv", dribble)
    got = api.read_input(cube, stdio=False, private=True)
    assert type(got) is PrivateBuffer and bytes(got) == data and len(calls) > len(data) // 7
    served = []

    def shrinking(fd, buffers):  # the file ends early: 10 bytes, then the end
        served.append(1)
        return real(fd, [memoryview(buffers[0])[:10]]) if len(served) == 1 else 0

    monkeypatch.setattr(api.os, "readv", shrinking)
    assert bytes(api.read_input(cube, stdio=False, private=True)) == data[:10]


def _outcome(fn):
    try:
        doc = fn()
    except FormatError as e:
        return ("error", type(e), e.offset, e.path, e.message)
    return ("doc", doc)


def test_mutated_files_read_in_place_as_from_bytes(cube, tmp_path):
    data = open(cube, "rb").read()
    target = tmp_path / "mutated.n3pmesh"
    errors = docs = 0
    for pos in range(min(len(data), 80)):
        for byte in (0xFF, 0x7F, 0x00):
            mutated = bytearray(data)
            mutated[pos] = byte
            target.write_bytes(mutated)
            want = _outcome(lambda: registry.decode(bytes(mutated), path=str(target)))
            got = _outcome(lambda: potsherd.read(target))
            assert got[0] == want[0], (pos, byte, want)
            if want[0] == "error":
                errors += 1
                assert got == want, (pos, byte)
            else:
                docs += 1
                _same_shape(want[1].root, got[1].root, f"byte {pos}={byte}")
                assert got[1].encode() == bytes(mutated) and got[1].warnings == want[1].warnings
    assert errors > 20 and docs > 20  # both outcomes exercised


def test_a_device_is_refused_without_being_opened(monkeypatch, cube):
    """Opening a device can act (a watchdog starts, a tape rewinds): the private
    read checks the kind of file before it opens anything."""
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null here")
    opened = []
    real_open = os.open

    def spy(path, *a, **k):
        opened.append(os.fspath(path))
        return real_open(path, *a, **k)
    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(OSError) as e:
        potsherd.read("/dev/null", format="n3pmesh")
    assert e.value.errno == errno.EINVAL
    assert "/dev/null" not in opened
    potsherd.read(cube)
    assert str(cube) in opened  # (negative control: a regular file is opened by the spy)
