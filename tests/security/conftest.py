"""Helpers of the security tier: hostile files made by the tests themselves, the
command line run in a subprocess under an address-space limit and a timeout,
and a marker file outside the model's folder whose bytes must never come back."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import potsherd

SRC = str(Path(potsherd.__file__).resolve().parent.parent)
#: address space a hostile conversion may use (the issue's bound)
MEMORY = 2 << 30


def _limit_memory(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def run_potsherd(*args: str, timeout: float = 90, memory: int = MEMORY, cwd=None,
                 **popen) -> subprocess.CompletedProcess:
    """``python -m potsherd ARGS`` in a subprocess: at most ``memory`` bytes of
    address space, killed (the test fails) after ``timeout`` seconds."""
    env = dict(os.environ, PYTHONPATH=SRC, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "potsherd", *map(str, args)],
                          capture_output=True, timeout=timeout, env=env, cwd=cwd,
                          preexec_fn=_limit_memory(memory), **popen)


def outputs_of(folder: Path) -> bytes:
    """Every byte of every file below ``folder`` (what a conversion wrote)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def assert_clean(proc: subprocess.CompletedProcess, marker: bytes, *folders: Path) -> None:
    """No byte of the marker in the output files, stdout or stderr; no traceback."""
    text = proc.stdout + proc.stderr
    assert marker not in text and marker[:12] not in text
    assert b"Traceback" not in text, proc.stderr.decode(errors="replace")
    for f in folders:
        assert marker[:12] not in outputs_of(f)


@pytest.fixture
def marker(tmp_path) -> bytes:
    """Unique bytes in a file outside the model folder (tmp/outside/marker.bin)."""
    m = b"OUTSIDE-MARKER-" + os.urandom(8).hex().encode()
    out = tmp_path / "outside"
    out.mkdir()
    (out / "marker.bin").write_bytes(m * 8)
    return m
