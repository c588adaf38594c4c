"""Truncation tier: every proper prefix of each small seed (encoder-made files
and corpus files under 4 KiB) is refused with a FormatError whose offset lies
inside the input, or - where the format allows a shorter file - decodes to a
document that re-encodes to exactly that prefix.

Prefixes are taken at every offset while a family's budget allows, then with
a stride (``python fuzz/run.py --truncate`` does every offset of every file).
"""
import os

import pytest

from fuzz_support import FAMILIES, TIME_LIMIT, describe, family_context, fuzzlib, seeds

#: prefixes checked per family
BUDGET = int(os.environ.get("POTSHERD_FUZZ_TRUNCATIONS", "12000"))
SMALL = 4096


def plan(family_seeds, budget):
    """(seed, stride) for the small seeds: every offset while the budget lasts,
    the rest spread evenly (never more than 64 prefixes skipped in a row)."""
    small = sorted((s for s in family_seeds if len(s.data) < SMALL), key=lambda s: len(s.data))
    total = sum(len(s.data) for s in small)
    if total <= budget:
        return [(s, 1) for s in small]
    out = []
    left = budget
    for i, s in enumerate(small):
        share = max(1, left // (len(small) - i))
        stride = max(1, min(64, -(-len(s.data) // share)))
        out.append((s, stride))
        left -= len(s.data) // stride
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_every_truncation_is_refused_or_a_shorter_valid_file(family):
    fam_seeds = list(seeds(family))
    todo = plan(fam_seeds, BUDGET)
    if not todo:
        pytest.skip(f"no small seed for {family} yet")
    findings, refused, valid, bad_offsets = [], 0, 0, []
    with family_context(family):
        for seed, stride in todo:
            for cut in fuzzlib.truncations(seed.data, stride):
                out = fuzzlib.check_input(seed.codec, cut, time_limit=TIME_LIMIT, json_check=False)
                if out.finding is not None:
                    findings.append(out.finding)
                    continue
                if out.decoded:
                    valid += 1
                else:
                    refused += 1
    assert not findings, describe(findings)
    assert refused > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_truncation_errors_point_inside_the_input(family):
    """The offset of the error is where the decoder stopped: within the prefix."""
    fam_seeds = [s for s in seeds(family) if len(s.data) < SMALL][:12]
    if not fam_seeds:
        pytest.skip(f"no small seed for {family} yet")
    bad = []
    with family_context(family):
        for seed in fam_seeds:
            step = max(1, len(seed.data) // 64)
            for cut in fuzzlib.truncations(seed.data, step):
                try:
                    fuzzlib.registry.decode(cut, format=seed.codec)
                except fuzzlib.FormatError as e:
                    if e.offset is None or not 0 <= e.offset <= len(cut):
                        bad.append((seed.origin, len(cut), type(e).__name__, e.offset, str(e)[:120]))
    assert not bad, bad[:10]


def test_plan_covers_every_offset_within_budget():
    class S:
        def __init__(self, n):
            self.data = b"x" * n
    p = plan([S(10), S(20), S(5000)], 100)
    assert [(len(s.data), k) for s, k in p] == [(10, 1), (20, 1)]
    p = plan([S(100), S(200)], 150)
    assert sum(len(s.data) // k for s, k in p) <= 150 + 2
    assert all(k <= 64 for _, k in p)
