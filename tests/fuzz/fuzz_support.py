"""Shared setup of the fuzz test tier: imports the engine in ``fuzz/`` and
caches the seeds of each family for the session."""
from __future__ import annotations

import contextlib
import functools
import os

import fuzz_core  # the engine in fuzz/ (on the path through pyproject's pytest pythonpath)
import fuzzlib

FAMILIES = ("core",) + fuzzlib.FAMILIES
#: inputs per family in the mutation tier (raise it for a longer local run)
INPUTS = int(os.environ.get("POTSHERD_FUZZ_INPUTS", "3000"))
#: wall-clock cap per family, so a loaded machine still finishes in time
SECONDS = float(os.environ.get("POTSHERD_FUZZ_SECONDS", "20"))
#: slowest acceptable input
TIME_LIMIT = 2.0
#: the fixed random seed of the tier
RNG_SEED = 20261130


@contextlib.contextmanager
def family_context(family: str):
    """The synthetic ``core`` family is registered only while it is fuzzed."""
    if family == "core":
        with fuzz_core.registered():
            yield
    else:
        yield


@functools.lru_cache(maxsize=None)
def seeds(family: str) -> tuple:
    """Small seeds of a family: encoder-made ones, corpus files up to 8 KiB, and
    shrunk copies of corpus files up to 96 KiB."""
    with family_context(family):
        if family != "core" and not fuzzlib.codecs_of(family):
            return ()
        return tuple(fuzzlib.family_seeds(family, max_size=8 << 10, shrink_max=96 << 10))


def describe(findings) -> str:
    lines = []
    for f in findings[:10]:
        lines.append(f"{f.kind} in {f.codec} ({len(f.data)} bytes, input {f.data[:48].hex()}...):\n"
                     + "\n".join(f.detail.splitlines()[-6:]))
    return "\n\n".join(lines)
