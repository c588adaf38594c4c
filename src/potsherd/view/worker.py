"""glTF conversions for the viewer in child processes, each under an address-space limit and
a time limit: a file that converts into gigabytes, or forever, costs one killed child and a
422, never the server.  Children are reused (importing the families is the slow part).

Protocol on the child's stdin/stdout: 8-byte little-endian length, then a pickle; the child
answers ``("ready",)`` once, then one answer per request (only the parent, which started the
child, ever writes to it).
"""
from __future__ import annotations

import logging
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
import time
from typing import Any

#: internal errors go to the log (stderr unless the application configures it)
_log = logging.getLogger("potsherd.view")

#: address space of one conversion child (numpy, the families and one big scene)
AS_LIMIT = 4 << 30
#: seconds one conversion may take
TIMEOUT = 600.0
STARTUP = 120.0


class WorkerError(Exception):
    """A conversion refused by its child: ``status``, ``kind``, ``message``, ``extra``."""

    def __init__(self, status: int, kind: str, message: str, extra: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.extra = status, kind, extra or {}


def _send(stream, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(8, "little") + data)
    stream.flush()


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    chunks, left = [], n
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TimeoutError
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            raise EOFError
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def _recv(fd: int, deadline: float) -> Any:
    n = int.from_bytes(_read_exact(fd, 8, deadline), "little")
    return pickle.loads(_read_exact(fd, n, deadline))


class _Child:
    def __init__(self, as_limit: int) -> None:
        env = {**os.environ, "POTSHERD_VIEW_WORKER_AS": str(as_limit),
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from potsherd.view.worker import main; main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True)
        self.fd = self.proc.stdout.fileno()
        try:
            hello = _recv(self.fd, time.monotonic() + STARTUP)
        except (TimeoutError, EOFError, pickle.PickleError):
            self.kill()
            raise WorkerError(503, "Busy", "the conversion process did not start") from None
        if hello != ("ready",):
            self.kill()
            raise WorkerError(503, "Busy", "the conversion process did not start")

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        for s in (self.proc.stdin, self.proc.stdout):
            try:
                s.close()
            except OSError:
                pass


class Workers:
    """Up to as many children as callers at once (the caller bounds that with a semaphore)."""

    def __init__(self, *, as_limit: int = AS_LIMIT, timeout: float = TIMEOUT,
                 keep: int = 2) -> None:
        self.as_limit, self.timeout, self.keep = as_limit, timeout, keep
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._lock = threading.Lock()
        self._closed = False

    def prestart(self) -> None:
        """Start one child ahead of the first conversion (its imports take seconds)."""
        try:
            child = _Child(self.as_limit)
        except WorkerError:
            return
        self._keep(child)

    def _keep(self, child: _Child) -> None:
        """Back to the idle children, unless closed or ``keep`` are idle already."""
        with self._lock:
            if self._closed or self._idle.qsize() >= self.keep:
                child.kill()
            else:
                self._idle.put(child)

    def convert(self, request: dict) -> bytes:
        """The glb of ``request`` ({"data", "path", "options", "limits", "folder"})."""
        try:
            child = self._idle.get_nowait()
        except queue.Empty:
            child = _Child(self.as_limit)
        try:
            _send(child.proc.stdin, request)
            answer = _recv(child.fd, time.monotonic() + self.timeout)
        except TimeoutError:
            child.kill()
            raise WorkerError(422, "LimitError", f"the conversion took longer than "
                              f"{self.timeout:g} s and was stopped") from None
        except (EOFError, OSError, pickle.PickleError):
            code = child.proc.poll()
            child.kill()
            raise WorkerError(422, "LimitError", "the conversion ran out of memory or crashed"
                              + (f" (exit {code})" if code is not None else "")) from None
        self._keep(child)
        if answer[0] == "ok":
            return answer[1]
        _, status, kind, message, extra = answer
        raise WorkerError(status, kind, message, extra)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return


def scrub_json(obj: Any, folder: str) -> Any:
    """``obj`` (a glTF JSON tree) with the served folder's absolute path made relative in
    every string: image extras name the palette files a bitmap was drawn with, and an
    answer never carries an absolute path."""
    if isinstance(obj, str):
        return obj.replace(folder + os.sep, "").replace(folder, ".") if folder in obj else obj
    if isinstance(obj, dict):
        return {k: scrub_json(v, folder) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub_json(v, folder) for v in obj]
    return obj


def _convert(req: dict, as_limit: int = 0) -> bytes:
    import dataclasses
    from .. import registry
    from ..export.gltf import document_scene, glb_bytes, scene_to_gltf
    folder = req["folder"]
    limits = req["limits"]
    if as_limit and limits.max_input > as_limit // 4:
        # readers may reserve max_input bytes up front (resolve.read_bounded reads
        # max_input + 1): keep that inside the address space this child has
        limits = dataclasses.replace(limits, max_input=as_limit // 4)

    def scrub(text: str) -> str:
        return text.replace(folder + os.sep, "").replace(folder, ".")
    doc = registry.decode(req["data"], path=req["path"], limits=limits)
    scene = document_scene(doc, req["options"])   # referenced files: doc.limits
    scene.warnings[:] = [scrub(str(w)) for w in scene.warnings]
    gl, binary = scene_to_gltf(scene, True)
    return glb_bytes(scrub_json(gl, folder), binary)


def main() -> None:
    """The child: set the limit, import the families, answer requests until stdin closes."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server; it ends us
    limit = int(os.environ.get("POTSHERD_VIEW_WORKER_AS") or 0)
    if limit:
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the answers
    from ..core.errors import FormatError
    from ..errors import SceneExportError
    from .. import registry
    from ..export import gltf  # noqa: F401 - imported before the first conversion's clock
    registry.codecs()
    _send(stdout, ("ready",))
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        req = pickle.loads(stdin.read(int.from_bytes(head, "little")))
        try:
            answer: tuple = ("ok", _convert(req, limit))
        except SceneExportError:
            _log.error("potsherd view: internal error converting %s", req.get("name"))
            answer = ("error", 422, "SceneExportError", "internal error in the export (see the "
                      "server's console)", {})
        except FormatError as e:
            folder = req["folder"]
            extra = {}
            if e.offset is not None:
                extra["offset"] = e.offset
            if e.path:
                extra["fieldPath"] = e.path
            msg = str(e).replace(folder + os.sep, "").replace(folder, ".")
            answer = ("error", 422, type(e).__name__, msg, extra)
        except (MemoryError, RecursionError):
            answer = ("error", 422, "LimitError", "too large or deep to convert", {})
        except Exception as e:  # noqa: BLE001 - reported without its text
            _log.error("potsherd view: internal error (%s) converting %s", type(e).__name__,
                       req.get("name"))
            answer = ("error", 422, "SceneExportError", "internal error in the export (see the "
                      "server's console)", {})
        _send(stdout, answer)
