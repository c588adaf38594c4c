"""Layouts compiled to specialised Python: the fast path of the layout engine.

The interpreter in :mod:`potsherd.core.layout` (``Record.decode`` and friends)
is the *reference*: it defines the document every layout produces, and every
error with its offset and path.  This module turns each record of a layout
into generated Python source, compiled once per layout and cached, that does
the same work with less overhead:

* runs of fixed-size fields (primitives, ``vec3``/``quat``/``rect``, fixed
  ``bytes``) are read or written with one :class:`struct.Struct` call;
* numeric arrays are one ``numpy.frombuffer`` (decode) or ``tobytes`` (encode);
* arrays of fixed all-primitive records are read with one
  ``Struct.iter_unpack`` into the same list of dicts the interpreter builds
  (NaN bit patterns are found with one numpy pass per float field);
* expressions are compiled to inline Python (field values held in locals),
  with the exact semantics of :mod:`potsherd.core.expr`;
* anything else (custom storages, rare kinds) is delegated to the reference
  storage object, so the fast path never needs to know every storage.

The fast path is *optimistic*: it only ever produces a result the reference
would produce.  Whenever anything is unusual - an error, a truncated input, a
limit, a value of an unexpected type while encoding, a NaN that needs its bit
pattern kept - it raises internally and :class:`~potsherd.core.layout.Layout`
re-runs the reference interpreter from the start, which then produces the
document or the exact error (same message, offset and path).  Errors are thus
identical by construction; ``tests/core/test_engine_differential.py`` checks
that successful results are identical on every corpus file and on mutated
files.
"""
from __future__ import annotations

import contextlib
import gc
import json
import re
import struct
import threading
from typing import Any, Callable, Iterator

import numpy as np

from . import layout as L
from .expr import _int_div, _num, references, split_operator
from .values import F32NaN, F64NaN, RawString

__all__ = ["FastLayout", "fast_layout", "reference_only", "set_enabled"]

#: the fast path is used unless switched off (tests, benchmarks, debugging)
_ENABLED = True

#: inputs at least this large decode with the cyclic garbage collector paused:
#: building hundreds of thousands of containers otherwise triggers repeated
#: collections that scan them all (no cycles are created while decoding)
GC_PAUSE_BYTES = 1 << 16


def set_enabled(flag: bool) -> bool:
    """Switch the fast path on or off globally; returns the previous setting."""
    global _ENABLED
    old, _ENABLED = _ENABLED, bool(flag)
    return old


@contextlib.contextmanager
def reference_only() -> Iterator[None]:
    """Run the block on the reference interpreter only."""
    old = set_enabled(False)
    try:
        yield
    finally:
        set_enabled(old)


@contextlib.contextmanager
def _gc_paused(size: int) -> Iterator[None]:
    if size >= GC_PAUSE_BYTES and gc.isenabled():
        gc.disable()
        try:
            yield
        finally:
            gc.enable()
    else:
        yield


class _Fallback(Exception):
    """Raised by generated code: let the reference interpreter decide."""


_CACHE_ATTR = "_fastpath_cache"


def fast_layout(layout: "L.Layout") -> "FastLayout | None":
    """The compiled form of ``layout`` (built once, cached on the layout).

    Returns None when the layout cannot be compiled (it then always runs on
    the reference interpreter), or while the fast path is switched off."""
    if not _ENABLED:
        return None
    cached = layout.__dict__.get(_CACHE_ATTR, _MISSING_CACHE)
    if cached is _MISSING_CACHE:
        try:
            cached = FastLayout(layout)
        except Exception:  # noqa: BLE001 - an uncompilable layout still works, slowly
            cached = None
        layout.__dict__[_CACHE_ATTR] = cached
    return cached


_MISSING_CACHE = object()


class _MissingName:
    """Stand-in for a name an expression cannot resolve: any use falls back."""

    __slots__ = ()

    def _fail(self, *a: Any) -> Any:
        raise _Fallback

    __bool__ = __eq__ = __ne__ = __lt__ = __gt__ = __le__ = __ge__ = _fail
    __hash__ = None  # type: ignore[assignment]


def _patch(b: bytes, nans: list) -> bytes:
    """Write kept NaN bit patterns over the 0.0 placeholders of a packed run."""
    if not nans:
        return b
    out = bytearray(b)
    for pack_into, off, bits in nans:
        pack_into(out, off, bits)
    return bytes(out)


_MISSING_NAME = _MissingName()


def _select(i: Any, cases: tuple) -> Any:  # noqa: D103 - the "select" operator
    if i.__class__ is _MissingName:
        raise _Fallback
    if isinstance(i, int) and 0 <= i < len(cases):
        return cases[i]
    return None


def _nan_positions(buf: bytes, pos: int, n: int, itemsize: int, off: int, dt: np.dtype) -> np.ndarray:
    """Indices of the records whose float at ``off`` is a NaN (one numpy pass)."""
    view = np.ndarray((n,), dtype=dt, buffer=buf, offset=pos + off, strides=(itemsize,))
    return np.flatnonzero(np.isnan(view))


def _float_nan_reader(order: str, size: int) -> Callable[[bytes, int], float]:
    """As StructRecord.decode keeps NaNs: bits read in the record's byte order."""
    from_bits = L.f32_from_bits if size == 4 else L.f64_from_bits
    unpack = struct.Struct(order + ("I" if size == 4 else "Q")).unpack_from
    return lambda b, p: from_bits(unpack(b, p)[0])


def _bits_reader(prim: "L.Prim") -> Callable[[bytes, int], float]:
    """Decode a NaN float at an offset keeping its bit pattern (as Prim.decode)."""
    from_bits = prim.float_bits[0]
    unpack = prim.bits_st.unpack_from
    return lambda b, p: from_bits(unpack(b, p)[0])


# ----------------------------------------------------------------------------
# expression compilation


