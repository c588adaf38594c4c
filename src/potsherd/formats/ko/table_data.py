"""The ``.tbl`` data of :mod:`.table` below the codec: the column types, the
stream cipher (decryption as a numpy prefix scan, encryption byte by byte) and the
self-describing plaintext (parsed column-wise, built back)."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ...core.errors import (CountError, EncodeError, FormatError, TruncatedError,
                            ValueFormatError)
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import RawString

# ----------------------------------------------------------------------------
# column types

#: DATA_TYPE code -> (name, numpy dtype or None for strings)
TYPES: dict[int, tuple[str, np.dtype | None]] = {
    1: ("char", np.dtype("i1")), 2: ("byte", np.dtype("u1")), 3: ("short", np.dtype("<i2")),
    4: ("word", np.dtype("<u2")), 5: ("int", np.dtype("<i4")), 6: ("dword", np.dtype("<u4")),
    7: ("string", None), 8: ("float", np.dtype("<f4")), 9: ("double", np.dtype("<f8")),
}
STRING = 7
TYPE_BY_NAME = {name: code for code, (name, _) in TYPES.items()}

# ----------------------------------------------------------------------------
# the cipher

#: the engine's key (N3TableBase.h: "the same key the table tool uses")
CLASSIC_KEY = (0x0816, 0x6081, 0x1608)
KEY_PARAMS = ("keyR", "keyC1", "keyC2")


def key_states(cipher: np.ndarray, key: tuple[int, int, int]) -> np.ndarray:
    """The cipher state before each byte (uint16, and one after the end): the
    affine recurrence ``r[i+1] = c1*r[i] + (c1*c[i] + c2)`` as a prefix scan
    (log2(n) numpy passes, uint16 arithmetic wrapping as the engine's WORD
    does) -- the state depends on the ciphertext only."""
    r0, c1, c2 = key
    n = len(cipher)
    b = cipher.astype(np.uint16)
    b *= np.uint16(c1)
    b += np.uint16(c2)
    k, mult = 1, c1 & 0xFFFF            # mult = c1 ** k (mod 2**16)
    while k < n:
        t = b[:-k] * np.uint16(mult)
        b[k:] += t
        mult = (mult * mult) & 0xFFFF
        k *= 2
    # after the scan b[i] = state after byte i minus c1**(i+1) * r0
    states = np.empty(n + 1, np.uint16)
    states[0] = r0
    np.multiply(_powers(c1, n).astype(np.uint16), np.uint16(r0), out=states[1:])
    states[1:] += b
    return states


def _powers(c1: int, n: int) -> np.ndarray:
    """c1**(i+1) mod 2**16 for i < n (doubling, like the scan)."""
    out = np.empty(n, np.uint32)
    if n == 0:
        return out
    out[0] = c1 & 0xFFFF
    k = 1
    while k < n:
        m = min(k, n - k)
        out[k:k + m] = (out[:m] * out[k - 1]) & 0xFFFF
        k += m
    return out


def decrypt(data: bytes, key: tuple[int, int, int]) -> tuple[bytes, np.ndarray]:
    """Plaintext and the state before each byte (the last entry: after the end)."""
    c = np.frombuffer(data, np.uint8)
    states = key_states(c, key)
    plain = (c ^ (states[:-1] >> 8).astype(np.uint8)).tobytes()
    return plain, states


def encrypt(plain: bytes, key: tuple[int, int, int], state: int | None = None) -> bytes:
    """Ciphertext of ``plain`` starting in ``state`` (default: the key's r)."""
    r = key[0] if state is None else int(state)
    c1, c2 = key[1], key[2]
    out = bytearray(len(plain))
    for i, p in enumerate(plain):
        c = p ^ (r >> 8)
        out[i] = c
        r = ((c + r) * c1 + c2) & 0xFFFF
    return bytes(out)


# ----------------------------------------------------------------------------
# the plaintext


class TableRoot(dict):
    """The decoded table: ``columnTypes`` (list of codes) and ``columns`` (one
    numpy array or list of strings per column).  ``source`` remembers the
    plaintext and ciphertext it was read from (not part of the document: only
    a shortcut for re-encrypting an unedited prefix)."""

    source: tuple | None = None


def _fail(cls, msg: str, off: int, path: str, **kw) -> FormatError:
    return cls(msg, offset=off, path=f"tbl.{path}", **kw)


def parse_plain(plain: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[TableRoot, int]:
    """The table of a plaintext and where it ends."""
    n_all = len(plain)
    if n_all < 4:
        raise _fail(TruncatedError, "table shorter than its column count", n_all, "columnCount",
                    expected="4 bytes", found=n_all)
    ncol = int.from_bytes(plain[0:4], "little", signed=True)
    if ncol <= 0 or 8 + 4 * ncol > n_all:
        raise _fail(CountError, "column count impossible for the bytes left", 0, "columnCount",
                    expected=f"1..{max(0, (n_all - 8) // 4)}", found=ncol)
    types = np.frombuffer(plain, "<i4", ncol, 4)
    bad = np.nonzero((types < 1) | (types > 9))[0]
    if len(bad):
        i = int(bad[0])
        raise _fail(ValueFormatError, "unknown column type", 4 + 4 * i, f"columnTypes[{i}]",
                    expected="1..9 (char byte short word int dword string float double)",
                    found=int(types[i]))
    types = [int(t) for t in types]
    off = 4 + 4 * ncol
    nrow = int.from_bytes(plain[off:off + 4], "little", signed=True)
    fixed = sum(TYPES[t][1].itemsize for t in types if t != STRING)
    nstr = sum(1 for t in types if t == STRING)
    min_row = fixed + 4 * nstr
    left = n_all - off - 4
    if nrow < 0 or nrow * min_row > left or nrow > limits.max_elements:
        raise _fail(CountError, "row count impossible for the bytes left", off, "rowCount",
                    expected=f"0..{left // min_row}", found=nrow)
    off += 4
    columns, end = _read_rows(plain, off, types, nrow)
    root = TableRoot(columnTypes=types, columns=columns)
    return root, end


def _runs(types: list[int]) -> list[tuple]:
    """The row as segments: ("fixed", [(col, dtype)], width) or ("string", col)."""
    segs: list[tuple] = []
    for j, t in enumerate(types):
        if t == STRING:
            segs.append(("string", j))
        else:
            dt = TYPES[t][1]
            if segs and segs[-1][0] == "fixed":
                segs[-1][1].append((j, dt))
                segs[-1] = ("fixed", segs[-1][1], segs[-1][2] + dt.itemsize)
            else:
                segs.append(("fixed", [(j, dt)], dt.itemsize))
    return segs


def _run_dtype(cols: list) -> np.dtype:
    off, names, formats, offsets = 0, [], [], []
    for j, dt in cols:
        names.append(f"c{j}")
        formats.append(dt)
        offsets.append(off)
        off += dt.itemsize
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": off})


def _read_rows(plain: bytes, off: int, types: list[int], nrow: int) -> tuple[list, int]:
    segs = _runs(types)
    buf = np.frombuffer(plain, np.uint8)
    columns: list[Any] = [None] * len(types)
    if not any(s[0] == "string" for s in segs):      # fixed rows: one view
        width = segs[0][2]
        end = off + nrow * width
        if end > len(plain):
            raise _fail(TruncatedError, "rows run past the end", len(plain), "rows",
                        expected=f"{nrow} rows of {width} bytes")
        rows = np.frombuffer(plain, _run_dtype(segs[0][1]), nrow, off)
        for j, _dt in segs[0][1]:
            columns[j] = np.ascontiguousarray(rows[f"c{j}"])
        return columns, end
    # one pass over the rows for the string lengths (they place everything after
    # them); the fixed runs are gathered afterwards from the places found
    pre, tail, order = [], 0, []        # fixed bytes before each string; after the last
    width = 0
    for sg in segs:
        if sg[0] == "fixed":
            width += sg[2]
        else:
            pre.append(width)
            order.append(sg[1])
            width = 0
    tail = width
    nstr = len(order)
    n_all = len(plain)
    unpack = struct.Struct("<i").unpack_from
    row_start = [0] * nrow
    lpos: list[list[int]] = [[0] * nrow for _ in range(nstr)]
    lens: list[list[int]] = [[0] * nrow for _ in range(nstr)]
    pos = off
    for i in range(nrow):
        row_start[i] = pos
        for m in range(nstr):
            pos += pre[m]
            if pos + 4 > n_all:
                raise _row_error(plain, off if i == 0 else row_start[i], i, segs)
            n = unpack(plain, pos)[0]
            lpos[m][i] = pos
            lens[m][i] = n
            pos += 4
            if n > 0:
                pos += n
        pos += tail
        if pos > n_all:
            raise _row_error(plain, row_start[i], i, segs)
    columns_pos = np.asarray(row_start, np.int64)
    k_str = 0
    for sg in segs:
        if sg[0] == "string":
            m = k_str
            k_str += 1
            p_arr = lpos[m]
            columns[sg[1]] = [plain[q + 4:q + 4 + n] if n > 0 else
                              (b"" if n == 0 else RawString(b"", n))
                              for q, n in zip(p_arr, lens[m])]
            continue
        # the run starts at the row start (first) or where the previous string ends
        if k_str == 0:
            starts = columns_pos
        else:
            q = np.asarray(lpos[k_str - 1], np.int64)
            n = np.asarray(lens[k_str - 1], np.int64)
            starts = q + 4 + np.maximum(n, 0)
        cols, w = sg[1], sg[2]
        idx = starts[:, None] + np.arange(w)
        block = np.ascontiguousarray(buf[idx]).view(_run_dtype(cols)).reshape(nrow)
        for j, _dt in cols:
            columns[j] = np.ascontiguousarray(block[f"c{j}"])
    return columns, pos


def _row_error(plain: bytes, pos: int, i: int, segs: list) -> FormatError:
    """The error of row ``i`` (starting at ``pos``), walked field by field."""
    n_all = len(plain)
    for sg in segs:
        if sg[0] == "fixed":
            if pos + sg[2] > n_all:
                return _fail(TruncatedError, "row runs past the end", n_all,
                             f"rows[{i}].c{sg[1][0][0]}", expected=f"{sg[2]} bytes")
            pos += sg[2]
            continue
        if pos + 4 > n_all:
            return _fail(TruncatedError, "string length past the end", pos,
                         f"rows[{i}].c{sg[1]}", expected="4 bytes")
        n = int.from_bytes(plain[pos:pos + 4], "little", signed=True)
        pos += 4
        if n > 0:
            if pos + n > n_all:
                return _fail(CountError, "string longer than the bytes left", pos - 4,
                             f"rows[{i}].c{sg[1]}", expected=f"<= {n_all - pos}", found=n)
            pos += n
    return _fail(TruncatedError, "row runs past the end", n_all, f"rows[{i}]")


_BYTES_TYPES = {bytes, RawString, bytearray}


def column_array(types: list[int], j: int, value: Any, nrow: int | None = None) -> Any:
    """Column ``j`` checked: a numpy array of its type, or a list of byte strings."""
    t = types[j]
    if t == STRING:
        if not isinstance(value, list) or not (set(map(type, value)) <= _BYTES_TYPES or all(
                isinstance(s, (bytes, bytearray)) for s in value)):
            raise EncodeError("a string column is a list of byte strings", path=f"tbl.columns[{j}]")
        return value
    dt = TYPES[t][1]
    if not isinstance(value, np.ndarray) or value.ndim != 1:
        value = np.asarray(value)
    if value.dtype != dt:
        if value.dtype.kind in "iu" and dt.kind in "iu" and len(value):
            info = np.iinfo(dt)
            if value.min() < info.min or value.max() > info.max:
                raise EncodeError(f"value out of range for {TYPES[t][0]}", path=f"tbl.columns[{j}]")
        elif value.dtype.kind not in "iuf" and len(value):
            raise EncodeError("a numeric column holds numbers", path=f"tbl.columns[{j}]")
        value = value.astype(dt)
    return value


def build_plain(root: dict) -> bytes:
    """The plaintext of a table (counts follow the columns)."""
    types = root.get("columnTypes")
    columns = root.get("columns")
    if not isinstance(types, list) or not types or any(
            isinstance(t, bool) or not isinstance(t, int) or t not in TYPES for t in types):
        raise EncodeError("columnTypes must be a non-empty list of codes 1..9",
                          path="tbl.columnTypes")
    if not isinstance(columns, list) or len(columns) != len(types):
        raise EncodeError(f"columns must be a list of {len(types)} columns", path="tbl.columns")
    cols = [column_array(types, j, c) for j, c in enumerate(columns)]
    nrow = len(cols[0])
    for j, c in enumerate(cols):
        if len(c) != nrow:
            raise EncodeError(f"column {j} has {len(c)} rows, column 0 has {nrow}",
                              path=f"tbl.columns[{j}]")
    head = struct.pack(f"<i{len(types)}ii", len(types), *types, nrow)
    segs = _runs(types)
    if not any(s[0] == "string" for s in segs):
        rows = np.zeros(nrow, _run_dtype(segs[0][1]))
        for j, _dt in segs[0][1]:
            rows[f"c{j}"] = cols[j]
        return head + rows.tobytes()
    # row sizes, then every segment scattered to its place (no per-row loop)
    stored = {}
    lens = {}
    for s in segs:
        if s[0] == "string":
            lst = cols[s[1]]
            lens[s[1]] = np.fromiter(map(len, lst), np.int64, nrow)
            st = lens[s[1]].copy()
            for i in np.flatnonzero(st == 0).tolist():     # (a stored length <= 0 kept)
                raw = getattr(lst[i], "raw_len", None)
                if raw is not None:
                    st[i] = raw
            stored[s[1]] = st
            if (stored[s[1]] > 0x7FFFFFFF).any() or (stored[s[1]] < -0x80000000).any():
                raise EncodeError("string too long", path=f"tbl.columns[{s[1]}]")
    size = np.zeros(nrow, np.int64)
    for s in segs:
        size += s[2] if s[0] == "fixed" else 4 + lens[s[1]]
    starts = np.zeros(nrow, np.int64)
    np.cumsum(size[:-1], out=starts[1:])
    out = np.zeros(int(size.sum()), np.uint8)
    cur = starts.copy()
    for s in segs:
        if s[0] == "fixed":
            rows = np.zeros(nrow, _run_dtype(s[1]))
            for j, _dt in s[1]:
                rows[f"c{j}"] = cols[j]
            block = rows.view(np.uint8).reshape(nrow, s[2])
            out[cur[:, None] + np.arange(s[2])] = block
            cur += s[2]
            continue
        j = s[1]
        n4 = stored[j].astype("<i4").view(np.uint8).reshape(nrow, 4)
        out[cur[:, None] + np.arange(4)] = n4
        cur += 4
        total = int(lens[j].sum())
        if total:
            data = np.frombuffer(b"".join(cols[j]), np.uint8)
            first = np.zeros(nrow, np.int64)
            np.cumsum(lens[j][:-1], out=first[1:])
            dest = np.repeat(cur - first, lens[j]) + np.arange(total)
            out[dest] = data
        cur += lens[j]
    return head + out.tobytes()
