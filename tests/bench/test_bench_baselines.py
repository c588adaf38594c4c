"""The benchmark baselines measure the same work as the engine.

The hand-written decoders must build the very document the engine builds
(so "engine within 1.5x of hand-written" compares like with like), and the
Construct definitions derived from the layout must parse each corpus file to
its last byte.  The generated large inputs must round-trip.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from corpus_paths import CORPUS_ROOT, ROOT
from handwritten import DECODERS            # benchmarks/ (pytest pythonpath)
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
