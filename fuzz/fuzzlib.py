"""The fuzzing engine shared by the per-family harnesses, ``run.py`` and the test tier.

Everything here works over the codec registry (``potsherd.registry.codecs()``),
so a codec that lands in a family is fuzzed without any change here.

* :func:`family_seeds` - valid inputs: files written by the project's own
  encoders (``potsherd.examples``, the family harness's ``seed_documents``,
  shrunk copies of decoded corpus files) and, when present, the real files of
  ``../shared/corpus/<family>``.
* :class:`Mutator` - bit flips, byte sets, insertions, deletions, count-like
  fields forced to 0 / -1 / 2^31-1, truncations, splices.
* :func:`check_input` - feeds one input to decode; when it decodes, to encode
  (must give the same bytes), both JSON forms (dump, load, encode: same bytes).
  Anything but a :class:`FormatError` is a finding; so is an
  :class:`InternalDecodeError`, a slow input or an oversized allocation.
* :class:`Campaign` - a time- or count-bounded run with statistics (inputs,
  duration, peak RSS, slowest input) that saves crashers.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import resource
import signal
import struct
import sys
import time
import traceback
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

import potsherd
from potsherd import families as potsherd_families, registry
from potsherd.core.errors import (EncodeError, FormatError, InternalDecodeError,
                                  JsonFormatError)
from potsherd.core.limits import Limits
from potsherd.document import Document

try:  # added by the hostile-input work; older trees may lack it
    from potsherd.core.errors import InternalEncodeError
except ImportError:  # pragma: no cover
    InternalEncodeError = None  # type: ignore[assignment]

REPO = Path(__file__).resolve().parents[1]
CORPUS_ROOT = REPO.parent / "shared" / "corpus"
#: corpus sub-folder of each family (the main one its descriptor names), plugins'
#: families included (``potsherd.codecs`` entry points)
registry.load_plugins()
FAMILY_CORPUS = {f.name: f.corpus[0] if f.corpus else f.name
                 for f in potsherd_families.all_families()}
FAMILIES = tuple(FAMILY_CORPUS)

#: the limits every fuzzed decode runs under: the defaults, except a smaller
#: inflation cap so a bomb costs little even when detected late
FUZZ_LIMITS = Limits(max_inflated=64 << 20)

#: a decode may allocate at most this many bytes per input byte, plus the constant
ALLOC_PER_BYTE = 256
ALLOC_CONSTANT = 48 << 20


class FuzzTimeout(BaseException):
    """Raised by the CPU-time alarm inside a slow input (a BaseException, so no codec's
    ``except Exception`` can swallow it)."""


# ----------------------------------------------------------------------------
# codecs and seeds


def codecs_of(family: str) -> list:
    return [c for c in registry.codecs() if c.family == family]


@dataclasses.dataclass
class Seed:
    codec: str          #: codec name that decodes it
    data: bytes
    origin: str         #: where it came from (corpus path, example name...)
    ext: str = ""       #: file extension (for detection by name)


def corpus_dir(family: str) -> Path:
    return CORPUS_ROOT / FAMILY_CORPUS.get(family, family)


def corpus_files(family: str, max_size: int | None = None) -> list[Path]:
    """Real files of a family (sorted, smallest first), or [] when absent."""
    root = corpus_dir(family)
    if not root.is_dir():
        return []
    out = []
    for p in root.rglob("*"):
        if p.is_file() and p.name != "SOURCES.txt":
            size = p.stat().st_size
            if max_size is None or size <= max_size:
                out.append((size, str(p), p))
    return [p for _, _, p in sorted(out)]


def _roundtrips(doc: Document, data: bytes) -> bool:
    try:
        return doc.encode() == data
    except FormatError:
        return False


def stable_encoding(doc: Document, **params) -> bytes | None:
    """``doc``'s bytes when they decode again and re-encode to themselves
    (what a seed derived from an edited document must satisfy), else None."""
    try:
        data = doc.encode()
        again = registry.decode(data, format=doc.format, **params)
    except FormatError:
        return None
    return data if _roundtrips(again, data) else None


def corpus_seeds(family: str, max_size: int = 64 << 10, max_count: int | None = None) -> list[Seed]:
    """Corpus files of ``family`` that decode and round-trip (smallest first)."""
    names = {c.name for c in codecs_of(family)}
    seeds = []
    for p in corpus_files(family, max_size):
        data = p.read_bytes()
        try:
            doc = registry.decode(data, path=str(p))
        except FormatError:
            continue
        if doc.format not in names or not _roundtrips(doc, data):
            continue
        seeds.append(Seed(doc.format, data, str(p.relative_to(CORPUS_ROOT)), p.suffix.lower()))
        if max_count is not None and len(seeds) >= max_count:
            break
    return seeds


def _containers(v: Any, path: tuple = (), out: list | None = None, budget: list | None = None) -> list:
    """(path, length) of every list / numpy array below ``v`` (bounded walk)."""
    if out is None:
        out, budget = [], [20000]
    budget[0] -= 1
    if budget[0] < 0:
        return out
    if isinstance(v, dict):
        for k, x in v.items():
            _containers(x, path + (k,), out, budget)
    elif isinstance(v, list):
        out.append((path, len(v)))
        for i, x in enumerate(v[:8]):
            _containers(x, path + (i,), out, budget)
    elif isinstance(v, np.ndarray) and v.ndim >= 1:
        out.append((path, len(v)))
    return out


def _copy_tree(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy_tree(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_tree(x) for x in v]
    return v


def _cut(root: Any, path: tuple, keep: int) -> Any | None:
    """A copy of ``root`` with the container at ``path`` cut to ``keep`` items."""
    new = _copy_tree(root)
    parent = new
    try:
        for k in path[:-1]:
            parent = parent[k]
        if not path:
            return None
        cur = parent[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    parent[path[-1]] = cur[:keep].copy() if isinstance(cur, np.ndarray) else cur[:keep]
    return new


def shrink_document(doc: Document, keep: int = 2, attempts: int = 40) -> bytes | None:
    """A small valid file derived from ``doc`` by the project's encoder.

    The largest lists and arrays are cut to ``keep`` items one at a time (count
    fields follow, as the layout engine regenerates them); a cut is kept when
    the result still decodes and round-trips, so fixed-size groups and counts
    the encoder cannot regenerate simply stay.  Returns None when nothing could
    be cut."""
    root = doc.root
    if not isinstance(root, (dict, list)):
        return None
    params = _user_params(doc)
    best = None
    tried = 0
    for path, n in sorted(_containers(root), key=lambda t: -t[1]):
        if n <= keep or tried >= attempts:
            continue
        cand = _cut(root, path, keep)
        if cand is None:
            continue
        tried += 1
        small = dataclasses.replace(doc, root=cand, warnings=[])
        try:
            data = small.encode()
            again = registry.decode(data, format=doc.format, **params)
        except FormatError:
            continue
        if _roundtrips(again, data):
            root, best = cand, data
    return best


def _user_params(doc: Document) -> dict:
    """Parameters a user supplied (not variant choices): needed to decode again."""
    names = getattr(doc.codec, "parameters", ())
    return {k: v for k, v in doc.params.items() if k in names}


def harness_module(family: str):
    """The family harness ``fuzz/fuzz_<family>.py`` (or None)."""
    import importlib.util
    path = Path(__file__).resolve().parent / f"fuzz_{family}.py"
    if not path.exists():
        return None
    name = f"potsherd_fuzz_{family}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def encoder_seeds(family: str) -> list[Seed]:
    """Valid files written by the project's own encoders (no corpus needed)."""
    names = {c.name: c for c in codecs_of(family)}
    seeds: list[Seed] = []
    docs: list[tuple[str, Any]] = []
    try:
        from potsherd import examples
        for name, make in getattr(examples, "EXAMPLES", {}).items():
            docs.append((f"examples:{name}", make))
    except ImportError:
        pass
    mod = harness_module(family)
    if mod is not None and hasattr(mod, "seed_documents"):
        for name, make in mod.seed_documents().items():
            docs.append((f"fuzz_{family}:{name}", make))
    for origin, make in docs:
        try:
            obj = make()
            if isinstance(obj, (bytes, bytearray)):
                data = bytes(obj)
                doc = registry.decode(data, path=origin)
            else:
                if not isinstance(obj, dict) or obj.get("format") not in names:
                    continue
                doc = potsherd.from_json(obj)
                data = doc.encode()
                doc = registry.decode(data, format=doc.format)
        except FormatError:
            continue  # a harness seed that no longer matches its codec
        if doc.format in names and _roundtrips(doc, data):
            ext = names[doc.format].extensions[0] if names[doc.format].extensions else ""
            seeds.append(Seed(doc.format, data, origin, ext))
    return seeds


