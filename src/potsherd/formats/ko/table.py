"""Knight Online data tables (``.tbl``, the engine's ``CN3TableBase``).

A table is a byte-wise stream cipher over a self-describing plaintext:

* ``i32 columnCount``, then ``columnCount`` x ``i32`` column types (the engine's
  ``DATA_TYPE``: 1 char, 2 byte, 3 short, 4 word, 5 int, 6 dword, 7 string,
  8 float, 9 double; 0 is "none" and never valid);
* ``i32 rowCount``, then the rows, each column in order with no padding; a
  string is an ``i32`` length and that many bytes (a length <= 0 stores no
  bytes, and is kept as stored).

The cipher (the engine's reader, and the table tools that write the files): a
16-bit state ``r``, two constants ``c1``, ``c2``; each byte ``p`` becomes
``c = p ^ (r >> 8)`` and then ``r = (c + r) * c1 + c2`` (mod 2**16).  Every
client the public sources cover uses ``r = 0x0816, c1 = 0x6081, c2 = 0x1608``;
private-server clients patch their own three constants into the executable,
which ``--param keyR=... keyC1=... keyC2=...`` gives.  Decryption is an affine
recurrence of the ciphertext, so it runs as a numpy prefix scan; encryption
feeds back its own output and runs byte by byte, from the first byte that
differs from the ciphertext the document was read from (the bytes before it
are the same under the same key).

Newer official clients add another layer in front of this one (a DES-like block
cipher whose key the public sources do not give); such files, and tables under
an unknown key, are refused with a message saying which ciphers were tried.

Rows are held column-wise: a numpy array per numeric column, a list of
:class:`RawString` per string column.  ``to_csv`` / ``from_csv`` are the
spreadsheet view (docs/formats/knight-online.md, "Tables").
"""
from __future__ import annotations

import csv
import io
import struct
from typing import Any

import numpy as np

from ...core.errors import (CountError, EncodeError, FormatError, JsonFormatError,
                            TruncatedError, ValueFormatError)
from ...core.layout import JsonCtx
from ...core.layout.jsonio import _np_from_json, _np_to_json
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import RawString
from ...document import Document
from ...registry import Codec
from .text import CP_DEFAULT, CP_TAIWAN, KoString, document_encoding

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


# ----------------------------------------------------------------------------
# the codec


def _key_of(params: dict) -> tuple[int, int, int] | None:
    if not params.get("cipher", 1):
        return None
    key = tuple(params.get(k, d) for k, d in zip(KEY_PARAMS, CLASSIC_KEY))
    for k, v in zip(KEY_PARAMS, key):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 0xFFFF:
            raise EncodeError(f"{k} must be a 16-bit number", path=f"params.{k}")
    return key  # type: ignore[return-value]


