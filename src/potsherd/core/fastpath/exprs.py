"""Expression compilation: field references held in locals, inline Python with
the exact semantics of :mod:`potsherd.core.expr`; the generator's shared base."""
from __future__ import annotations

import json
import linecache
import re
from typing import Any

import numpy as np

from ..expr import _int_div, _num, references, split_operator
from ..values import F32NaN, F64NaN, RawString

from . import kinds as L
from .runtime import (_MISSING_NAME, _UNSET, PrivateBuffer, _Fallback, _Short, _lookup_or_missing,
                      _nan_positions, _patch, _select)
from .analysis import _has_names, _ident, _is_int, _is_plain_number, _storage_references


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


def _register_source(name: str, text: str) -> str:
    """Put ``text`` in :mod:`linecache` as ``name`` (``name#2``... when another
    layout already registered different code under it); returns the name used."""
    lines = text.splitlines(keepends=True)
    candidate, n = name, 1
    while True:
        held = linecache.cache.get(candidate)
        if held is None or held[2] == lines:
            break
        n += 1
        candidate = f"{name[:-1]}#{n}>"
    # mtime None: linecache.checkcache() keeps entries that have no file
    linecache.cache[candidate] = (len(text), None, lines, candidate)
    return candidate


class _GenBase:
    """Source generator for one layout: state, constants, expressions, building.

    The decoder and encoder halves (:mod:`.decoder`, :mod:`.encoder`) add the
    per-storage generation; :class:`~.compiled._Gen` joins them."""

    def __init__(self, layout: "L.Layout") -> None:
        self.layout = layout
        self.ns: dict[str, Any] = {
            "_FB": _Fallback, "_FBS": _Short, "_num": _num, "_int_div": _int_div, "_select": _select,
            "RawString": RawString, "_bnew": bytes.__new__, "np": np, "_fbuf": np.frombuffer, "_nanpos": _nan_positions,
            "_F32NaN": F32NaN, "_patch": _patch, "_UNSET": _UNSET, "_LS": _lookup_or_missing, "_F64NaN": F64NaN, "_MISSING": _MISSING_NAME,
            "_mv": memoryview, "_PB": PrivateBuffer,
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
        #: linecache names of the generated chunks, in order
        self.filenames: list[str] = []

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
        # (an int, the usual value, without the call)
        return src if plain else f"(_nv if (_nv := {src}).__class__ is int else _num(_nv))"

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

    def build(self, label: str = "code") -> None:
        """Generate the pending records and run their source.

        The source is registered in :mod:`linecache` under a stable file name,
        ``<potsherd-fast:LABEL>`` (``LABEL`` = root and direction), so that
        tracebacks, ``pdb`` and ``inspect.getsource`` show the generated lines."""
        while self.pending:
            kind, rec = self.pending.pop()
            if kind == "dec":
                self.gen_dec_record(rec)
            else:
                self.gen_enc_record(rec)
        new = self.lines[self.built:]
        self.built = len(self.lines)
        text = "\n".join(new) + "\n"
        filename = _register_source(f"<potsherd-fast:{label}>", text)
        self.filenames.append(filename)
        exec(compile(text, filename, "exec"), self.ns)

    @property
    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    # ======================================================================
    # decode
