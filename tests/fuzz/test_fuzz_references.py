"""The referenced-file rule under fuzzing (fuzz/fuzz_refs.py): random hostile
reference strings through every reader of referenced files, in a tree with a
marker file outside it (and a FIFO and links inside)."""
from __future__ import annotations

import os
import random

import fuzz_refs


def test_fuzzed_references_stay_inside_and_raise_only_format_errors(tmp_path):
    inputs = int(os.environ.get("POTSHERD_FUZZ_INPUTS", "400"))
    model, marker = fuzz_refs.make_tree(tmp_path)
    rng = random.Random(35)
    for _ in range(inputs):
        fuzz_refs.check_one(model, marker, fuzz_refs.reference(rng))


def test_the_harness_sees_a_leak(tmp_path, monkeypatch):
    """Negative control: a resolver that follows links out is caught."""
    import pytest
    from potsherd import resolve
    model, marker = fuzz_refs.make_tree(tmp_path)
    monkeypatch.setattr(resolve.Resolver, "_ok", lambda self, hit: hit is not None)
    with pytest.raises(AssertionError):
        fuzz_refs.check_one(model, marker, "link.bin")