class TableCodec(Codec):
    """``.tbl``: the cipher picked by trial (the classic key, then plain)."""

    name = "tbl"
    family = "ko"
    description = "Knight Online data table (CN3TableBase, encrypted)"
    extensions = (".tbl",)
    text_encoding = CP_DEFAULT
    parameters = ("cipher", *KEY_PARAMS)

    def _variants(self, params: dict) -> list[dict]:
        unknown = sorted(set(params) - {"cipher", *KEY_PARAMS})
        if unknown:
            raise FormatError(f"tbl takes the parameters cipher, keyR, keyC1, keyC2 "
                              f"(got {', '.join(unknown)})")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 0xFFFF:
                raise FormatError(f"tbl parameter {k} must be an integer 0..65535 (got {v!r})")
        if params:
            p = dict(params)
            p.setdefault("cipher", 1)
            return [p]
        return [{"cipher": 1}, {"cipher": 0}]

    def decode(self, data: bytes, *, limits: Limits = DEFAULT_LIMITS, **params: Any) -> Document:
        data = bytes(data)
        best: FormatError | None = None
        for variant in self._variants(params):
            key = _key_of(variant)
            plain, states = decrypt(data, key) if key else (data, None)
            try:
                root, end = parse_plain(plain, limits)
            except FormatError as e:
                if best is None or (e.offset or 0) > (best.offset or 0):
                    best = e
                continue
            if key is not None:
                root.source = (plain[:end], data[:end], states, key)
            warnings = []
            trailing = b""
            if end < len(data):
                trailing = plain[end:]
                warnings.append(f"{len(data) - end} bytes after the last row (offset {end}) "
                                f"kept raw (decrypted)")
            if key and key != CLASSIC_KEY:
                warnings.append("table key is not the classic 0816/6081/1608")
            return Document(self.name, root, dict(variant), trailing, warnings)
        assert best is not None
        if len(self._variants(params)) > 1:
            best.message = (f"not a Knight Online table under the classic key (0816/6081/1608) "
                            f"or unencrypted: {best.message} (newer official clients add a "
                            f"block cipher the public sources do not give; a server's own key "
                            f"is given with --param keyR=N --param keyC1=N --param keyC2=N)")
            best.args = (best.message,)
        raise best

    def encode(self, doc: Document) -> bytes:
        root = doc.root
        if not isinstance(root, dict):
            raise EncodeError("a table document's root is an object", path="tbl")
        plain = build_plain(root) + bytes(doc.trailing)
        key = _key_of(doc.params)
        if key is None:
            return plain
        src = getattr(root, "source", None)
        if src is not None and src[3] == key:     # (the same key: the same ciphertext)
            old_plain, old_cipher, states, _ = src
            n = min(len(old_plain), len(plain))
            a = np.frombuffer(old_plain, np.uint8, n)
            b = np.frombuffer(plain, np.uint8, n)
            diff = np.flatnonzero(a != b)
            d = int(diff[0]) if len(diff) else n
            if d == len(plain):
                return old_cipher[:d]
            return old_cipher[:d] + encrypt(plain[d:], key, int(states[d]))
        return encrypt(plain, key)

    # --- JSON ------------------------------------------------------------
    def encoding_of(self, doc: Document) -> str:
        return document_encoding(doc)

    def to_json(self, doc: Document, form: str = "wire") -> dict:
        enc = self.encoding_of(doc)
        ctx = JsonCtx(form, enc)
        ks = KoString()
        types = doc.root["columnTypes"]
        cols = []
        for t, c in zip(types, doc.root["columns"]):
            if t == STRING:
                cols.append([ks.to_json(v, ctx) for v in c])
            else:
                v = _np_to_json(np.asarray(c), ctx)
                cols.append(v.tolist() if isinstance(v, np.ndarray) else v)
        root = {"columnTypes": list(types), "columnTypeNames": [TYPES[t][0] for t in types],
                "columns": cols}
        env = self.json_envelope(doc, form, root)
        env["meta"] = {**doc.meta, "text_encoding": enc}
        return env

    def from_json(self, obj: dict) -> Document:
        meta = obj.get("meta")
        enc = meta.get("text_encoding", CP_DEFAULT) if isinstance(meta, dict) else CP_DEFAULT
        if enc not in (CP_DEFAULT, CP_TAIWAN):
            raise JsonFormatError("text_encoding must be cp949 or cp950", path="$.meta.text_encoding")
        env = self.parse_envelope(obj)
        for k, v in env.params.items():
            if k not in ("cipher", *KEY_PARAMS) or isinstance(v, bool) or not isinstance(v, int):
                raise JsonFormatError("table parameters are cipher, keyR, keyC1, keyC2 (integers)",
                                      path=f"$.params.{k}")
        root = obj.get("root")
        if not isinstance(root, dict):
            raise JsonFormatError("root must be an object", path="$.root")
        types = root.get("columnTypes")
        if not isinstance(types, list) or not types or any(
                isinstance(t, bool) or not isinstance(t, int) or t not in TYPES for t in types):
            raise JsonFormatError("columnTypes must be a non-empty list of codes 1..9",
                                  path="$.root.columnTypes")
        cols_in = root.get("columns")
        if not isinstance(cols_in, list) or len(cols_in) != len(types):
            raise JsonFormatError(f"columns must be a list of {len(types)} columns",
                                  path="$.root.columns")
        ks = KoString()
        cols: list[Any] = []
        for j, (t, c) in enumerate(zip(types, cols_in)):
            jp = f"$.root.columns[{j}]"
            if t == STRING:
                if not isinstance(c, list):
                    raise JsonFormatError("a string column is a list", path=jp)
                cols.append([ks.from_json(v, env.ctx, f"{jp}[{i}]") for i, v in enumerate(c)])
            else:
                cols.append(_np_from_json(c, TYPES[t][1], (), env.ctx, jp))
        n = len(cols[0])
        for j, c in enumerate(cols):
            if len(c) != n:
                raise JsonFormatError(f"column {j} has {len(c)} rows, column 0 has {n}",
                                      path=f"$.root.columns[{j}]")
        return Document(self.name, TableRoot(columnTypes=list(types), columns=cols),
                        env.params, env.trailing, [], env.meta)

    # --- info ------------------------------------------------------------
    def info(self, doc: Document) -> dict:
        types = doc.root["columnTypes"]
        key = _key_of(doc.params)
        cols = doc.root["columns"]
        return {"format": self.name, "family": self.family,
                "cipher": ("none" if key is None else
                           "classic" if key == CLASSIC_KEY else "xor key %04x/%04x/%04x" % key),
                "rows": len(cols[0]) if cols else 0, "column_count": len(types),
                "columns": [f"c{j}:{TYPES[t][0]}" for j, t in enumerate(types)]}

    def opaque_bytes(self, doc: Document) -> int:
        return len(doc.trailing)