class _ExprEnv:
    """What generated code knows about names while compiling one record.

    A field reference resolves like ``Scope.lookup``: in this record's dict
    when the field has been read (or written) by then, else in the enclosing
    records and parameters.  Fields of this record live in Python locals; a
    field read under a condition starts as ``_UNSET`` (then the outer lookup
    applies).  Outer names are looked up once per record (``_LS``): the
    enclosing records are suspended while this one runs, so their values
    cannot change; a name no frame has yet is a sentinel that makes any use
    fall back to the reference."""

    def __init__(self, mode: str, rec: "L.Record | None" = None, prefix: str = "") -> None:
        self.mode = mode            # "decode" or "encode"
        self.prefix = prefix        # for locals of a record inlined into another
        self.var: dict[str, str] = {}      # field name -> local holding its current value
        self.state: dict[str, str] = {}    # field name -> "set" | "maybe" (absent: not read yet)
        self.hoisted: dict[str, str] = {}  # outer name -> local
        self.params_here: set[str] = set()
        self.plain: dict[str, bool] = {}   # field name -> every definition is a plain number
        self.ints: dict[str, bool] = {}    # field name -> every definition is a Python int
        self.shared: set[str] = set()      # names needing one shared local (_UNSET first)
        self.referenced: set[str] | None = None  # names any expression of the record uses
        self.cse: dict[tuple, str] = {}    # (form, expression) -> local computed in the prologue
        self.cse_lines: list[tuple[str, str]] = []
        self.cse_plain: dict[tuple, bool] = {}
        if rec is not None:
            self.referenced = set()
            for f in rec.fields:
                if f.cond_src not in (None, "always", "optional tail"):
                    self.referenced |= references(f.cond_src)
                self.referenced |= _storage_references(f.storage)
            defs: dict[str, list] = {}
            for f in rec.fields:
                if f.is_param:
                    self.params_here.add(f.name)
                else:
                    defs.setdefault(f.name, []).append(f)
            for name, fs in defs.items():
                self.plain[name] = all(_is_plain_number(f.storage) for f in fs)
                self.ints[name] = all(_is_int(f.storage) for f in fs)
                if len(fs) > 1 or fs[0].cond is not None:
                    self.shared.add(name)
                    self.var[name] = f"{prefix}F_{_ident(name)}"

    def define(self, name: str, value_var: str, conditional: bool, out: list, ind: str) -> None:
        """Record that ``name`` now holds ``value_var`` (emitting an assignment
        to its shared local when it has one)."""
        if name in self.params_here:
            return
        if self.referenced is not None and name not in self.referenced:
            return
        if name in self.shared:
            out.append(f"{ind}{self.var[name]} = {value_var}")
            if not conditional:
                self.state[name] = "set"
            else:
                self.state.setdefault(name, "maybe")
        else:
            self.var[name] = value_var
            self.state[name] = "set"

    def prologue(self) -> list[str]:
        lines = [f"    {v} = _UNSET" for n, v in self.var.items()
                 if n in self.shared and (self.referenced is None or n in self.referenced)]
        for n, v in self.hoisted.items():
            # usually found in the enclosing record (the top frame) at once
            lines.append(f"    {v} = frames[-1].get({n!r}, _UNSET)")
            lines.append(f"    if {v} is _UNSET: {v} = _LS(frames, {n!r})")
            lines.append(f"    {self.num_name(n)} = {v} if {v}.__class__ is int else _num({v})")
        for v, src in self.cse_lines:
            lines.append(f"    try: {v} = {src}")
            lines.append(f"    except Exception: {v} = _MISSING")
        return lines

    def outer(self, name: str) -> str:
        v = self.hoisted.get(name)
        if v is None:
            v = self.hoisted[name] = f"{self.prefix}H_{_ident(name)}"
        return v

    def num_name(self, name: str) -> str:
        self.outer(name)
        return f"{self.prefix}N_{_ident(name)}"

    def pure_outer(self, e: Any) -> bool:
        """True when ``e`` depends only on names this record has not defined
        (yet): its value is the same from the start of the record on."""
        if isinstance(e, str):
            return e not in self.params_here and e not in self.state
        if isinstance(e, (bool, int, float)):
            return True
        if isinstance(e, list):
            return all(self.pure_outer(a) for a in e)
        if isinstance(e, dict) and len(e) == 1:
            (op, arg), = e.items()
            if op in ("remaining", "present"):
                return False
            return self.pure_outer(arg)
        return False


