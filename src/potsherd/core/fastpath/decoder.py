"""Decoder generation: one Python function per record."""
from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np


from . import kinds as L
from .runtime import _bits_reader
from .analysis import _field_groups, _fixed_record_fields, _kind, _run_order
from .exprs import _ExprEnv, _GenBase


class _DecoderGen(_GenBase):
    """The half of the generator that writes decoders."""

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
        out.append(f"{ind}if pos + {off} > end: raise _FBS")
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
            out.append(f"{ind}if pos + {st.size} > end: raise _FBS")
            out.append(f"{ind}{var}, = {self.const(st.st.unpack_from, 'U')}(buf, pos)")
            if st.kind == "f":
                out.append(f"{ind}if {var} != {var}: {var} = {self.const(_bits_reader(st), 'NB')}(buf, pos)")
            out.append(f"{ind}pos += {st.size}")
        elif t is L.Group:
            out.append(f"{ind}if pos + {st.size} > end: raise _FBS")
            out.append(f"{ind}{var} = list({self.const(st.st.unpack_from, 'U')}(buf, pos))")
            if st.prim.kind == "f":
                nb = self.const(_bits_reader(st.prim), "NB")
                for k in range(st.n):
                    out.append(f"{ind}if {var}[{k}] != {var}[{k}]: {var}[{k}] = {nb}(buf, pos + {k * st.prim.size})")
            out.append(f"{ind}pos += {st.size}")
        elif t is L.String:
            pu = self.const(st.prefix.st.unpack_from, "U")
            ps = st.prefix.size
            out.append(f"{ind}if pos + {ps} > end: raise _FBS")
            out.append(f"{ind}{var}, = {pu}(buf, pos)")
            out.append(f"{ind}pos += {ps}")
            # (an empty string: bytes.__new__ in C, not RawString.__new__ in Python)
            out.append(f"{ind}if {var} <= 0: {var} = _bnew(RawString) if {var} == 0 else RawString(b'', {var})")
            out.append(f"{ind}elif {var} > end - pos: raise _FBS")
            out.append(f"{ind}else:")
            # (bytes.__new__ directly: a RawString without a stored length needs
            # nothing of RawString.__new__, whose Python frame cost more than the copy)
            out.append(f"{ind}    {var} = _bnew(RawString, buf[pos:pos + {var}]); pos += len({var})")
        elif t is L.Bytes and st.size is not None:
            n = st.size
            out.append(f"{ind}if pos + {n} > end: raise _FBS")
            out.append(f"{ind}{var} = buf[pos:pos + {n}]")
            out.append(f"{ind}if buf.__class__ is _PB: {var} = bytes({var})")
            out.append(f"{ind}pos += {n}")
        elif t is L.Tail:
            out.append(f"{ind}{var} = buf[pos:end]")
            out.append(f"{ind}if buf.__class__ is _PB: {var} = bytes({var})")
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
        elif t is L.Sized:
            self.dec_sized(st, var, out, ind, env)
        elif t is L.Array:
            self.dec_array(st, var, out, ind, env)
        elif type(st) is L.Table and _table_itemsize(st):
            self.dec_table(st, var, out, ind, env)
        else:
            self.dec_delegate(st, var, out, ind)

    def dec_table(self, st: "L.Table", var: str, out: list, ind: str, env: _ExprEnv) -> None:
        """A table of fixed records: one ``frombuffer`` of the row dtype (what
        ``Table.decode`` does, without the interpreter's count lookup)."""
        n = self.fresh("n")
        dt = st.table_dtype
        self.dec_count(st.count_src, n, out, ind, env)
        out.append(f"{ind}if {n} * {dt.itemsize} > end - pos: raise _FBS")
        arr = _own_or_copy(f"_fbuf(buf, {self.const(dt, 'DT')}, {n}, pos)")
        out.append(f"{ind}{var} = {arr}")
        out.append(f"{ind}pos += {n} * {dt.itemsize}")

    def expr_from_compiled(self, st: Any, env: _ExprEnv) -> str:
        src_expr = getattr(st, "cond_src", None)
        if src_expr is None:
            return f"{self.const(st.cond, 'E')}(_S)"
        return self.test(src_expr, env)

    def dec_sized(self, st: "L.Sized", var: str, out: list, ind: str, env: _ExprEnv) -> None:
        """A sized sub-stream: the content is read with ``end`` moved to the
        sub-stream's end.  Content that does not fill it exactly, or fails,
        hands the whole input to the reference (which keeps the bytes raw)."""
        n, saved, p0 = self.fresh("sz"), self.fresh("se"), self.fresh("sp")
        src, _ = self.expr(st.size_src, env)
        out.append(f"{ind}{n} = {src}")
        out.append(f"{ind}if {n}.__class__ is not int or {n} < 0: raise _FB")
        out.append(f"{ind}if {n} > end - pos: raise _FBS")
        out.append(f"{ind}{saved} = end; end = pos + {n}; _R.end = end")
        out.append(f"{ind}try:")
        inner = ind + "    "
        if st.repeat:
            x = self.fresh("x")
            out.append(f"{inner}{var} = []")
            out.append(f"{inner}while pos < end:")
            out.append(f"{inner}    {p0} = pos")
            self.dec_storage(st.item, x, out, inner + "    ", env)
            out.append(f"{inner}    {var}.append({x})")
            out.append(f"{inner}    if pos == {p0}: raise _FB")
        else:
            self.dec_storage(st.item, var, out, inner, env)
        out.append(f"{inner}if pos != end: raise _FB")
        out.append(f"{ind}except _FBS: raise _FB")
        out.append(f"{ind}finally: _R.end = end = {saved}")

    def dec_array(self, st: "L.Array", var: str, out: list, ind: str, env: _ExprEnv) -> None:
        n = self.fresh("n")
        item = st.item
        if st.elem_dtype is not None:
            base = st.elem_dtype.base
            shape = st.elem_dtype.shape
            k = int(np.prod(shape)) if shape else 1
            isz = st.elem_dtype.itemsize
            self.dec_count(st.count_src, n, out, ind, env)
            out.append(f"{ind}if {n} * {isz} > end - pos: raise _FBS")
            # (a sub-array dtype such as ('<u4', (3,)) reads as rows: shape (n, 3)
            # of the base dtype, without a reshape call per array)
            arr = _own_or_copy(f"_fbuf(buf, {self.const(st.elem_dtype if shape else base, 'DT')}, {n}, pos)")
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
            out.append(f"{ind}    elif {n} * {k} * {dt.itemsize} > end - pos: raise _FBS")
            out.append(f"{ind}    {var} = "
                       + _own_or_copy(f"_fbuf(buf, {self.const(dt, 'DT')}, {n} * {k}, pos)")
                       + f".reshape({n}, {k})")
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
        out.append(f"{ind}if {n} * {item.min_size} > end - pos: raise _FBS")
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
        ST = struct.Struct(fmt)
        size = ST.size
        out.append(f"{ind}if {n} * {size} > end - pos: raise _FBS")
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
                dt = self.const(prim.dtype, "DT")
                nb = self.const(_bits_reader(prim), "NB")
                idx = self.fresh("i")
                out.append(f"{ind}    for {idx} in _nanpos(buf, pos, {n}, {size}, {foff}, {dt}).tolist():")
                target = f"{var}[{idx}][{name!r}]" + (f"[{k}]" if k is not None else "")
                out.append(f"{ind}        {target} = {nb}(buf, pos + {idx} * {size} + {foff})")
        out.append(f"{ind}pos += {n} * {size}")


def _own_or_copy(frombuffer: str) -> str:
    """The array a ``frombuffer`` expression reads: a copy (writable, not tied
    to the input), or the view itself when the input is a
    :class:`~.runtime.PrivateBuffer` that only the document holds."""
    return f"({frombuffer} if buf.__class__ is _PB else {frombuffer}.copy())"


def _table_itemsize(st: "L.Table") -> int:
    """The row size of a table the generator can read in one call (0: it cannot,
    the table's own decode runs)."""
    try:
        return st.table_dtype.itemsize
    except ValueError:
        return 0
