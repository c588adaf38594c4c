"""Reading inputs: exactly the file's bytes, memory following the bytes sent
(not the --max-input limit), and detection that picks the same codec as
trying every codec in turn."""
from __future__ import annotations

import os
import threading

import pytest

import potsherd
from potsherd import api, registry
from potsherd.core.errors import LimitError, UnknownFormatError
from potsherd.examples import write_examples


@pytest.fixture()
def cube(tmp_path):
    return next(p for p in write_examples(str(tmp_path)) if p.endswith(".n3pmesh"))


def test_regular_file_read_is_not_sized_by_the_limit(cube):
    # a limit of 1 TiB: one read(limit + 1) would ask the allocator for it and fail
    huge = api.make_limits(max_input=1 << 40)
    data = api.read_input(cube, huge, stdio=False)
    assert data == open(cube, "rb").read()
    doc = potsherd.read(cube, limits=huge)
    assert potsherd.write(doc) == data


def test_file_over_the_limit_is_refused_before_reading(cube):
    size = os.path.getsize(cube)
    with pytest.raises(LimitError) as e:
        api.read_input(cube, api.make_limits(max_input=size - 1), stdio=False)
    assert f"input of {size} bytes exceeds the limit of {size - 1}" in str(e.value)
    assert api.read_input(cube, api.make_limits(max_input=size), stdio=False) == \
        open(cube, "rb").read()


def test_read_stream_stops_one_byte_past_the_limit():
    import io
    stream = io.BytesIO(b"x" * 5000)
    assert api.read_stream(stream, 3000) == b"x" * 3001
    assert api.read_stream(io.BytesIO(b"abc"), 3000) == b"abc"
    assert api.read_stream(io.BytesIO(b""), 10) == b""


def test_fifo_larger_than_the_limit_is_refused(tmp_path):
    fifo = tmp_path / "pipe.n3pmesh"
    os.mkfifo(fifo)

    def feed(n):
        with open(fifo, "wb") as f:
            try:
                f.write(b"\0" * n)
            except BrokenPipeError:
                pass

    t = threading.Thread(target=feed, args=(3 << 20,))
    t.start()
    try:
        with pytest.raises(LimitError):
            api.read_input(str(fifo), api.make_limits(max_input=2 << 20), stdio=False)
    finally:
        t.join(10)
    t = threading.Thread(target=feed, args=(1234,))
    t.start()
    data = api.read_input(str(fifo), api.make_limits(max_input=2 << 20), stdio=False)
    t.join(10)
    assert data == b"\0" * 1234


def _detect_by_trying_every_codec(data, path):
    """The rule detect() implements, written as the plain scan over codecs."""
    codecs = registry.codecs()
    by_ext = [c for c in codecs if path and registry._ext_of(path) in c.extensions]
    for c in by_ext:
        if c.magic is not None and c.sniff(data):
            return c
    if not by_ext:
        for c in codecs:
            if c.magic is not None and c.sniff(data):
                return c
        return None
    return next((c for c in by_ext if c.magic is None), by_ext[0])


def test_detect_matches_the_scan_over_every_codec(tmp_path):
    samples = [open(p, "rb").read() for p in write_examples(str(tmp_path))]
    samples += [c.magic + b"\0" * 64 for c in registry.codecs() if c.magic]
    samples += [b"", b"\0" * 64]
    exts = sorted({e for c in registry.codecs() for e in c.extensions}) + [".unknown", ""]
    checked = 0
    for data in samples:
        for ext in exts:
            for path in (f"x{ext}", f"X{ext.upper()}", None):
                want = _detect_by_trying_every_codec(data, path)
                if want is None:
                    with pytest.raises(UnknownFormatError):
                        registry.detect(data, path)
                else:
                    assert registry.detect(data, path) is want, (data[:8], path)
                checked += 1
    assert checked > 100


def test_registering_a_codec_updates_detection():
    class Probe(registry.Codec):
        name = "test_probe_detect"
        family = "test"
        extensions = (".probedetect",)
        magic = b"PRBDETCT"

    assert not registry.known_extension("a.probedetect")
    probe = registry.register(Probe())
    try:
        assert registry.detect(b"PRBDETCT....", "a.probedetect") is probe
        assert registry.detect(b"PRBDETCT....") is probe
        assert registry.known_extension("a.probedetect")
    finally:
        del registry._CODECS[probe.name]  # removed behind register()'s back, as tests do
    assert not registry.known_extension("a.probedetect")
    with pytest.raises(UnknownFormatError):
        registry.detect(b"PRBDETCT....")
    registry._CODECS[probe.name] = probe  # and added the same way
    try:
        assert registry.detect(b"PRBDETCT....", "b.probedetect") is probe
    finally:
        del registry._CODECS[probe.name]


def test_import_is_light_and_subpackages_stay_reachable():
    """``import potsherd`` leaves numpy and the families unloaded (the CLI's
    --version relies on it); ``potsherd.registry`` still works without an import."""
    import subprocess
    import sys
    code = ("import sys, potsherd; light = 'numpy' not in sys.modules; "
            "n = len(potsherd.registry.codecs()); print(light, n > 10, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True", "True"]
    r = subprocess.run([sys.executable, "-m", "potsherd", "--version"], capture_output=True,
                       text=True, check=True)
    assert r.stdout == f"potsherd {potsherd.__version__}\n"