class _Gen:
    """Source generator for one layout."""

    def __init__(self, layout: "L.Layout") -> None:
        self.layout = layout
        self.ns: dict[str, Any] = {
            "_FB": _Fallback, "_num": _num, "_int_div": _int_div, "_select": _select,
            "RawString": RawString, "np": np, "_fbuf": np.frombuffer, "_nanpos": _nan_positions,
            "_F32NaN": F32NaN, "_patch": _patch, "_UNSET": _UNSET, "_LS": _lookup_or_missing, "_F64NaN": F64NaN, "_MISSING": _MISSING_NAME,
            "_mv": memoryview,
        }
        self.consts: dict[int, str] = {}
        self.lines: list[str] = []
        self.dec_names: dict[int, str] = {}
        self.enc_names: dict[int, str] = {}
        self.pending: list[tuple[str, Any]] = []
        self.tmp = 0
        self.in_progress: set[int] = set()
        self.built = 0
        self.inline_ok: dict[int, bool] = {}

    # --- helpers --------------------------------------------------------
    def const(self, obj: Any, prefix: str = "K") -> str:
        key = id(obj)
        name = self.consts.get(key)
        if name is None:
            name = f"{prefix}{len(self.consts)}"
            self.consts[key] = name
            self.ns[name] = obj
        return name

    def param_default(self, f: Any, out: list[str]) -> None:
        """A parameter field: fill in its default unless the caller set it."""
        out.append("    _p = frames[0]")
        out.append(f"    if {f.name!r} not in _p: _p[{f.name!r}] = {self.const(f.storage.default)}")

    def fresh(self, prefix: str = "t") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    # --- expressions ------------------------------------------------------
    def name_ref(self, name: str, env: _ExprEnv) -> tuple[str, bool]:
        """Source for the current value of field reference ``name``."""
        if name in env.params_here:
            return f"_L({name!r})", False
        state = env.state.get(name)
        if state == "set":
            return env.var[name], env.plain.get(name, False)
        if state == "maybe":
            v = env.var[name]
            return f"({v} if {v} is not _UNSET else _L({name!r}))", False
        return env.outer(name), False

    def test(self, e: Any, env: _ExprEnv) -> str:
        """Source whose truth value is that of expression ``e``'s value."""
        c = self.cached("test", e, env, lambda: self._test(e, env))
        return c if c is not None else self._test(e, env)

    def _test(self, e: Any, env: _ExprEnv) -> str:
        if isinstance(e, dict) and len(e) == 1:
            (op, arg), = e.items()
            args = arg if isinstance(arg, list) else [arg]
            if op in ("gt", "lt", "ge", "eq", "ne") and len(args) == 2:
                sym = {"gt": ">", "lt": "<", "ge": ">=", "eq": "==", "ne": "!="}[op]
                return f"({self.num(args[0], env)} {sym} {self.num(args[1], env)})"
            if op in ("and", "or") and len(args) == 1:
                return self.test(args[0], env)
            if op == "and":
                return "(" + " and ".join(self.test(a, env) for a in args) + ")" if args else "True"
            if op == "or":
                return "(" + " or ".join(self.test(a, env) for a in args) + ")" if args else "False"
            if op == "not" and len(args) == 1:
                return f"(not {self.test(args[0], env)})"
        if isinstance(e, list):
            return self.test({"and": e}, env)
        return self.expr(e, env)[0]

    def num(self, e: Any, env: _ExprEnv) -> str:
        if isinstance(e, str) and e not in env.params_here and e not in env.state:
            return env.num_name(e)
        src, plain = self.expr(e, env)
        return src if plain else f"_num({src})"

    def cached(self, form: str, e: Any, env: _ExprEnv, build) -> str | None:
        """A local computed once in the record's prologue for a non-trivial
        expression that depends only on outer names (None when not eligible)."""
        if not isinstance(e, dict) or not _has_names(e) or not env.pure_outer(e):
            return None
        key = (form, json.dumps(e, sort_keys=True))
        v = env.cse.get(key)
        if v is None:
            src = build()
            if re.fullmatch(r"[A-Za-z_]\w*", src):
                v = env.cse[key] = src   # already a local (a shorter cached form)
            else:
                v = env.cse[key] = f"{env.prefix}X{len(env.cse)}"
                env.cse_lines.append((v, src))
        return v

    def expr(self, e: Any, env: _ExprEnv) -> tuple[str, bool]:
        """Python source for expression ``e`` and whether its value is a plain
        number (so ``_num`` is the identity on it)."""
        plain: list[bool] = []

        def build() -> str:
            src, p = self._expr(e, env)
            plain.append(p)
            return src
        c = self.cached("value", e, env, build)
        if c is not None:
            key = ("value", json.dumps(e, sort_keys=True))
            p = env.cse_plain.setdefault(key, plain[0] if plain else False)
            return c, p
        return self._expr(e, env)

    def _expr(self, e: Any, env: _ExprEnv) -> tuple[str, bool]:
        if isinstance(e, bool):
            return str(int(e)), True
        if isinstance(e, int):
            return repr(e), True
        if isinstance(e, float):
            if e != e or e in (float("inf"), float("-inf")):
                return self.const(e), True
            return repr(e), True
        if isinstance(e, str):
            return self.name_ref(e, env)
        op, arg, args = split_operator(e)
        if op == "length":
            return f"len({self.expr(arg, env)[0]})", True
        if op == "present":
            return f"(1 if _S.has({arg!r}) else 0)", True
        if op == "float":
            return f"float({self.expr(arg, env)[0]})", True
        if op == "remaining":
            if env.mode == "decode":
                return "(end - pos)", True
            return "(1 if _S.present else 0)", True
        ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        if op in ("gt", "lt", "ge", "eq", "ne", "and", "or", "not"):
            if op in ("gt", "lt", "ge", "eq", "ne") and len(args) != 2:
                raise ValueError(f"{op} takes two operands")
            return f"(1 if {self.test(e, env)} else 0)", True
        if op == "minus":
            a, b = args
            if len(ints) == 2:
                return repr(a - b), True
            return f"({self.num(a, env)} - {self.num(b, env)})", True
        if op == "plus":
            if len(ints) == len(args):
                return repr(sum(args)), True
            return "(0 + " + " + ".join(self.num(a, env) for a in args) + ")", True
        if op == "product":
            return "(1 * " + " * ".join(self.num(a, env) for a in args) + ")", True
        if op in ("min", "max"):
            return f"{op}((" + ", ".join(self.num(a, env) for a in args) + ",))", True
        if op == "mask":
            a, b = args
            sa = repr(a) if a in ints else f"int({self.num(a, env)})"
            sb = repr(b) if b in ints else f"int({self.num(b, env)})"
            return f"({sa} & {sb})", True
        if op == "divide":
            a, b = args
            return f"_int_div({self.num(a, env)}, {self.num(b, env)}, _S)", True
        if op == "select":
            idx, *cases = args
            if all(isinstance(c, (int, float)) for c in cases):
                srcs = [self.expr(c, env)[0] for c in cases]
                return f"_select({self.num(idx, env)}, (" + "".join(x + ", " for x in srcs) + "))", False
            # cases evaluated lazily, as the interpreter does
            return f"{self.const(L.compile_expr(e), 'E')}(_S)", False
        if op == "choose":
            c, a, b = args
            sa, pa = self.expr(a, env)
            sb, pb = self.expr(b, env)
            return f"({sa} if {self.test(c, env)} else {sb})", pa and pb
        raise ValueError(f"unknown operator {op!r}")

    # --- entry points -----------------------------------------------------
    def dec_record_fn(self, rec: "L.Record") -> str:
        name = self.dec_names.get(id(rec))
        if name is None:
            name = self.dec_names[id(rec)] = f"D{len(self.dec_names)}_{_ident(rec.name)}"
            self.pending.append(("dec", rec))
        return name

    def enc_record_fn(self, rec: "L.Record") -> str:
        name = self.enc_names.get(id(rec))
        if name is None:
            name = self.enc_names[id(rec)] = f"W{len(self.enc_names)}_{_ident(rec.name)}"
            self.pending.append(("enc", rec))
        return name

    def build(self) -> None:
        while self.pending:
            kind, rec = self.pending.pop()
            if kind == "dec":
                self.gen_dec_record(rec)
            else:
                self.gen_enc_record(rec)
        new = self.lines[self.built:]
        self.built = len(self.lines)
        exec(compile("\n".join(new) + "\n", f"<potsherd fastpath {id(self.layout):x}>", "exec"), self.ns)

    @property
    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    # ======================================================================
    # decode

    def gen_dec_record(self, rec: "L.Record") -> None:
        fname = self.dec_names[id(rec)]
        body, frameless, _ = self.dec_record_body(rec, "rec", "")
        out = [f"def {fname}(buf, pos, end, _S, _R):",
               "    frames = _S.frames",
               "    if len(frames) > _S.limits.max_depth: raise _FB",
               "    _L = _S.lookup"]
        if frameless:
            # nothing can look into this record while it is read (no nested
            # record, no delegated storage): its dict need not be on the stack
            out += body + ["    return rec, pos"]
        else:
            k = body.index("    rec = {}") + 1
            out += body[:k] + ["    frames.append(rec)"] + body[k:] + ["    frames.pop()", "    return rec, pos"]
        self.lines.extend(out)
        self.lines.append("")

    _NEEDS_FRAME = re.compile(r"\bD\d+_\w*\(|\.decode\(_R, _S\)|\bE\d+\(_S\)|_S\.has\(|# frame")
    _LOOKS_UP = re.compile(r"\b_LS?\(")

    def dec_record_body(self, rec: "L.Record", recvar: str, prefix: str) -> tuple[list[str], bool, bool]:
        """The statements reading ``rec`` into ``recvar`` (base indent 4).

        Returns (lines, frameless, self_contained): frameless when nothing in
        the body can look names up in this record's dict; self-contained when
        the body does no lookup at all (it can be inlined anywhere)."""
        self.in_progress.add(id(rec))
        try:
            out = [f"    {recvar} = {{}}"]
            env = _ExprEnv("decode", rec, prefix)
            counts: dict[str, int] = {}
            for f in rec.fields:
                counts[f.name] = counts.get(f.name, 0) + 1
            for kind, group in _field_groups(rec.fields):
                if kind == "param":
                    self.param_default(group, out)
                    continue
                if kind == "run":
                    self.dec_run(group, _run_order(group[0].storage), out, env, counts, "    ", recvar)
                    continue
                f = group
                ind = "    "
                if f.cond is not None:
                    cs = self.test(f.cond_src if f.cond_src != "optional tail"
                                   else {"gt": [{"remaining": []}, 0]}, env)
                    out.append(f"    if {cs}:")
                    ind = "        "
                var = self.fresh("v")
                self.dec_storage(f.storage, var, out, ind, env)
                out.append(f"{ind}{recvar}[{f.name!r}] = {var}")
                env.define(f.name, var, f.cond is not None, out, ind)
            lines = env.prologue() + out
        finally:
            self.in_progress.discard(id(rec))
        text = "\n".join(lines)
        frameless = self._NEEDS_FRAME.search(text) is None
        return lines, frameless, frameless and self._LOOKS_UP.search(text) is None

    def inlinable(self, rec: Any) -> bool:
        """A small record (not one being generated: no recursion) is expanded
        where it is used instead of called."""
        if id(rec) in self.in_progress:
            return False
        ok = self.inline_ok.get(id(rec))
        if ok is None:
            lines, _, _ = self.dec_record_body(rec, "_probe", "p_")
            ok = self.inline_ok[id(rec)] = len(lines) <= 60
        return ok

    def dec_inline_record(self, rec: Any, var: str, out: list, ind: str, depth_check: bool) -> None:
        lines, frameless, contained = self.dec_record_body(rec, var, self.fresh("i") + "_")
        if depth_check:
            out.append(f"{ind}if len(frames) > _S.limits.max_depth: raise _FB")
        if not contained:
            # its lookups may reach the enclosing record: that one keeps its frame
            out.append(f"{ind}# frame")
        if not frameless:
            k = lines.index(f"    {var} = {{}}") + 1
            lines = lines[:k] + [f"    frames.append({var})"] + lines[k:] + ["    frames.pop()"]
        out.extend(ind + line[4:] for line in lines)

    def dec_run(self, run: list, order: str, out: list, env: _ExprEnv, counts: dict, ind: str,
                recvar: str = "rec") -> None:
        fmt = order
        slots: list[tuple[Any, list[str]]] = []
        nanchecks: list[tuple[str, str]] = []
        off = 0
        for f in run:
            st = f.storage
            if isinstance(st, L.Prim):
                v = self.fresh("r")
                fmt += st.st.format[-1]
                slots.append((f, [v]))
                if st.kind == "f":
                    nanchecks.append((v, f"{self.const(_bits_reader(st), 'NB')}(buf, pos + {off})"))
            elif isinstance(st, L.Group):
                vs = [self.fresh("r") for _ in range(st.n)]
                fmt += st.prim.st.format[-1] * st.n
                slots.append((f, vs))
                if st.prim.kind == "f":
                    for k, v in enumerate(vs):
                        nanchecks.append((v, f"{self.const(_bits_reader(st.prim), 'NB')}"
                                             f"(buf, pos + {off + k * st.prim.size})"))
            else:  # fixed bytes
                v = self.fresh("r")
                fmt += f"{st.size}s"
                slots.append((f, [v]))
            off += st.size
        ST = struct.Struct(fmt)
        assert ST.size == off
        allv = [v for _, vs in slots for v in vs]
        out.append(f"{ind}if pos + {off} > end: raise _FB")
        out.append(f"{ind}{', '.join(allv)}, = {self.const(ST.unpack_from, 'U')}(buf, pos)")
        for v, fix in nanchecks:
            out.append(f"{ind}if {v} != {v}: {v} = {fix}")
        for f, vs in slots:
            if isinstance(f.storage, L.Group):
                g = self.fresh("g")
                out.append(f"{ind}{recvar}[{f.name!r}] = {g} = [{', '.join(vs)}]")
                env.define(f.name, g, False, out, ind)
            else:
                out.append(f"{ind}{recvar}[{f.name!r}] = {vs[0]}")
                env.define(f.name, vs[0], False, out, ind)
        out.append(f"{ind}pos += {off}")

    def is_int(self, e: Any, env: _ExprEnv) -> bool:
        """The expression's value is certainly a Python int here."""
        if isinstance(e, bool):
            return False
        if isinstance(e, int):
            return True
        if isinstance(e, str):
            return env.state.get(e) == "set" and env.ints.get(e, False)
        if isinstance(e, dict) and len(e) == 1:
            (op, arg), = e.items()
            args = arg if isinstance(arg, list) else [arg]
            if op in ("product", "plus", "minus", "min", "max"):
                return all(self.is_int(a, env) for a in args)
            if op in ("mask", "length"):
                return True
        return False

    def dec_count(self, src_expr: Any, var: str, out: list, ind: str, env: _ExprEnv) -> None:
        """``var = count`` with the interpreter's Array._n semantics."""
        if isinstance(src_expr, int) and not isinstance(src_expr, bool):
            out.append(f"{ind}{var} = {max(src_expr, 0)}")
            return
        src, plain = self.expr(src_expr, env)
        if self.is_int(src_expr, env):
            out.append(f"{ind}{var} = {src}")
            out.append(f"{ind}if {var} < 0: {var} = 0")
            return
        msg = f"array count {src_expr!r} selects no case; read as empty"
        out.append(f"{ind}{var} = {src}")
        out.append(f"{ind}if {var}.__class__ is not int:")
        out.append(f"{ind}    if {var} is None:")
        out.append(f"{ind}        _S.warnings.append({msg!r}); {var} = 0")
        out.append(f"{ind}    else: raise _FB")
        out.append(f"{ind}elif {var} < 0: {var} = 0")

    def dec_delegate(self, st: "L.Storage", var: str, out: list, ind: str) -> None:
        out.append(f"{ind}_R.pos = pos")
        out.append(f"{ind}{var} = {self.const(st, 'ST')}.decode(_R, _S)")
        out.append(f"{ind}pos = _R.pos")

    def dec_storage(self, st: "L.Storage", var: str, out: list, ind: str, env: _ExprEnv) -> None:
        t = _kind(st)
        if t is L.Prim:
            out.append(f"{ind}if pos + {st.size} > end: raise _FB")
            out.append(f"{ind}{var}, = {self.const(st.st.unpack_from, 'U')}(buf, pos)")
            if st.kind == "f":
                out.append(f"{ind}if {var} != {var}: {var} = {self.const(_bits_reader(st), 'NB')}(buf, pos)")
            out.append(f"{ind}pos += {st.size}")
        elif t is L.Group:
            out.append(f"{ind}if pos + {st.size} > end: raise _FB")
            out.append(f"{ind}{var} = list({self.const(st.st.unpack_from, 'U')}(buf, pos))")
            if st.prim.kind == "f":
                nb = self.const(_bits_reader(st.prim), "NB")
                for k in range(st.n):
                    out.append(f"{ind}if {var}[{k}] != {var}[{k}]: {var}[{k}] = {nb}(buf, pos + {k * st.prim.size})")
            out.append(f"{ind}pos += {st.size}")
        elif t is L.String:
            pu = self.const(st.prefix.st.unpack_from, "U")
            ps = st.prefix.size
            out.append(f"{ind}if pos + {ps} > end: raise _FB")
            out.append(f"{ind}{var}, = {pu}(buf, pos)")
            out.append(f"{ind}pos += {ps}")
            out.append(f"{ind}if {var} <= 0: {var} = RawString(b'', {var} if {var} < 0 else None)")
            out.append(f"{ind}elif {var} > end - pos: raise _FB")
            out.append(f"{ind}else:")
            out.append(f"{ind}    {var} = RawString(buf[pos:pos + {var}]); pos += len({var})")
        elif t is L.Bytes and st.size is not None:
            n = st.size
            out.append(f"{ind}if pos + {n} > end: raise _FB")
            out.append(f"{ind}{var} = buf[pos:pos + {n}]")
            out.append(f"{ind}pos += {n}")
        elif t is L.Tail:
            out.append(f"{ind}{var} = buf[pos:end]")
            out.append(f"{ind}pos = end")
        elif t is L.Record:
            if self.inlinable(st):
                self.dec_inline_record(st, var, out, ind, True)
            else:
                out.append(f"{ind}{var}, pos = {self.dec_record_fn(st)}(buf, pos, end, _S, _R)")
        elif t is L.Choice:
            cs = self.fresh("c")
            src = self.expr_from_compiled(st, env)
            out.append(f"{ind}{cs} = {src}")
            out.append(f"{ind}if {cs}:")
            self.dec_storage(st.yes, var, out, ind + "    ", env)
            out.append(f"{ind}else:")
            self.dec_storage(st.no, var, out, ind + "    ", env)
        elif t is L.StructRecord:
            self.dec_struct_record(st, var, out, ind)
        elif t is L.Array:
            self.dec_array(st, var, out, ind, env)
        else:
            self.dec_delegate(st, var, out, ind)

    def expr_from_compiled(self, st: Any, env: _ExprEnv) -> str:
        src_expr = getattr(st, "cond_src", None)
        if src_expr is None:
            return f"{self.const(st.cond, 'E')}(_S)"
        return self.test(src_expr, env)

    def dec_struct_record(self, st: "L.StructRecord", var: str, out: list, ind: str) -> None:
        vs = [self.fresh("r") for _ in st.names]
        out.append(f"{ind}if pos + {st.size} > end: raise _FB")
        out.append(f"{ind}{', '.join(vs)}, = {self.const(st.st.unpack_from, 'U')}(buf, pos)")
        for v, fo in zip(vs, st.float_offs):
            if fo is not None:
                off, kind = fo
                nb = self.const(_float_nan_reader(">" if st.big else "<", 4 if kind == "f32" else 8), "NB")
                out.append(f"{ind}if {v} != {v}: {v} = {nb}(buf, pos + {off})")
        out.append(f"{ind}{var} = {{" + ", ".join(f"{n!r}: {v}" for n, v in zip(st.names, vs)) + "}")
        out.append(f"{ind}pos += {st.size}")

    def dec_array(self, st: "L.Array", var: str, out: list, ind: str, env: _ExprEnv) -> None:
        n = self.fresh("n")
        item = st.item
        if st.elem_dtype is not None:
            base = st.elem_dtype.base
            shape = st.elem_dtype.shape
            k = int(np.prod(shape)) if shape else 1
            isz = st.elem_dtype.itemsize
            self.dec_count(st.count_src, n, out, ind, env)
            out.append(f"{ind}if {n} * {isz} > end - pos: raise _FB")
            arr = f"_fbuf(buf, {self.const(base, 'DT')}, {n} * {k}, pos).copy()" if k != 1 else \
                f"_fbuf(buf, {self.const(base, 'DT')}, {n}, pos).copy()"
            if shape:
                arr += f".reshape(({n},) + {shape!r})"
            out.append(f"{ind}{var} = {arr}")
            out.append(f"{ind}pos += {n} * {isz}")
            return
        if st.inner_count is not None:
            inner = item.count_src
            dt = st.inner_dtype
            self.dec_count(st.count_src, n, out, ind, env)
            out.append(f"{ind}if {n} == 0: {var} = np.zeros((0, 0), dtype={self.const(dt, 'DT')})")
            out.append(f"{ind}else:")
            k = self.fresh("k")
            self.dec_count(inner, k, out, ind + "    ", env)
            out.append(f"{ind}    if {k} == 0:")
            out.append(f"{ind}        if {n} > end - pos + 65536 or {n} > _S.limits.max_elements: raise _FB")
            out.append(f"{ind}    elif {n} * {k} * {dt.itemsize} > end - pos: raise _FB")
            out.append(f"{ind}    {var} = _fbuf(buf, {self.const(dt, 'DT')}, {n} * {k}, pos).copy()"
                       f".reshape({n}, {k})")
            out.append(f"{ind}    pos += {n} * {k} * {dt.itemsize}")
            return
        if item.min_size <= 0:
            self.dec_delegate(st, var, out, ind)
            return
        fixed = _fixed_record_fields(item)
        if fixed is not None:
            self.dec_count(st.count_src, n, out, ind, env)
            self.dec_fixed_records(item, fixed, n, var, out, ind)
            return
        self.dec_count(st.count_src, n, out, ind, env)
        out.append(f"{ind}if {n} * {item.min_size} > end - pos: raise _FB")
        out.append(f"{ind}{var} = []")
        ap = self.fresh("ap")
        out.append(f"{ind}{ap} = {var}.append")
        x = self.fresh("x")
        if _kind(item) is L.Record and self.inlinable(item):
            # items leave the stack as they found it: check its depth once
            out.append(f"{ind}if {n} and len(frames) > _S.limits.max_depth: raise _FB")
            out.append(f"{ind}for _ in range({n}):")
            self.dec_inline_record(item, x, out, ind + "    ", False)
        else:
            out.append(f"{ind}for _ in range({n}):")
            self.dec_storage(item, x, out, ind + "    ", env)
        out.append(f"{ind}    {ap}({x})")

    def dec_fixed_records(self, item: Any, fixed: list, n: str, var: str, out: list, ind: str) -> None:
        """An array of fixed all-scalar records: one iter_unpack, dicts built by
        a comprehension, NaNs located with numpy."""
        order = fixed[0][3]
        fmt = order
        parts = []   # (name, [tuple var names], kind)
        floats = []  # (field index, slot index in group or None, offset, prim)
        off = 0
        for fi, (name, st, kind, _o) in enumerate(fixed):
            if kind == "prim":
                v = self.fresh("q")
                fmt += st.st.format[-1]
                parts.append((name, [v], kind))
                if st.kind == "f":
                    floats.append((name, None, off, st))
                off += st.size
            elif kind == "group":
                vs = [self.fresh("q") for _ in range(st.n)]
                fmt += st.prim.st.format[-1] * st.n
                parts.append((name, vs, kind))
                if st.prim.kind == "f":
                    for k in range(st.n):
                        floats.append((name, k, off + k * st.prim.size, st.prim))
                off += st.size
            else:  # bytes
                v = self.fresh("q")
                fmt += f"{st}s"
                parts.append((name, [v], kind))
                off += st
        is_struct_record = _kind(item) is L.StructRecord
        if is_struct_record:
            # the record's own struct (its codes, e.g. "?", decode as it does)
            fmt = item.st.format
            floats = []
            for (name, _st, _k, _o), fo in zip(fixed, item.float_offs):
                if fo is not None:
                    floats.append((name, None, fo[0], (order, 4 if fo[1] == "f32" else 8)))
        ST = struct.Struct(fmt)
        size = ST.size
        out.append(f"{ind}if {n} * {size} > end - pos: raise _FB")
        if not is_struct_record:
            out.append(f"{ind}if {n} and len(frames) > _S.limits.max_depth: raise _FB")
        allv = [v for _, vs, _ in parts for v in vs]
        fields = []
        for name, vs, kind in parts:
            fields.append(f"{name!r}: " + (f"[{', '.join(vs)}]" if kind == "group" else vs[0]))
        it = self.const(ST.iter_unpack, "IT")
        out.append(f"{ind}{var} = [{{{', '.join(fields)}}} for {', '.join(allv)}, in "
                   f"{it}(_mv(buf)[pos:pos + {n} * {size}])]")
        if floats:
            out.append(f"{ind}if {n}:")
            for name, k, foff, prim in floats:
                if isinstance(prim, tuple):
                    o, sz = prim
                    dt = self.const(np.dtype(o + ("f4" if sz == 4 else "f8")), "DT")
                    nb = self.const(_float_nan_reader(o, sz), "NB")
                else:
                    dt = self.const(prim.dtype, "DT")
                    nb = self.const(_bits_reader(prim), "NB")
                idx = self.fresh("i")
                out.append(f"{ind}    for {idx} in _nanpos(buf, pos, {n}, {size}, {foff}, {dt}).tolist():")
                target = f"{var}[{idx}][{name!r}]" + (f"[{k}]" if k is not None else "")
                out.append(f"{ind}        {target} = {nb}(buf, pos + {idx} * {size} + {foff})")
        out.append(f"{ind}pos += {n} * {size}")

    # ======================================================================
    # encode

    def gen_enc_record(self, rec: "L.Record") -> None:
        fname = self.enc_names[id(rec)]
        env = _ExprEnv("encode", rec)
        known = set()
        for f in rec.fields:
            known.add(f.name)
        out = [f"def {fname}(wr, v, _S, _W):",
               "    if v.__class__ is not dict: raise _FB"]
        if rec.derivations:
            out.extend(self.enc_count_check(rec, "    "))
        out += ["    frames = _S.frames",
                "    if len(frames) > _S.limits.max_depth: raise _FB",
                "    cur = {}",
                "    frames.append(cur)",
                "    _L = _S.lookup"]
        head, out = out, []
        counts: dict[str, int] = {}
        for f in rec.fields:
            counts[f.name] = counts.get(f.name, 0) + 1
        for kind, group in _field_groups(rec.fields):
            if kind == "param":
                self.param_default(group, out)
                continue
            if kind == "run":
                self.enc_run(group, _run_order(group[0].storage), out, env, counts, "    ")
                continue
            f = group
            ind = "    "
            x = self.fresh("x")
            if f.cond is not None:
                out.append(f"    _S.present = {f.name!r} in v")
                cs = self.test(f.cond_src if f.cond_src != "optional tail"
                               else {"gt": [{"remaining": []}, 0]}, env)
                out.append(f"    if {cs}:")
                ind = "        "
            elif not (_kind(f.storage) in (L.Prim, L.Group, L.String, L.Tail)
                      or (_kind(f.storage) is L.Bytes and f.storage.size is not None)):
                # (the reference sets it for every field; only these never read it)
                out.append(f"    _S.present = True")
            out.append(f"{ind}{x} = v[{f.name!r}]")
            self.enc_storage(f.storage, x, out, ind, env)
            out.append(f"{ind}cur[{f.name!r}] = {x}")
            env.define(f.name, x, f.cond is not None, out, ind)
        kn = self.const(frozenset(known), "KN")
        out.append(f"    if not {kn}.issuperset(v): raise _FB")
        out.append("    frames.pop()")
        self.lines.extend(head + env.prologue() + out)
        self.lines.append("")

    def enc_count_check(self, rec: "L.Record", ind: str) -> list[str]:
        """Counts that already describe their arrays are kept: check that
        inline; anything else goes through Record.regenerate_counts."""
        by_count: dict[str, list[tuple[str, int]]] = {}
        for cname, aname, k in rec.derivations:
            by_count.setdefault(cname, []).append((aname, k))
        conds = []
        for cname, arrays in by_count.items():
            c = self.fresh("cc")
            conds.append((c, cname, arrays))
        out = []
        tests = []
        for c, cname, arrays in conds:
            out.append(f"{ind}{c} = v.get({cname!r})")
            t = [f"{c}.__class__ is int"]
            for aname, k in arrays:
                t.append(f"({aname!r} not in v or ({c} if {c} > 0 else 0) * {k} == len(v[{aname!r}]))")
            tests.append("(" + " and ".join(t) + ")")
        out.append(f"{ind}if not ({' and '.join(tests)}):")
        out.append(f"{ind}    v = {self.const(rec, 'REC')}.regenerate_counts(v)")
        return out

    def enc_value_check(self, prim: "L.Prim", y: str, off: int, nl: str, out: list, ind: str) -> None:
        """Type check of one scalar; a kept NaN (F32NaN/F64NaN) is written as
        0.0 and its bit pattern patched in afterwards (list ``nl``)."""
        if prim.kind == "i":
            out.append(f"{ind}if {y}.__class__ is not int: raise _FB")
            return
        nan_cls = "_F32NaN" if prim.size == 4 else "_F64NaN"
        out.append(f"{ind}if {y}.__class__ is not float and {y}.__class__ is not int:")
        out.append(f"{ind}    if {y}.__class__ is not {nan_cls}: raise _FB")
        out.append(f"{ind}    {nl}.append(({self.const(prim.bits_st.pack_into, 'BP')}, {off}, {y}.bits)); {y} = 0.0")

    def enc_run(self, run: list, order: str, out: list, env: _ExprEnv, counts: dict, ind: str) -> None:
        fmt = order
        vals: list[str] = []
        nl = self.fresh("nl")
        out.append(f"{ind}{nl} = []")
        off = 0
        for f in run:
            st = f.storage
            x = self.fresh("x")
            out.append(f"{ind}{x} = v[{f.name!r}]")
            out.append(f"{ind}cur[{f.name!r}] = {x}")
            env.define(f.name, x, False, out, ind)
            if isinstance(st, L.Prim):
                fmt += st.st.format[-1]
                y = self.fresh("y")
                out.append(f"{ind}{y} = {x}")
                self.enc_value_check(st, y, off, nl, out, ind)
                vals.append(y)
            elif isinstance(st, L.Group):
                fmt += st.prim.st.format[-1] * st.n
                ys = [self.fresh("y") for _ in range(st.n)]
                out.append(f"{ind}if {x}.__class__ is not list: raise _FB")
                out.append(f"{ind}{', '.join(ys)}, = {x}")
                for k, y in enumerate(ys):
                    self.enc_value_check(st.prim, y, off + k * st.prim.size, nl, out, ind)
                vals.extend(ys)
            else:
                fmt += f"{st.size}s"
                out.append(f"{ind}if ({x}.__class__ is not bytes and {x}.__class__ is not RawString) "
                           f"or len({x}) != {st.size}: raise _FB")
                vals.append(x)
            off += st.size
        ST = struct.Struct(fmt)
        pk = self.const(ST.pack, 'P')
        out.append(f"{ind}wr({pk}({', '.join(vals)}) if not {nl} else _patch({pk}({', '.join(vals)}), {nl}))")

    def enc_delegate(self, st: "L.Storage", x: str, out: list, ind: str) -> None:
        out.append(f"{ind}{self.const(st, 'ST')}.encode(_W, {x}, _S)")

    def enc_count(self, src_expr: Any, var: str, out: list, ind: str, env: _ExprEnv) -> None:
        if isinstance(src_expr, int) and not isinstance(src_expr, bool):
            out.append(f"{ind}{var} = {max(src_expr, 0)}")
            return
        src, _ = self.expr(src_expr, env)
        out.append(f"{ind}{var} = {src}")
        out.append(f"{ind}if {var}.__class__ is not int:")
        out.append(f"{ind}    if {var} is None: {var} = 0")
        out.append(f"{ind}    else: raise _FB")
        out.append(f"{ind}elif {var} < 0: {var} = 0")

    def enc_storage(self, st: "L.Storage", x: str, out: list, ind: str, env: _ExprEnv) -> None:
        t = _kind(st)
        if t is L.Prim:
            if st.kind == "i":
                out.append(f"{ind}if {x}.__class__ is not int: raise _FB")
                out.append(f"{ind}wr({self.const(st.st.pack, 'P')}({x}))")
            else:
                nl, y = self.fresh("nl"), self.fresh("y")
                out.append(f"{ind}{nl} = []; {y} = {x}")
                self.enc_value_check(st, y, 0, nl, out, ind)
                out.append(f"{ind}wr(_patch({self.const(st.st.pack, 'P')}({y}), {nl}))")
        elif t is L.Group:
            ys = [self.fresh("y") for _ in range(st.n)]
            nl = self.fresh("nl")
            out.append(f"{ind}if {x}.__class__ is not list: raise _FB")
            out.append(f"{ind}{', '.join(ys)}, = {x}; {nl} = []")
            for k, y in enumerate(ys):
                self.enc_value_check(st.prim, y, k * st.prim.size, nl, out, ind)
            out.append(f"{ind}wr(_patch({self.const(st.st.pack, 'P')}({', '.join(ys)}), {nl}))")
        elif t is L.String:
            pp = self.const(st.prefix.st.pack, "P")
            out.append(f"{ind}if {x}.__class__ is RawString:")
            out.append(f"{ind}    if {x}.raw_len is not None and not {x}: wr({pp}({x}.raw_len))")
            out.append(f"{ind}    else: wr({pp}(len({x}))); wr(bytes({x}))")
            out.append(f"{ind}elif {x}.__class__ is bytes: wr({pp}(len({x}))); wr({x})")
            out.append(f"{ind}else: raise _FB")
        elif (t is L.Bytes and st.size is not None) or t is L.Tail:
            out.append(f"{ind}if {x}.__class__ is not bytes and {x}.__class__ is not RawString: raise _FB")
            if t is L.Bytes:
                out.append(f"{ind}if len({x}) != {st.size}: raise _FB")
            out.append(f"{ind}wr(bytes({x}))")
        elif t is L.Record:
            out.append(f"{ind}{self.enc_record_fn(st)}(wr, {x}, _S, _W)")
        elif t is L.Choice:
            src = self.expr_from_compiled(st, env)
            out.append(f"{ind}if {src}:")
            self.enc_storage(st.yes, x, out, ind + "    ", env)
            out.append(f"{ind}else:")
            self.enc_storage(st.no, x, out, ind + "    ", env)
        elif t is L.StructRecord:
            self.enc_struct_record(st, x, out, ind)
        elif t is L.Array:
            self.enc_array(st, x, out, ind, env)
        else:
            self.enc_delegate(st, x, out, ind)

    def enc_struct_record(self, st: "L.StructRecord", x: str, out: list, ind: str) -> None:
        fixed = _fixed_record_fields(st)
        if fixed is None:
            self.enc_delegate(st, x, out, ind)
            return
        fmt = fixed[0][3] if fixed else "<"
        for name, fst, kind, _o in fixed:
            fmt += f"{fst}s" if kind == "bytes" else fst.st.format[-1]
        out.append(f"{ind}if {x}.__class__ is not dict or len({x}) != {len(set(st.names))}: raise _FB")
        ys = []
        for (name, kind, n) in st.fields:
            y = self.fresh("y")
            ys.append(y)
            out.append(f"{ind}{y} = {x}[{name!r}]")
            if kind == "bytes":
                out.append(f"{ind}if ({y}.__class__ is not bytes and {y}.__class__ is not RawString) "
                           f"or len({y}) != {n}: raise _FB")
            else:
                out.append(f"{ind}if {_type_test(st._prim(kind), y)}: raise _FB")
        out.append(f"{ind}wr({self.const(struct.Struct(fmt).pack, 'P')}({', '.join(ys)}))")

    def enc_array(self, st: "L.Array", x: str, out: list, ind: str, env: _ExprEnv) -> None:
        n = self.fresh("n")
        item = st.item
        if st.elem_dtype is not None or st.inner_count is not None:
            self.enc_count(st.count_src, n, out, ind, env)
            a = self.fresh("a")
            if st.elem_dtype is not None:
                dt = self.const(st.elem_dtype.base, "DT")
                shape = f"({n},) + {tuple(st.elem_dtype.shape)!r}"
            else:
                dt = self.const(st.inner_dtype, "DT")
                k = self.fresh("k")
                out.append(f"{ind}if {n}:")
                self.enc_count(item.count_src, k, out, ind + "    ", env)
                out.append(f"{ind}else: {k} = 0")
                shape = f"({n}, {k})"
            out.append(f"{ind}if {x}.__class__ is not np.ndarray or {x}.dtype != {dt}: raise _FB")
            out.append(f"{ind}if {x}.shape != {shape} and not ({n} == 0 and {x}.size == 0): raise _FB")
            out.append(f"{ind}wr({x}.tobytes())")
            return
        out.append(f"{ind}if {x}.__class__ is not list: raise _FB")
        self.enc_count(st.count_src, n, out, ind, env)
        out.append(f"{ind}if len({x}) != {n}: raise _FB")
        fixed = _fixed_record_fields(item)
        if fixed is not None:
            self.enc_fixed_records(item, fixed, x, out, ind)
            return
        y = self.fresh("e")
        out.append(f"{ind}for {y} in {x}:")
        self.enc_storage(item, y, out, ind + "    ", env)

    def enc_fixed_records(self, item: Any, fixed: list, x: str, out: list, ind: str) -> None:
        order = fixed[0][3]
        fmt = order
        body = []
        vals = []
        d = self.fresh("d")
        for name, st, kind, _o in fixed:
            y = self.fresh("y")
            body.append(f"{y} = {d}[{name!r}]")
            if kind == "prim":
                fmt += st.st.format[-1]
                body.append(f"if {_type_test(st, y)}: raise _FB")
                vals.append(y)
            elif kind == "group":
                fmt += st.prim.st.format[-1] * st.n
                zs = [self.fresh("z") for _ in range(st.n)]
                body.append(f"if {y}.__class__ is not list: raise _FB")
                body.append(f"{', '.join(zs)}, = {y}")
                for z in zs:
                    body.append(f"if {_type_test(st.prim, z)}: raise _FB")
                vals.extend(zs)
            else:
                fmt += f"{st}s"
                body.append(f"if ({y}.__class__ is not bytes and {y}.__class__ is not RawString) "
                            f"or len({y}) != {st}: raise _FB")
                vals.append(y)
        ST = struct.Struct(fmt)
        nkeys = len({f[0] for f in fixed})
        if _kind(item) is not L.StructRecord:
            out.append(f"{ind}if {x} and len(_S.frames) > _S.limits.max_depth: raise _FB")
        pk = self.const(ST.pack, "P")
        parts = self.fresh("pp")
        out.append(f"{ind}{parts} = []")
        out.append(f"{ind}for {d} in {x}:")
        out.append(f"{ind}    if {d}.__class__ is not dict or len({d}) != {nkeys}: raise _FB")
        for b in body:
            out.append(f"{ind}    {b}")
        out.append(f"{ind}    {parts}.append({pk}({', '.join(vals)}))")
        out.append(f"{ind}wr(b''.join({parts}))")


