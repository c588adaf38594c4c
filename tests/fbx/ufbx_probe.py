"""Run a ufbx query in a child process, retrying when the child crashes.

The ufbx Python binding (0.0.5) sometimes dies with a signal (seen: SIGSEGV
before printing anything) on files it reads fine on the next try.  The crash
is in the reference reader, not in potsherd: a garbage collection passing over
the binding's objects (13 of 30 runs of the writer tier's probe on one file
crashed inside json.dumps, 0 of 30 with the collector off).  So every probe
runs with the collector off (a child that exits right after answering), and a
crashed child is still run again (a few times) before the test gives up.
Assertions on the answer stay in the tests.
"""
from __future__ import annotations

import subprocess
import sys


def run_probe(script: str, args: list[str], *, attempts: int = 3, timeout: int = 120) -> str:
    """The first line the probe prints; retried only when the child was killed
    by a signal without answering."""
    run = None
    for _ in range(attempts):
        run = subprocess.run([sys.executable, "-c", "import gc; gc.disable()\n" + script, *args],
                             capture_output=True, text=True, timeout=timeout)
        out = run.stdout.strip()
        if out:
            return out.splitlines()[0]
        if run.returncode >= 0:  # an ordinary failure: report it at once
            break
    raise AssertionError(f"ufbx probe gave no answer (exit {run.returncode}): {run.stderr[-2000:]}")
