"""Timing helpers shared by the benchmark scripts."""
from __future__ import annotations

import time
from typing import Callable


def best(fn: Callable[[], object], runs: int) -> float:
    """The smallest CPU time of ``runs`` calls: the figure a shared machine moves least."""
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)