class _Unset:
    """A field of the current record not read (or written) yet."""

    __slots__ = ()


_UNSET = _Unset()


def _lookup_or_missing(frames: list, name: str) -> Any:
    for i in range(len(frames) - 1, -1, -1):
        v = frames[i].get(name, _UNSET)
        if v is not _UNSET:
            return v
    return _MISSING_NAME


def _has_names(e: Any) -> bool:
    return bool(references(e))


def _storage_references(st: Any, seen: set | None = None) -> set[str]:
    """Names used by the expressions of a storage (not of records it refers to)."""
    out: set[str] = set()
    k = _kind(st)
    if k is L.Array:
        out |= references(st.count_src) | _storage_references(st.item)
    elif k is L.Bytes:
        out |= references(st.count_src)
    elif k is L.Choice:
        out |= references(st.cond_src) | _storage_references(st.yes) | _storage_references(st.no)
    return out


def _is_int(st: Any) -> bool:
    k = _kind(st)
    if k is L.Prim:
        return st.kind == "i"
    if k is L.Choice:
        return _is_int(st.yes) and _is_int(st.no)
    return False


def _is_plain_number(st: Any) -> bool:
    """Values of this storage are int/float (``_num`` is the identity)."""
    k = _kind(st)
    if k is L.Prim:
        return True
    if k is L.Choice:
        return _is_plain_number(st.yes) and _is_plain_number(st.no)
    return False