CODEC = TableCodec()


# ----------------------------------------------------------------------------
# spreadsheet view: CSV / TSV


HEX_PREFIX = "hex:"


def _cell_text(s: bytes, enc: str) -> str:
    """A string cell: its text in the code page, or ``hex:`` + its bytes when the
    text would not come back as the same bytes (or could be read as hex)."""
    if s.isascii():                     # (most cells: paths and English names)
        t = s.decode("ascii")
        if t.isprintable() and not t.startswith(HEX_PREFIX):
            return t
        return HEX_PREFIX + s.hex()
    try:
        t = s.decode(enc)
        if t.encode(enc) == s and not t.startswith(HEX_PREFIX) and t.isprintable():
            return t
    except (UnicodeDecodeError, UnicodeEncodeError):
        pass
    return HEX_PREFIX + s.hex()


def _float_cells(a: np.ndarray) -> list[str]:
    """Shortest round-trip decimals; NaNs as their bit pattern (``0x7fc00000``)."""
    out = a.astype(str).tolist()
    nan = np.flatnonzero(np.isnan(a))
    if len(nan):
        bits = a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)
        width = 2 * a.dtype.itemsize
        for i in nan.tolist():
            out[i] = "0x%0*x" % (width, int(bits[i]))
    return out


def header(types: list[int]) -> list[str]:
    return [f"c{j}:{TYPES[t][0]}" for j, t in enumerate(types)]


def _columns_text(doc: Document) -> tuple[list[list], list[str]]:
    """Each column as the cells a CSV line takes, and its ``%`` conversion:
    Python ints (``%d``), float32 as their shortest decimals and strings as
    cell text (``%s``), doubles as Python floats (``%r``: their repr
    round-trips); NaNs as bit patterns."""
    enc = CODEC.encoding_of(doc)
    types = doc.root["columnTypes"]
    cols: list[list] = []
    convs: list[str] = []
    for t, c in zip(types, doc.root["columns"]):
        if t == STRING:
            cols.append([_cell_text(bytes(s), enc) for s in c])
            convs.append("%s")
            continue
        a = np.asarray(c)
        if a.dtype.kind != "f":
            cols.append(a.tolist())
            convs.append("%d")
        elif a.dtype.itemsize == 4 or np.isnan(a).any():
            cols.append(_float_cells(a))
            convs.append("%s")
        else:
            cols.append(a.tolist())
            convs.append("%r")
    return cols, convs


def to_rows(doc: Document) -> list[list]:
    """The table as rows: a header (``c0:dword``...) then one row per record
    (Python ints, floats, text)."""
    return [header(doc.root["columnTypes"]), *map(list, zip(*_columns_text(doc)[0]))]


def _quoted(cells: list[str], delimiter: str) -> list[str]:
    """CSV quoting (the csv module's minimal rule) of a column of text cells."""
    special = (delimiter, '"', "\r", "\n")
    return [('"' + c.replace('"', '""') + '"') if any(ch in c for ch in special) else c
            for c in cells]


def to_csv(doc: Document, delimiter: str = ",") -> str:
    """The table as CSV (``delimiter="\\t"``: TSV) text: what ``csv.writer``
    writes (minimal quoting, CR LF), one ``%`` format per line."""
    cols, convs = _columns_text(doc)
    cols = [_quoted(c, delimiter) if conv == "%s" else c for c, conv in zip(cols, convs)]
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\r\n").writerow(
        header(doc.root["columnTypes"]))
    fmt = delimiter.join(convs) + "\r\n"
    if cols and len(cols[0]):
        if len(cols) == 1:
            buf.write("".join(fmt % (v,) for v in cols[0]))
        else:
            buf.write("".join(map(fmt.__mod__, zip(*cols))))
    return buf.getvalue()


