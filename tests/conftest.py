"""Shared test set-up: where the corpus lives, which optional tiers can run, and a closing
summary of the tiers that ran and those skipped for lack of the corpus or of a tool.

Tiers are pytest markers (registered in ``pyproject.toml``): ``corpus`` (real files from
``../shared/corpus/<family>/``), ``validator`` (Node + the Khronos glTF validator), ``blender``,
``chromium`` and ``slow``.  Tests of a corpus module are marked ``corpus`` automatically when the
module reads ``CORPUS``; run one tier with ``python3 -m pytest -m corpus`` or leave it out with
``-m "not corpus"``.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from corpus_paths import CORPUS_ROOT, ROOT, corpus_path  # noqa: F401  (shared with the tests)


@pytest.fixture
def corpus():
    """``corpus("ko")`` -> the family's corpus folder, or a clean skip when it is absent."""
    def get(family: str) -> Path:
        path = corpus_path(family)
        if not path.is_dir():
            pytest.skip(f"corpus {family!r} not present at {path}")
        return path
    return get


def _validator_available() -> bool:
    try:
        from potsherd.export.validate import validator_available
    except ImportError:
        return False
    return validator_available()


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "CORPUS"):
            item.add_marker(pytest.mark.corpus)


#: the tier a test's time is counted in: its first marker in this order, else "unit"
TIME_TIERS = ("blender", "chromium", "validator", "corpus", "security", "slow")
_tier_seconds: Counter = Counter()
_tier_tests: Counter = Counter()


def pytest_runtest_logreport(report):
    """Add each phase's duration to the test's tier (for the closing summary)."""
    tier = next((t for t in TIME_TIERS if t in report.keywords), "unit")
    _tier_seconds[tier] += report.duration
    if report.when == "call" or (report.when == "setup" and report.skipped):
        _tier_tests[tier] += 1


def _tier_of_skip(reason: str) -> str:
    text = reason.lower()
    for word, tier in (("corpus", "corpus"), ("validator", "validator"), ("node", "validator"),
                       ("blender", "blender"), ("chromium", "chromium"), ("browser", "chromium"),
                       ("root", "root"), ("mount", "root")):
        if word in text:
            return tier
    return "other"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    families = sorted(p.name for p in CORPUS_ROOT.iterdir() if p.is_dir()) \
        if CORPUS_ROOT.is_dir() else []
    tools = {
        "validator": _validator_available(),
        "blender": shutil.which("blender") is not None,
        "chromium": (shutil.which("chromium") or shutil.which("chromium-browser")) is not None,
    }
    skipped = Counter()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        skipped[_tier_of_skip(reason)] += 1
    write = terminalreporter.write_line
    write("")
    write("tiers: corpus " + (", ".join(families) if families
                              else f"absent (looked in {CORPUS_ROOT})"))
    write("tiers: " + ", ".join(f"{name} {'available' if ok else 'absent'}"
                               for name, ok in tools.items()))
    if skipped:
        write("tiers skipped: " + ", ".join(f"{tier} {n}" for tier, n in sorted(skipped.items())))
    else:
        write("tiers skipped: none")
    if _tier_tests:     # summed test time; under xdist or with parallel tests, not wall time
        write("tiers time: " + ", ".join(
            f"{t} {_tier_seconds[t]:.0f} s ({_tier_tests[t]} tests)"
            for t in ("unit",) + TIME_TIERS if _tier_tests[t]))