def _type_test(prim: "L.Prim", x: str) -> str:
    """Source of a test that is true when ``x`` is not a value the fast path
    packs exactly as Prim.encode would (the reference then decides)."""
    if prim.kind == "i":
        return f"{x}.__class__ is not int"
    return f"({x}.__class__ is not float and {x}.__class__ is not int)"


_KINDS = None


def _kind(st: Any) -> type | None:
    """The engine class whose decode/encode ``st`` uses unchanged (a subclass
    that only changes the JSON view, like a family's string, still counts),
    or None for custom storages (delegated to their own methods)."""
    global _KINDS
    if _KINDS is None:
        _KINDS = (L.Prim, L.Group, L.String, L.Bytes, L.Tail, L.Record, L.Choice,
                  L.StructRecord, L.Array)
    for k in _KINDS:
        if isinstance(st, k):
            t = type(st)
            if t.decode is k.decode and t.encode is k.encode:
                return k
            return None
    return None


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _field_groups(fields: list) -> Iterator[tuple[str, Any]]:
    """Split a record's fields for code generation, in order: ``("param", f)``
    for a parameter, ``("run", [f...])`` for two or more consecutive
    unconditional fixed scalars of one byte order (one struct call), and
    ``("field", f)`` for anything else.  Decoder and encoder share it so they
    always agree on the byte layout of a run."""
    i = 0
    while i < len(fields):
        f = fields[i]
        if f.is_param:
            yield "param", f
            i += 1
            continue
        j = i
        order = None
        while j < len(fields) and fields[j].cond is None and not fields[j].is_param:
            o = _run_order(fields[j].storage)
            if o is None or (order is not None and o != order):
                break
            order = o
            j += 1
        if j - i >= 2:
            yield "run", fields[i:j]
            i = j
        else:
            yield "field", f
            i += 1


