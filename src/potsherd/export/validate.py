"""Run the official Khronos glTF validator (npm ``gltf-validator``) on files.

The validator is JavaScript run with the user's ``node`` (Node >= 14).  An installed
package carries it (``potsherd/_vendor/gltf-validator``, copied at build time by
``setup.py``); a checkout uses ``tools/gltf-validator`` after
``npm ci --prefix tools/gltf-validator``.  ``POTSHERD_GLTF_VALIDATOR`` names another
``validate.js`` (with ``node_modules/gltf-validator`` beside it) to override both.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from ..core.wording import count


class ValidatorUnavailable(RuntimeError):
    """Node or the gltf-validator package is not installed."""


def _repo_tool_dir() -> Path:
    # src/potsherd/export/validate.py -> repo root
    return Path(__file__).resolve().parents[3] / "tools" / "gltf-validator"


def _packaged_dir() -> Path:
    # src/potsherd/export/validate.py -> potsherd/_vendor/gltf-validator (a built package)
    return Path(__file__).resolve().parents[1] / "_vendor" / "gltf-validator"


def _script() -> Path:
    """The ``validate.js`` to run: the override, the packaged copy, the checkout's."""
    env = os.environ.get("POTSHERD_GLTF_VALIDATOR")
    if env:
        return Path(env)
    for folder in (_packaged_dir(), _repo_tool_dir()):
        if (folder / "node_modules" / "gltf-validator").is_dir():
            return folder / "validate.js"
    return _repo_tool_dir() / "validate.js"


def validator_command() -> list:
    """``[node, validate.js]``, or raise :class:`ValidatorUnavailable` saying what is missing."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise ValidatorUnavailable(
            "node is not installed; the Khronos glTF validator is JavaScript and runs with "
            "Node.js 14 or later: install it (e.g. apt install nodejs, or from nodejs.org) "
            "and put node on PATH")
    script = _script()
    override = bool(os.environ.get("POTSHERD_GLTF_VALIDATOR"))
    checkout = (script.parent / "package-lock.json").is_file()
    if override or checkout:
        if not script.is_file():
            raise ValidatorUnavailable(f"validator wrapper {script} not found")
        if not (script.parent / "node_modules" / "gltf-validator").is_dir():
            raise ValidatorUnavailable("npm package gltf-validator not installed; run: "
                                       f"npm ci --prefix {script.parent}")
    elif not (script.parent / "node_modules" / "gltf-validator").is_dir():
        raise ValidatorUnavailable("this potsherd package was built without the glTF "
                                   "validator (npm was missing at build time); reinstall from "
                                   "a source tree with npm available, or set "
                                   "POTSHERD_GLTF_VALIDATOR to a validate.js")
    return [node, str(script)]


def validator_available() -> bool:
    try:
        validator_command()
        return True
    except ValidatorUnavailable:
        return False


def validate_many(paths: Iterable[str | os.PathLike], *, max_issues: int = 100,
                  timeout: float = 600) -> list:
    """Validate several files in one Node process; one report dict per file:
    ``{file, errors, warnings, infos, hints, messages: [{code, severity, message, pointer}]}``."""
    files = [os.fspath(p) for p in paths]
    if not files:
        return []
    cmd = validator_command() + ["--max-issues", str(max_issues)] + files
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"glTF validator failed ({proc.returncode}): "
                           f"{proc.stderr.decode('utf-8', 'replace')[-2000:]}")
    out = json.loads(proc.stdout)
    reports = out["files"]
    for r in reports:
        r["validator_version"] = out.get("validatorVersion")
    return reports


def validate_gltf(path: str | os.PathLike, *, max_issues: int = 100) -> dict:
    """Validate one .glb/.gltf; returns its report (see :func:`validate_many`)."""
    return validate_many([path], max_issues=max_issues)[0]


def format_report(report: dict, limit: int = 10) -> str:
    """Human summary: counts, then the first ``limit`` errors/warnings."""
    lines = [f"{report['file']}: {count(report['errors'], 'error')}, "
             f"{count(report['warnings'], 'warning')}, {count(report['infos'], 'info')}"]
    shown = [m for m in report.get("messages", []) if m["severity"] in ("error", "warning")]
    for m in shown[:limit]:
        lines.append(f"  {m['severity']}: {m['code']} {m.get('pointer') or ''}: {m['message']}")
    return "\n".join(lines)