def synthetic_seeds(family: str, sizes: Iterable[int] = (0, 4, 8, 16, 32, 64, 128, 256, 1024),
                    per_codec: int = 2) -> list[Seed]:
    """Zero-filled inputs (after the codec's magic bytes) that a codec decodes
    and re-encodes exactly: every count zero, every optional part absent.  They
    give each codec a seed even when no example or corpus file exists for it."""
    out = []
    for c in codecs_of(family):
        found = 0
        for n in sizes:
            data = (c.magic or b"") + bytes(n)
            try:
                doc = registry.decode(data, format=c.name)
            except FormatError:
                continue
            if _roundtrips(doc, data):
                out.append(Seed(c.name, data, f"zeros:{c.name}:{len(data)}",
                                c.extensions[0] if c.extensions else ""))
                found += 1
                if found >= per_codec:
                    break
    return out


def family_seeds(family: str, *, corpus: bool = True, max_size: int = 64 << 10,
                 max_corpus: int | None = None, shrink: bool = True,
                 shrink_max: int = 4 << 20) -> list[Seed]:
    """Valid inputs for ``family``, deduplicated:

    * files written by the project's encoders (:func:`encoder_seeds`);
    * corpus files up to ``max_size`` bytes that decode and round-trip;
    * shrunk copies of corpus files up to ``shrink_max`` bytes: lists and
      arrays cut short and re-encoded by the project's encoder (the family
      harness may provide ``shrink_document(doc) -> bytes | None``), so big
      formats contribute small, fast, structurally rich seeds.
    """
    seeds = encoder_seeds(family) + synthetic_seeds(family)
    if corpus:
        names = {c.name for c in codecs_of(family)}
        mod = harness_module(family)
        shrinker = getattr(mod, "shrink_document", None) if mod is not None else None
        count = 0
        for p in corpus_files(family, max(max_size, shrink_max if shrink else 0)):
            data = p.read_bytes()
            try:
                doc = registry.decode(data, path=str(p))
            except FormatError:
                continue
            if doc.format not in names:
                continue
            origin = str(p.relative_to(CORPUS_ROOT))
            if len(data) <= max_size and (max_corpus is None or count < max_corpus) \
                    and _roundtrips(doc, data):
                seeds.append(Seed(doc.format, data, origin, p.suffix.lower()))
                count += 1
            if shrink:
                small = None
                if shrinker is not None:
                    try:  # on its own copy: a shrinker may edit the document in place
                        small = shrinker(registry.decode(data, path=str(p)))
                    except Exception:  # noqa: BLE001 - a seed-preparation failure only
                        small = None
                if small is None:
                    small = shrink_document(doc)
                if small is not None and small != data and len(small) <= max_size:
                    seeds.append(Seed(doc.format, small, "shrunk:" + origin, p.suffix.lower()))
    seen = set()
    out = []
    for s in seeds:
        key = (s.codec, s.data)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


