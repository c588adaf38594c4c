"""The benchmark baselines measure the same work as the engine.

The hand-written decoders must build the very document the engine builds
(so "engine within 1.5x of hand-written" compares like with like), and the
Construct definitions derived from the layout must parse each corpus file to
its last byte.  The generated large inputs must round-trip.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus_paths import CORPUS_ROOT, ROOT
from handwritten import DECODERS, VIEW_DECODERS  # benchmarks/ (pytest pythonpath)
from potsherd import registry
from test_engine_differential import deep_diff

CORPUS = CORPUS_ROOT / "ko"


def corpus_files(ext: str) -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip("KO corpus not present at ../shared/corpus/ko")
    files = sorted(p for p in CORPUS.rglob(f"*.{ext}") if p.is_file())
    if not files:
        pytest.skip(f"no .{ext} files in the corpus")
    return files


@pytest.mark.parametrize("fmt", sorted(DECODERS))
def test_handwritten_builds_the_engine_document(fmt):
    codec = registry.get_codec(fmt)
    for p in corpus_files(fmt):
        data = p.read_bytes()
        doc = codec.decode(data)
        assert deep_diff(DECODERS[fmt](data), doc.root) is None, p.name


@pytest.mark.parametrize("fmt", sorted(DECODERS))
def test_construct_baseline_parses_corpus_to_the_end(fmt):
    pytest.importorskip("construct")
    from construct_baseline import ConstructLayout
    codec = registry.get_codec(fmt)
    clayout = ConstructLayout(codec.layout.rows)
    for p in corpus_files(fmt):
        data = p.read_bytes()
        params = {k: v for k, v in codec.decode(data).params.items() if k != "opaque"}
        assert clayout.parse_to_end(codec.root, data, **params) == len(data), p.name


@pytest.mark.parametrize("fmt", sorted(DECODERS))
def test_generated_inputs_round_trip(fmt):
    from generate import GENERATORS
    codec = registry.get_codec(fmt)
    small = {"n3pmesh": {"vertices": 500}, "n3cskins": {"vertices": 200}, "uif": {"nodes": 200}}
    data = GENERATORS[fmt](**small[fmt])
    doc = codec.decode(data)
    assert doc.trailing == b"" and not doc.warnings
    assert codec.encode(doc) == data
    assert deep_diff(DECODERS[fmt](data), doc.root) is None


def _same_values(view_doc: dict, root: dict) -> None:
    """The view decoder's document holds the engine's values: its structured
    arrays equal the engine's tables (or its lists of records, field by field)."""
    assert list(view_doc) == list(root)
    for k, v in view_doc.items():
        e = root[k]
        if isinstance(v, np.ndarray) and v.dtype.names:
            if isinstance(e, np.ndarray):
                assert v.tobytes() == e.tobytes(), k
            else:
                assert len(v) == len(e), k
                for row, rec in zip(v, e):
                    for n in v.dtype.names:
                        x = row[n]
                        want = rec[n]
                        got = bytes(x) if v.dtype[n].kind == "V" else x.item()
                        assert got == want or (got != got and want != want), (k, n)
        elif isinstance(v, np.ndarray):
            assert np.asarray(e).tobytes() == v.tobytes() and np.asarray(e).dtype == v.dtype, k
        else:
            assert v == e and type(v) is type(e), k


@pytest.mark.parametrize("fmt", sorted(VIEW_DECODERS))
def test_view_decoder_reads_the_engine_values(fmt):
    codec = registry.get_codec(fmt)
    for p in corpus_files(fmt):
        data = p.read_bytes()
        _same_values(VIEW_DECODERS[fmt](data), codec.decode(data).root)
    # negative control: one changed byte in the LOD table is seen
    data = bytearray(corpus_files(fmt)[0].read_bytes())
    data[-1] ^= 0x01
    with pytest.raises(AssertionError):
        _same_values(VIEW_DECODERS[fmt](bytes(data)), codec.decode(corpus_files(fmt)[0].read_bytes()).root)