def _run_order(st: "L.Storage") -> str | None:
    """The struct byte order of a fixed scalar storage that can join a run."""
    t = _kind(st)
    if t is L.Prim:
        return st.st.format[0]
    if t is L.Group:
        return st.prim.st.format[0]
    if t is L.Bytes and st.size is not None and st.size > 0:
        return "<"
    return None


def _fixed_record_fields(item: Any) -> list | None:
    """For a record of unconditional fixed scalars (or a StructRecord):
    [(name, storage-or-size, kind, order)], else None."""
    if _kind(item) is L.StructRecord:
        order = ">" if item.big else "<"
        out = []
        for name, kind, n in item.fields:
            if kind == "bytes":
                out.append((name, n, "bytes", order))
            else:
                prim = item._prim(kind)
                if prim.size > 1 and prim.st.format[0] != order:
                    return None  # (a big-endian record writes this one little-endian)
                out.append((name, prim, "prim", order))
        if len({f[0] for f in out}) != len(out) or not item.size:
            return None
        return out
    if _kind(item) is not L.Record or not item.fields:
        return None
    out = []
    order = None
    for f in item.fields:
        if f.cond is not None or f.is_param:
            return None
        st = f.storage
        t = _kind(st)
        if t is L.Prim:
            o, entry = st.st.format[0], (f.name, st, "prim")
        elif t is L.Group:
            o, entry = st.prim.st.format[0], (f.name, st, "group")
        elif t is L.Bytes and st.size is not None and st.size > 0:
            o, entry = None, (f.name, st.size, "bytes")
        else:
            return None
        if o is not None:
            if order is not None and o != order:
                return None
            order = o
        out.append(entry)
    if len({e[0] for e in out}) != len(out):
        return None
    order = order or "<"
    return [(n, s, k, order) for n, s, k in out]