# ----------------------------------------------------------------------------
# mutations

INTERESTING32 = (0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFF, 0x10000, 0x7FFF, 0x8000,
                 0xFFFFFFFE, 0x40000000, 0x100)
INTERESTING16 = (0, 1, 0xFFFF, 0x7FFF, 0x8000, 0xFF, 0x100)
INTERESTING8 = (0, 1, 0xFF, 0x7F, 0x80, 0x10, 0x40)


class Mutator:
    """Structure-blind mutations that hit what hostile files do to decoders."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ops: list[Callable[[bytearray, list[bytes]], bytearray]] = [
            self.flip_bits, self.flip_bits, self.set_byte, self.count32, self.count32,
            self.count32, self.count16, self.insert, self.delete, self.truncate, self.splice,
            self.duplicate, self.arith32,
        ]

    def mutate(self, data: bytes, pool: list[bytes] | None = None) -> bytes:
        b = bytearray(data)
        for _ in range(1 + int(self.rng.random() ** 3 * 4)):
            b = self.rng.choice(self.ops)(b, pool or [])
        return bytes(b)

    # -- individual operators --------------------------------------------
    def _pos(self, b: bytearray, width: int = 1) -> int | None:
        if len(b) < width:
            return None
        # half the time near the start, where headers and counts live
        if self.rng.random() < 0.5:
            return self.rng.randrange(0, min(len(b) - width + 1, 256))
        return self.rng.randrange(0, len(b) - width + 1)

    def flip_bits(self, b, pool):
        for _ in range(self.rng.choice((1, 1, 2, 4))):
            p = self._pos(b)
            if p is None:
                return b
            b[p] ^= 1 << self.rng.randrange(8)
        return b

    def set_byte(self, b, pool):
        p = self._pos(b)
        if p is not None:
            b[p] = self.rng.choice(INTERESTING8) if self.rng.random() < 0.6 else self.rng.randrange(256)
        return b

    def _count_like_offsets(self, b: bytearray, width: int, fmt: str) -> np.ndarray:
        """Offsets (in a window of up to 4 KiB) whose little-endian value looks
        like a count or size: non-zero and below 65536."""
        limit = min(len(b) - width + 1, 4096)
        if limit <= 0:
            return np.zeros(0, dtype=np.int64)
        start = self.rng.randrange(0, len(b) - width + 1 - limit + 1)
        a = np.frombuffer(bytes(b[start:start + limit + width - 1]), dtype=np.uint8).astype(np.uint32)
        v = a[:limit].copy()
        for k in range(1, width):
            v |= a[k:k + limit] << (8 * k)
        return np.flatnonzero((v > 0) & (v < (1 << 16))) + start

    def count32(self, b, pool):
        """A count-like 4-byte field set to 0, -1, 2^31-1, ... (or off by one)."""
        offs = self._count_like_offsets(b, 4, "<I")
        if not len(offs):
            p = self._pos(b, 4)
            if p is None:
                return b
        else:
            p = int(offs[self.rng.randrange(len(offs))])
        if self.rng.random() < 0.75:
            v = self.rng.choice(INTERESTING32)
        else:
            v = (struct.unpack_from("<I", b, p)[0] + self.rng.choice((-1, 1, 2, -2, 16, 1 << 20))) & 0xFFFFFFFF
        struct.pack_into("<I", b, p, v)
        return b

    def count16(self, b, pool):
        offs = self._count_like_offsets(b, 2, "<H")
        p = int(offs[self.rng.randrange(len(offs))]) if len(offs) else self._pos(b, 2)
        if p is not None:
            struct.pack_into("<H", b, p, self.rng.choice(INTERESTING16))
        return b

    def arith32(self, b, pool):
        p = self._pos(b, 4)
        if p is not None:
            v = struct.unpack_from("<I", b, p)[0]
            struct.pack_into("<I", b, p, (v + self.rng.randint(-35, 35)) & 0xFFFFFFFF)
        return b

    def insert(self, b, pool):
        p = self.rng.randrange(0, len(b) + 1)
        n = self.rng.choice((1, 1, 2, 4, 8, 16))
        b[p:p] = bytes(self.rng.randrange(256) for _ in range(n))
        return b

    def delete(self, b, pool):
        if not b:
            return b
        p = self.rng.randrange(0, len(b))
        n = self.rng.choice((1, 1, 2, 4, 8, 16, 64))
        del b[p:p + n]
        return b

    def truncate(self, b, pool):
        if b:
            del b[self.rng.randrange(0, len(b)):]
        return b

    def splice(self, b, pool):
        if not pool:
            return b
        other = self.rng.choice(pool)
        if not other:
            return b
        a = self.rng.randrange(0, len(other))
        n = self.rng.randint(1, min(256, len(other) - a))
        p = self.rng.randrange(0, len(b) + 1)
        if self.rng.random() < 0.5:
            b[p:p + n] = other[a:a + n]
        else:
            b[p:p] = other[a:a + n]
        return b

    def duplicate(self, b, pool):
        if not b:
            return b
        a = self.rng.randrange(0, len(b))
        n = self.rng.randint(1, min(128, len(b) - a))
        p = self.rng.randrange(0, len(b) + 1)
        b[p:p] = b[a:a + n]
        return b


# ----------------------------------------------------------------------------
# one input


@dataclasses.dataclass
class Finding:
    kind: str           #: internal-decode, exception, roundtrip, encode, json, timeout, memory
    codec: str
    data: bytes
    detail: str
    seconds: float = 0.0

    def key(self) -> str:
        return hashlib.sha1(self.data).hexdigest()[:16]


@dataclasses.dataclass
class Outcome:
    decoded: bool
    error: str | None           #: FormatError subclass name when refused
    seconds: float
    finding: Finding | None = None
    error_has_offset: bool = True
    alloc_peak: int | None = None
    error_path: str | None = None   #: field path of the refusal
    format: str | None = None       #: codec that decoded it


def _alarm_handler(signum, frame):
    raise FuzzTimeout()


def _set_alarm(seconds: float | None) -> bool:
    if not seconds or not hasattr(signal, "setitimer"):
        return False
    try:
        signal.signal(signal.SIGPROF, _alarm_handler)
    except ValueError:  # not the main thread
        return False
    signal.setitimer(signal.ITIMER_PROF, seconds)  # CPU time: a loaded machine is no hang
    return True


def _clear_alarm() -> None:
    signal.setitimer(signal.ITIMER_PROF, 0)


def _is_internal(e: BaseException) -> bool:
    """A FormatError that wraps a Python bug (the safety nets' wrappers)."""
    if isinstance(e, InternalDecodeError):
        return True
    if InternalEncodeError is not None and isinstance(e, InternalEncodeError):
        return True
    if "out of memory" in str(e):
        return True
    cause = e.__cause__
    return cause is not None and not isinstance(cause, FormatError)


def _summary(data: bytes, doc: Document) -> dict:
    from potsherd import cli
    return cli.summary("fuzz", data, doc)


def _derived(doc: Document, what: str) -> None:
    """Views users derive from a decoded file: ``scene`` (glTF export) and
    ``textures`` (PNG export); codecs without them are skipped."""
    codec = doc.codec
    if what == "scene":
        # as `potsherd convert` does: NoSceneError (a FormatError) when there is none
        from potsherd.export.gltf import document_scene
        document_scene(doc)
    elif what == "textures" and callable(getattr(codec, "textures", None)):
        for name, img in codec.textures(doc):
            if hasattr(img, "tobytes"):
                img.tobytes()


def check_input(codec: str | None, data: bytes, *, limits: Limits = FUZZ_LIMITS,
                time_limit: float | None = 2.0, json_check: bool = True,
                path: str | None = None, trace_alloc: bool = False,
                derived: tuple[str, ...] = ()) -> Outcome:
    """Run one input through decode -> encode -> info -> JSON -> encode.

    ``codec`` None means detection (by magic bytes and ``path``'s extension).
    ``derived``: also build these views (``scene``, ``textures``) and require
    that they raise nothing but a FormatError.
    """
    name = codec or _detected_name(data, path)
    stage = "decode"
    t0 = time.process_time()
    armed = _set_alarm(time_limit * 2.5 if time_limit else None)
    if trace_alloc:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    alloc_peak = None
    try:
        try:
            doc = registry.decode(data, format=codec, path=path, limits=limits)
        except FormatError as e:
            dt = time.process_time() - t0
            if trace_alloc:
                alloc_peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.stop()
                trace_alloc = False
            if _is_internal(e):
                return Outcome(False, type(e).__name__, dt,
                               Finding("internal-decode", name, data, _format_exc(e), dt))
            out = Outcome(False, type(e).__name__, dt, None, e.offset is not None, alloc_peak)
            out.error_path = e.path
            return out
        if trace_alloc:
            alloc_peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            trace_alloc = False
        name = doc.format
        decoded_format = name
        stage = "encode"
        try:
            out = doc.encode()
        except FormatError as e:
            dt = time.process_time() - t0
            return Outcome(True, None, dt, Finding("encode", name, data, _format_exc(e), dt))
        if out != data:
            dt = time.process_time() - t0
            return Outcome(True, None, dt, Finding(
                "roundtrip", name, data,
                f"decoded but re-encoded differently: {len(data)} -> {len(out)} bytes, first "
                f"difference at {_first_diff(data, out)}", dt))
        # what `potsherd info` / `validate` show for any file that decodes
        stage = "info"
        try:
            json.dumps(_summary(data, doc), ensure_ascii=False)
        except FormatError as e:
            if _is_internal(e):
                raise
        for what in derived:
            stage = what
            try:
                _derived(doc, what)
            except FormatError as e:
                if _is_internal(e):
                    raise
        if json_check:
            for form in ("wire", "readable"):
                stage = f"json {form}"
                try:
                    text = json.dumps(doc.to_json(form), ensure_ascii=False)
                    back = potsherd.from_json(text).encode()
                except FormatError as e:
                    dt = time.process_time() - t0
                    return Outcome(True, None, dt, Finding("json", name, data,
                                                           f"{form}: " + _format_exc(e), dt))
                if back != data:
                    dt = time.process_time() - t0
                    return Outcome(True, None, dt, Finding(
                        "json", name, data, f"{form} JSON does not load back to the same bytes: "
                        f"first difference at {_first_diff(data, back)}", dt))
        dt = time.process_time() - t0
        return Outcome(True, None, dt, None, True, alloc_peak, format=decoded_format)
    except FuzzTimeout:
        dt = time.process_time() - t0
        return Outcome(False, None, dt, Finding("timeout", name, data,
                                                f"still running after {dt:.1f} s in {stage}", dt))
    except Exception as e:  # noqa: BLE001 - anything else is exactly what we hunt
        dt = time.process_time() - t0
        return Outcome(False, None, dt, Finding(
            "exception" if stage == "decode" else f"exception in {stage}", name, data,
            _format_exc(e), dt))
    finally:
        if armed:
            _clear_alarm()
        if trace_alloc:
            tracemalloc.stop()


def _detected_name(data: bytes, path: str | None) -> str:
    try:
        return "detect:" + registry.detect(data, path).name
    except FormatError:
        return "detect:none"


def _first_diff(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _format_exc(e: BaseException) -> str:
    chain = e.__cause__ if e.__cause__ is not None and not isinstance(e.__cause__, FormatError) else e
    tb = "".join(traceback.format_exception(type(chain), chain, chain.__traceback__))
    return f"{type(e).__name__}: {e}\n{tb}"


# ----------------------------------------------------------------------------
# hostile JSON


def _leaves(obj: Any, path: str = "$") -> Iterable[tuple[str, Any, Any, Any]]:
    """(json path, container, key, value) for every value below ``obj``."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}"
            yield p, obj, k, v
            yield from _leaves(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:64]):
            p = f"{path}[{i}]"
            yield p, obj, i, v
            yield from _leaves(v, p)


def mutate_json(obj: dict, rng: random.Random) -> tuple[dict, str]:
    """A copy of a JSON document with one hostile change; returns (doc, what)."""
    doc = json.loads(json.dumps(obj))
    root = doc.get("root") if isinstance(doc.get("root"), (dict, list)) else doc
    leaves = list(_leaves(root, "$.root")) if root is not doc else list(_leaves(doc))
    if not leaves:
        return doc, "unchanged"
    path, cont, key, val = rng.choice(leaves)
    op = rng.randrange(9)
    if op == 0:
        cont[key] = rng.choice([None, "x", 1.5, True, [], {}, -1, 1 << 70, "zz"])
        return doc, f"{path}: wrong type"
    if op == 1 and isinstance(val, str) and len(val) >= 2:
        cont[key] = val[:-1] if rng.random() < 0.5 else val[:-2]
        return doc, f"{path}: hex/text of the wrong length"
    if op == 2 and isinstance(cont, dict):
        del cont[key]
        return doc, f"{path}: removed"
    if op == 3 and isinstance(cont, dict):
        cont["unexpectedField"] = 1
        return doc, f"{path}: unknown field beside it"
    if op == 4 and isinstance(val, int) and not isinstance(val, bool):
        cont[key] = rng.choice([val + 1, val - 1, -1, 0, 0x7FFFFFFF, 1 << 40, -(1 << 40)])
        return doc, f"{path}: count/number changed"
    if op == 5 and isinstance(val, list) and val:
        if rng.random() < 0.5:
            del val[rng.randrange(len(val)):]
        else:
            val.append(val[-1])
        return doc, f"{path}: list length changed"
    if op == 6 and isinstance(val, list) and val:
        val[rng.randrange(len(val))] = rng.choice(["x", None, {}, 1e308, -1, 1 << 64])
        return doc, f"{path}: list item of the wrong type"
    if op == 7:
        top = rng.choice(["potsherd", "format", "form", "params", "meta", "trailing", "root"])
        doc[top] = rng.choice([None, 2, "readable", "nope", [], {"x": 1}, "0"])
        return doc, f"$.{top}: envelope damaged"
    if isinstance(val, float):
        cont[key] = rng.choice([float("inf"), -1e300, 1e39, 0.1])
        return doc, f"{path}: float out of range"
    cont[key] = rng.choice(["", "g0", {"hex": "0"}, {"bits": "x"}, {"len": 5}])
    return doc, f"{path}: malformed special form"


def check_json_document(obj: Any, *, time_limit: float | None = 2.0) -> tuple[str, Finding | None]:
    """Load a (possibly hostile) JSON document and encode it.

    Returns ("refused", None) for a JsonFormatError/EncodeError with a path,
    ("built", None) when it encodes, else a finding."""
    armed = _set_alarm(time_limit * 2.5 if time_limit else None)
    name = obj.get("format", "?") if isinstance(obj, dict) else "?"
    raw = json.dumps(obj).encode()
    t0 = time.process_time()
    try:
        try:
            doc = potsherd.from_json(obj)
            data = doc.encode()
        except FormatError as e:
            if _is_internal(e):
                return "internal", Finding("json-internal", str(name), raw, _format_exc(e))
            if not isinstance(e, (JsonFormatError, EncodeError)) and \
                    type(e).__name__ != "UnknownFormatError":
                return "wrong-error", Finding("json-error-class", str(name), raw, _format_exc(e))
            return "refused", None
        # what was built must at least be refused cleanly or decode
        out = check_input(doc.format, data, time_limit=time_limit, json_check=False)
        if out.finding is not None and out.finding.kind in ("internal-decode", "exception", "timeout"):
            return "built", out.finding
        return "built", None
    except FuzzTimeout:
        return "timeout", Finding("timeout", str(name), raw, f"JSON load/encode still running "
                                                           f"after {time.process_time() - t0:.1f} s")
    except Exception as e:  # noqa: BLE001
        return "exception", Finding("json-exception", str(name), raw, _format_exc(e))
    finally:
        if armed:
            _clear_alarm()


# ----------------------------------------------------------------------------
# campaigns


def peak_rss_mb() -> float:
    """Peak resident set size of this process, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@dataclasses.dataclass
class Stats:
    family: str
    inputs: int = 0
    decoded: int = 0
    refused: int = 0
    errors: dict = dataclasses.field(default_factory=dict)
    errors_without_offset: int = 0
    errors_without_path: int = 0
    json_documents: int = 0     #: hostile JSON documents checked
    seconds: float = 0.0
    slowest: float = 0.0
    slowest_input: str = ""
    peak_rss_mb: float = 0.0
    max_alloc_ratio: float = 0.0
    max_alloc_mb: float = 0.0
    seeds: int = 0
    findings: list = dataclasses.field(default_factory=list)

    def record(self, out: Outcome, data: bytes, label: str) -> None:
        self.inputs += 1
        if out.decoded:
            self.decoded += 1
        elif out.error:
            self.refused += 1
            self.errors[out.error] = self.errors.get(out.error, 0) + 1
            if not out.error_has_offset:
                self.errors_without_offset += 1
            if not out.error_path:
                self.errors_without_path += 1
        if out.seconds > self.slowest:
            self.slowest = out.seconds
            self.slowest_input = f"{label} ({len(data)} bytes)"

    def summary(self) -> dict:
        d = dataclasses.asdict(self)
        d["findings"] = [{"kind": f.kind, "codec": f.codec, "bytes": len(f.data), "key": f.key(),
                          "detail": f.detail.splitlines()[0][:300]} for f in self.findings]
        d["seconds"] = round(self.seconds, 1)
        d["slowest"] = round(self.slowest, 4)
        d["peak_rss_mb"] = round(self.peak_rss_mb, 1)
        d["max_alloc_ratio"] = round(self.max_alloc_ratio, 1)
        d["max_alloc_mb"] = round(self.max_alloc_mb, 1)
        return d


class Campaign:
    """A plain random-mutation run over the seeds of one family."""

    def __init__(self, family: str, seeds: list[Seed], *, rng_seed: int = 0,
                 time_limit: float = 2.0, json_every: int = 1, crash_dir: Path | None = None,
                 trace_every: int = 0, limits: Limits = FUZZ_LIMITS,
                 on_finding: Callable[[Finding], None] | None = None,
                 derived: tuple[str, ...] = (), json_mutate_every: int = 0) -> None:
        self.family = family
        self.json_mutate_every = json_mutate_every
        self.derived = derived
        self.seeds = seeds
        self.rng = random.Random(rng_seed)
        self.mutator = Mutator(self.rng)
        self.time_limit = time_limit
        self.json_every = json_every
        self.crash_dir = crash_dir
        self.trace_every = trace_every
        self.limits = limits
        self.on_finding = on_finding
        self.stats = Stats(family, seeds=len(seeds))
        self._seen: set[tuple[str, str]] = set()
        # small seeds are cheap: pick them more often, but every seed gets picked
        self.weights = [1.0 / (1.0 + len(s.data) / 4096.0) for s in seeds]
        self.pool = [s.data for s in seeds]

    def one(self) -> Outcome:
        seed = self.rng.choices(self.seeds, self.weights)[0]
        data = self.mutator.mutate(seed.data, self.pool)
        # a quarter of the inputs go through detection (magic bytes / extension)
        detect = self.rng.random() < 0.25
        trace = bool(self.trace_every) and self.stats.inputs % self.trace_every == 0
        json_check = self.json_every <= 1 or self.stats.inputs % self.json_every == 0
        out = check_input(None if detect else seed.codec, data, limits=self.limits,
                          time_limit=self.time_limit, json_check=json_check,
                          path=("fuzz" + seed.ext) if detect else None, trace_alloc=trace,
                          derived=self.derived if json_check else ())
        if out.alloc_peak is not None:
            ratio = max(0, out.alloc_peak - ALLOC_CONSTANT) / max(1, len(data))
            # reported: allocation per input byte, with 64 KiB of slack for small inputs
            self.stats.max_alloc_ratio = max(self.stats.max_alloc_ratio,
                                             out.alloc_peak / (len(data) + 65536))
            self.stats.max_alloc_mb = max(self.stats.max_alloc_mb, out.alloc_peak / 2 ** 20)
            if ratio > ALLOC_PER_BYTE:
                out.finding = out.finding or Finding(
                    "memory", seed.codec, data,
                    f"decode allocated {out.alloc_peak} bytes for a {len(data)}-byte input",
                    out.seconds)
        if out.finding is None and out.seconds > self.time_limit:
            out.finding = Finding("timeout", seed.codec, data,
                                  f"took {out.seconds:.2f} s (limit {self.time_limit} s)", out.seconds)
        if out.finding is None and out.decoded and self.json_mutate_every and \
                self.stats.decoded % self.json_mutate_every == 0:
            out.finding = self.hostile_json(data, out.format)
        self.stats.record(out, data, f"mutant of {seed.origin}")
        if out.finding is not None:
            self._found(out.finding)
        return out

    def hostile_json(self, data: bytes, fmt: str | None) -> Finding | None:
        """One hostile edit of the JSON form of an input that decodes."""
        try:
            doc = registry.decode(data, format=fmt, limits=self.limits)
            base = json.loads(json.dumps(doc.to_json(self.rng.choice(("wire", "readable")))))
        except FormatError:
            return None
        bad, what = mutate_json(base, self.rng)
        self.stats.json_documents += 1
        status, f = check_json_document(bad, time_limit=self.time_limit)
        if f is not None:
            f.detail = f"hostile JSON ({what}) from input {data[:64].hex()}...\n{f.detail}"
        return f

    def _found(self, f: Finding) -> None:
        first_line = f.detail.splitlines()[0] if f.detail else ""
        # one report per (kind, codec, innermost traceback line) keeps the list short
        where = _innermost(f.detail)
        sig = (f.kind + ":" + f.codec, where or first_line[:120])
        if sig in self._seen:
            return
        self._seen.add(sig)
        self.stats.findings.append(f)
        if self.crash_dir is not None:
            d = self.crash_dir / self.family
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{f.kind.replace(' ', '_')}-{f.codec}-{f.key()}.bin").write_bytes(f.data)
            (d / f"{f.kind.replace(' ', '_')}-{f.codec}-{f.key()}.txt").write_text(
                f"codec: {f.codec}\nkind: {f.kind}\nseconds: {f.seconds:.3f}\n\n{f.detail}\n")
        if self.on_finding is not None:
            self.on_finding(f)

    def run(self, *, seconds: float | None = None, inputs: int | None = None,
            progress: Callable[[Stats], None] | None = None, progress_every: float = 10.0) -> Stats:
        if not self.seeds:
            return self.stats
        t0 = time.perf_counter()
        last = t0
        try:
            while True:
                now = time.perf_counter()
                if seconds is not None and now - t0 >= seconds:
                    break
                if inputs is not None and self.stats.inputs >= inputs:
                    break
                self.one()
                if progress is not None and now - last >= progress_every:
                    last = now
                    self.stats.seconds = now - t0
                    self.stats.peak_rss_mb = peak_rss_mb()
                    progress(self.stats)
        finally:
            self.stats.seconds = time.perf_counter() - t0
            self.stats.peak_rss_mb = peak_rss_mb()
        return self.stats


def _innermost(detail: str) -> str:
    """The last 'File ..., line N, in f' line of a traceback text."""
    lines = [ln.strip() for ln in detail.splitlines() if ln.strip().startswith("File ")]
    return lines[-1] if lines else ""


def truncations(data: bytes, stride: int = 1) -> Iterable[bytes]:
    """Every proper prefix of ``data`` (with a stride for bigger files)."""
    for n in range(0, len(data), stride):
        yield data[:n]
