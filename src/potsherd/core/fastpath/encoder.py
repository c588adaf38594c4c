"""Encoder generation: one Python function per record."""
from __future__ import annotations

import struct
from typing import Any


from . import kinds as L
from .analysis import (_counted_record_fields, _field_groups, _fixed_record_fields, _kind,
                       _run_order, _type_test)
from .exprs import _ExprEnv, _GenBase


class _EncoderGen(_GenBase):
    """The half of the generator that writes encoders."""

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
        if rec.size_derivations:
            out.append(f"    v = {self.const(rec, 'REC')}.regenerate_sizes(v, _S)")
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
            # (prefix and bytes in one write: bytes + RawString is a plain bytes)
            out.append(f"{ind}    else: wr({pp}(len({x})) + {x})")
            out.append(f"{ind}elif {x}.__class__ is bytes: wr({pp}(len({x})) + {x})")
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
        elif t is L.Array:
            self.enc_array(st, x, out, ind, env)
        else:
            self.enc_delegate(st, x, out, ind)

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
        fixed = _fixed_record_fields(item)
        counted = _counted_record_fields(item) if fixed is None else None
        if counted is not None:
            # a builder's columns (L.RecordColumns) write their own bytes in one piece
            self.enc_count(st.count_src, n, out, ind, env)
            b = self.fresh("b")
            out += [f"{ind}if {x}.__class__ is not list:",
                    f"{ind}    if not isinstance({x}, {self.const(L.RecordColumns, 'RC')}) "
                    f"or len({x}) != {n}: raise _FB",
                    f"{ind}    {b} = {x}.packed({item.name!r})",
                    f"{ind}    if {b}.__class__ is not bytes: raise _FB",
                    f"{ind}    wr({b})",
                    f"{ind}else:",
                    f"{ind}    if len({x}) != {n}: raise _FB"]
            self.enc_counted_records(item, counted, x, out, ind + "    ")
            return
        out.append(f"{ind}if {x}.__class__ is not list: raise _FB")
        self.enc_count(st.count_src, n, out, ind, env)
        out.append(f"{ind}if len({x}) != {n}: raise _FB")
        if fixed is not None:
            self.enc_fixed_records(item, fixed, x, out, ind)
            return
        y = self.fresh("e")
        out.append(f"{ind}for {y} in {x}:")
        self.enc_storage(item, y, out, ind + "    ", env)

    def scalar_checks(self, y: str, st: Any, kind: str, body: list, vals: list) -> str:
        """The checks of a fixed scalar field's value ``y`` (kind "prim" |
        "group" | "bytes", see ``analysis._scalar_entry``) into ``body``, the
        names it packs into ``vals``; returns its struct format characters."""
        if kind == "prim":
            body.append(f"if {_type_test(st, y)}: raise _FB")
            vals.append(y)
            return st.st.format[-1]
        if kind == "group":
            zs = [self.fresh("z") for _ in range(st.n)]
            body.append(f"if {y}.__class__ is not list: raise _FB")
            body.append(f"{', '.join(zs)}, = {y}")
            body.extend(f"if {_type_test(st.prim, z)}: raise _FB" for z in zs)
            vals.extend(zs)
            return st.prim.st.format[-1] * st.n
        body.append(f"if ({y}.__class__ is not bytes and {y}.__class__ is not RawString) "
                    f"or len({y}) != {st}: raise _FB")
        vals.append(y)
        return f"{st}s"

    def enc_fixed_records(self, item: Any, fixed: list, x: str, out: list, ind: str) -> None:
        order = fixed[0][3]
        fmt = order
        body = []
        vals = []
        d = self.fresh("d")
        for name, st, kind, _o in fixed:
            y = self.fresh("y")
            body.append(f"{y} = {d}[{name!r}]")
            fmt += self.scalar_checks(y, st, kind, body, vals)
        ST = struct.Struct(fmt)
        nkeys = len({f[0] for f in fixed})
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

    def enc_counted_records(self, item: Any, fields: list, x: str, out: list, ind: str) -> None:
        """Records whose arrays are counted by their own scalars (see
        ``_counted_record_fields``): per record, each run of fixed fields in one
        struct call and each array as its bytes, all joined in one write."""
        env = _ExprEnv("encode", item)
        d, parts = self.fresh("d"), self.fresh("pp")
        body: list[str] = []
        pieces: list[str] = []
        run_fmt, run_vals = "", []

        def close_run() -> None:
            nonlocal run_fmt, run_vals
            if run_vals:
                pk = self.const(struct.Struct(run_fmt).pack, "P")
                pieces.append(f"{pk}({', '.join(run_vals)})")
            run_fmt, run_vals = "", []

        for name, st, kind, order in fields:
            y = self.fresh("y")
            body.append(f"{y} = {d}[{name!r}]")
            if kind == "array":
                close_run()
                n = self.fresh("n")
                self.enc_count(st.count_src, n, body, "", env)
                inner = tuple(st.elem_dtype.shape)
                shape = f"({n},) + {inner!r}" if inner else f"({n},)"
                body.append(f"if {y}.__class__ is not np.ndarray or {y}.dtype != "
                            f"{self.const(st.elem_dtype.base, 'DT')}: raise _FB")
                body.append(f"if {y}.shape != {shape} and not ({n} == 0 and {y}.size == 0): raise _FB")
                pieces.append(f"{y}.tobytes()")
                continue
            if order is not None and run_fmt and run_fmt[0] != order:
                close_run()
            if not run_fmt:
                run_fmt = order or "<"
            if kind == "packs_as":
                prim, accepted = st.packs_as
                run_fmt += prim.st.format[-1]
                body.append(f"if {y}.__class__ is not int or {y} not in "
                            f"{self.const(frozenset(accepted), 'KV')}: raise _FB")
                run_vals.append(y)
            else:
                run_fmt += self.scalar_checks(y, st, kind, body, run_vals)
            if kind in ("prim", "packs_as"):   # (checked ints or numbers: usable in counts)
                env.define(name, y, False, body, "")
                env.plain[name] = True
        close_run()
        out.append(f"{ind}if {x} and len(_S.frames) > _S.limits.max_depth: raise _FB")
        out.append(f"{ind}{parts} = []")
        out.append(f"{ind}for {d} in {x}:")
        out.append(f"{ind}    if {d}.__class__ is not dict or len({d}) != {len(fields)}: raise _FB")
        out.extend(f"{ind}    {b}" for b in body)
        out.append(f"{ind}    {parts}.append({' + '.join(pieces)})")
        out.append(f"{ind}wr(b''.join({parts}))")