class _Compiled(dict):
    """root name -> generated function, compiled on first lookup."""

    def __init__(self, owner: "FastLayout", kind: str) -> None:
        super().__init__()
        self.owner, self.kind = owner, kind

    def __missing__(self, root: str) -> Callable | None:
        fn = self[root] = self.owner.compile(self.kind, root)
        return fn


class FastLayout:
    """The compiled decoder/encoder of one :class:`Layout`."""

    def __init__(self, layout: "L.Layout") -> None:
        self.layout = layout
        self.gen = _Gen(layout)
        self.dec = _Compiled(self, "dec")
        self.enc = _Compiled(self, "enc")
        self.lock = threading.Lock()
        self.broken = False

    @property
    def source(self) -> str:
        return self.gen.source

    def compile(self, kind: str, root: str) -> Callable | None:
        """The generated function for ``root`` (code generated on first use:
        a root and the records it reaches)."""
        rec = self.layout.records.get(root)
        if rec is None or self.broken:
            return None
        with self.lock:
            try:
                name = self.gen.dec_record_fn(rec) if kind == "dec" else self.gen.enc_record_fn(rec)
                self.gen.build()
                return self.gen.ns[name]
            except Exception:  # noqa: BLE001 - never worse than the interpreter
                self.broken = True
                return None

    def decode(self, root: str, data: bytes, params: dict | None, limits: Any,
               start: int) -> tuple[Any, int, dict, list] | None:
        """(value, end, params, warnings), or None: the reference must decide."""
        fn = self.dec[root]
        if fn is None or len(data) - start > limits.max_elements:
            # (the generated code relies on: an array that fits in the input
            # has fewer than max_elements items, items being >= 1 byte)
            return None
        p = dict(params or {})
        r = L.Reader(data, start, limits=limits)
        warnings: list[str] = []
        s = L.Scope(p, r, limits, warnings)
        pause = r.end - start >= GC_PAUSE_BYTES and gc.isenabled()
        try:
            if pause:
                gc.disable()
            v, pos = fn(r.buf, start, r.end, s, r)
        except Exception:  # noqa: BLE001 - any surprise: the reference decides
            return None
        finally:
            if pause:
                gc.enable()
        return v, pos, p, warnings

    def encode(self, root: str, value: Any, params: dict | None, limits: Any) -> bytes | None:
        fn = self.enc[root]
        if fn is None:
            return None
        w = L.Writer()
        s = L.Scope(dict(params or {}), None, limits)
        try:
            fn(w.write, value, s, w)
        except Exception:  # noqa: BLE001 - the reference decides (and words the error)
            return None
        return w.getvalue()