def _cell_error(row: int, j: int, name: str, msg: str, cell: str) -> FormatError:
    return ValueFormatError(f"row {row + 1} (line {row + 2}), column {j} ({name}): {msg}",
                            path=f"csv.rows[{row}].{name.split(':')[0]}", found=repr(cell)[:80])


def _parse_header(cells: list[str]) -> list[int]:
    types = []
    for j, h in enumerate(cells):
        name = h.rsplit(":", 1)[-1].strip().lower()
        if name not in TYPE_BY_NAME:
            raise ValueFormatError(f"header column {j} ({h!r}) does not name a type",
                                   path=f"csv.header[{j}]",
                                   expected="NAME:TYPE, TYPE one of " + " ".join(TYPE_BY_NAME))
        types.append(TYPE_BY_NAME[name])
    return types


def _fast_numbers(cells: list[str], dtype) -> np.ndarray | None:
    """The cells parsed in one C pass (``np.fromstring`` on the space-joined
    text), or None when that pass cannot be trusted to agree with Python's
    parse cell by cell (spaces or other white space in a cell, empty cells, a
    count that differs): the caller then parses cell by cell."""
    text = " ".join(cells)
    if (not cells or not text.isprintable() or text.count(" ") != len(cells) - 1
            or "  " in text or text[:1] == " " or text[-1:] == " "):
        return None
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            out = np.fromstring(text, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return out if len(out) == len(cells) else None


_BOUNDS = {np.dtype(t).char: (int(np.iinfo(t).min), int(np.iinfo(t).max))
           for t in ("i1", "u1", "<i2", "<u2", "<i4", "<u4")}


def _int_column(cells: list[str], dt: np.dtype, j: int, name: str) -> np.ndarray:
    # (a value beyond int64 saturates in the C pass and fails the range check below)
    wide = _fast_numbers(cells, np.int64)
    if wide is None:
        try:
            wide = np.fromiter(map(int, cells), np.int64, len(cells))
        except (ValueError, OverflowError):
            for i, c in enumerate(cells):
                try:
                    if not -(1 << 63) <= int(c) < (1 << 63):
                        raise ValueError
                except ValueError:
                    raise _cell_error(i, j, name, "not an integer in range", c) from None
            raise _cell_error(0, j, name, "not an integer", cells[0]) from None
    lo, hi = _BOUNDS[dt.char]
    if len(wide) and (wide.min() < lo or wide.max() > hi):
        i = int(np.flatnonzero((wide < lo) | (wide > hi))[0])
        raise _cell_error(i, j, name, f"out of range {lo}..{hi}", cells[i])
    return wide.astype(dt)


def _float_column(cells: list[str], dt: np.dtype, j: int, name: str) -> np.ndarray:
    ubits = np.uint32 if dt.itemsize == 4 else np.uint64
    hexes = [i for i, c in enumerate(cells) if c[:2] in ("0x", "0X")]
    plain = list(cells)
    for i in hexes:
        plain[i] = "0"
    try:
        arr = np.fromiter(map(float, plain), np.float64, len(plain))
    except ValueError:
        for i, c in enumerate(plain):
            try:
                float(c)
            except ValueError:
                raise _cell_error(i, j, name, "not a number", c) from None
        raise _cell_error(0, j, name, "not a number", cells[0]) from None
    with np.errstate(over="ignore"):
        out = arr.astype(dt)
    if dt.itemsize == 4:
        big = np.flatnonzero(np.isfinite(arr) & ~np.isfinite(out))
        if len(big):
            i = int(big[0])
            raise _cell_error(i, j, name, "too large for a float", cells[i])
    for i in hexes:
        try:
            v = int(cells[i], 16)
            if not 0 <= v < (1 << (8 * dt.itemsize)):
                raise ValueError
        except ValueError:
            raise _cell_error(i, j, name, "not a bit pattern", cells[i]) from None
        out[i:i + 1] = np.array([v], ubits).view(dt)
    return out


def _string_column(cells, enc: str, j: int, name: str, old: list | None) -> list:
    """Text cells as stored bytes (``hex:`` cells as their bytes); an empty cell
    keeps the original's stored length when that was <= 0 (``old``: the
    original column)."""
    try:
        out = [c.encode(enc) for c in cells]
    except UnicodeEncodeError:
        for i, c in enumerate(cells):
            try:
                c.encode(enc)
            except UnicodeEncodeError as e:
                raise _cell_error(i, j, name, f"character {c[e.start]!r} is not in the {enc} "
                                  "code page", c) from None
        raise
    for i in [i for i, c in enumerate(cells) if c[:4] == HEX_PREFIX]:
        try:
            out[i] = bytes.fromhex(cells[i][len(HEX_PREFIX):])
        except ValueError:
            raise _cell_error(i, j, name, "bad hex after 'hex:'", cells[i]) from None
    if old is not None:
        for i in [i for i, v in enumerate(old) if v.__class__ is RawString]:
            v = old[i]
            if i < len(out) and not v and v.raw_len is not None and not out[i]:
                out[i] = v
    return out


def from_rows(rows: list[list], *, like: Document | None = None,
              encoding: str | None = None, params: dict | None = None,
              texts: bool = False) -> Document:
    """A table document from text rows (header first).  ``like`` (the original
    table) gives the cipher and key, keeps the stored length of strings that
    stay empty, and lets the writer copy the unchanged prefix of its
    ciphertext; without it the classic key is used (``params`` overrides).
    Cells are text or Python numbers (``texts=True``: all text, as a CSV
    reader gives them)."""
    if not rows:
        raise ValueFormatError("no header row", path="csv.header")
    types = _parse_header(rows[0])
    body = rows[1:]
    ncol = len(types)
    for i, r in enumerate(body):
        if len(r) != ncol:
            raise ValueFormatError(f"row {i + 1} (line {i + 2}) has {len(r)} cells, the header "
                                   f"{ncol}", path=f"csv.rows[{i}]")
    enc = encoding or (CODEC.encoding_of(like) if like is not None else CP_DEFAULT)
    names = header(types)
    by_col = list(zip(*body)) if body else [()] * ncol
    like_cols = None
    if like is not None and like.root.get("columnTypes") == types:
        like_cols = like.root["columns"]
    cols: list[Any] = []
    for j, t in enumerate(types):
        cells = by_col[j] if texts else [
            c if c.__class__ is str else repr(c) if isinstance(c, float) else str(c)
            for c in by_col[j]]
        if t == STRING:
            cols.append(_string_column(cells, enc, j, names[j],
                                       like_cols[j] if like_cols is not None else None))
            continue
        if TYPES[t][1].kind == "f":
            cols.append(_float_column(cells, TYPES[t][1], j, names[j]))
        else:
            cols.append(_int_column(cells, TYPES[t][1], j, names[j]))
    root = TableRoot(columnTypes=types, columns=cols)
    p = dict(like.params) if like is not None else {"cipher": 1}
    p.update(params or {})
    trailing = b""
    if like is not None:
        src = getattr(like.root, "source", None)
        if src is not None:
            root.source = src
        trailing = like.trailing
    meta = {"text_encoding": enc}
    return Document("tbl", root, p, trailing, [], meta)


def from_csv(text: str, *, delimiter: str = ",", like: Document | None = None,
             encoding: str | None = None, params: dict | None = None) -> Document:
    """A table document from CSV / TSV text (see :func:`from_rows`)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    except csv.Error as e:
        raise ValueFormatError(f"not readable as {'TSV' if delimiter == chr(9) else 'CSV'}: {e}",
                               path="csv") from None
    return from_rows(rows, like=like, encoding=encoding, params=params, texts=True)


def as_structured(doc: Document) -> np.ndarray:
    """The rows as one numpy structured array (fields ``c0``...; string columns
    as object fields holding bytes)."""
    types = doc.root["columnTypes"]
    cols = doc.root["columns"]
    dt = np.dtype([(f"c{j}", TYPES[t][1] if t != STRING else object) for j, t in enumerate(types)])
    out = np.zeros(len(cols[0]) if cols else 0, dt)
    for j, c in enumerate(cols):
        if types[j] == STRING:
            out[f"c{j}"] = [bytes(s) for s in c]
        else:
            out[f"c{j}"] = c
    return out


#: the codec's declared CSV hook (``potsherd bundle`` writes tables' access copies with it)
TableCodec.to_csv = staticmethod(to_csv)
