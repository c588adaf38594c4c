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

The column types, the cipher and the plaintext are in :mod:`.table_data`; this
module holds the codec and the spreadsheet view.
"""
from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from ...core.errors import EncodeError, FormatError, JsonFormatError, ValueFormatError
from ...core.layout import JsonCtx
from ...core.layout.jsonio import _np_from_json, _np_to_json
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.values import RawString
from ...document import Document
from ...registry import Codec
from .text import CP_DEFAULT, CP_TAIWAN, KoString, document_encoding
from .table_data import (CLASSIC_KEY, KEY_PARAMS, STRING, TYPES, TYPE_BY_NAME, TableRoot,
                         build_plain, decrypt, encrypt, parse_plain)  # noqa: F401

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


def _column_cells(col: list, enc: str) -> list[str]:
    """A string column's cells (as :func:`_cell_text`), in one decode of the
    whole column when it can be trusted: the cells joined by ``\\n`` decode
    strictly to as many ``\\n`` as there are joins (no cell swallowed a
    separator as a trail byte), the text encodes back to the same bytes (the
    code page's trail bytes are never 0x0A, so each cell does alone) and none
    needs ``hex:``.  Otherwise cell by cell."""
    raw = b"\n".join(col)
    n = len(col)
    if n and raw.count(b"\n") == n - 1:
        try:
            text = raw.decode(enc)
        except UnicodeDecodeError:
            text = None
        if (text is not None and text.count("\n") == n - 1
                and ("\n" + text).find("\n" + HEX_PREFIX) < 0
                and text.replace("\n", "").isprintable()
                and (raw.isascii() or text.encode(enc) == raw)):
            return text.split("\n")
    return [_cell_text(bytes(s), enc) for s in col]


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
            cols.append(_column_cells(c, enc))
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
    joined = "".join(cells)
    if not any(ch in joined for ch in special):      # (the usual column: nothing to quote)
        return cells
    d = delimiter
    return [('"' + c.replace('"', '""') + '"')
            if (d in c or '"' in c or "\r" in c or "\n" in c) else c for c in cells]


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


def _int_column(cells: list[str], dt: np.dtype, j: int, name: str,
                wide: np.ndarray | None = None) -> np.ndarray:
    """``wide``: the cells already parsed (the batched pass over every integer column)."""
    # (a value beyond int64 saturates in the C pass and fails the range check below)
    if wide is None:
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
    joined = "\n".join(cells)
    try:
        if joined.count("\n") == len(cells) - 1 and len(cells):
            # one encode for the column (the code page never writes 0x0A in a
            # character other than LF, so the split gives each cell's bytes)
            out = joined.encode(enc).split(b"\n")
        else:
            out = [c.encode(enc) for c in cells]
    except UnicodeEncodeError:
        for i, c in enumerate(cells):
            try:
                c.encode(enc)
            except UnicodeEncodeError as e:
                raise _cell_error(i, j, name, f"character {c[e.start]!r} is not in the {enc} "
                                  "code page", c) from None
        raise
    hexes = [i for i, c in enumerate(cells) if c[:4] == HEX_PREFIX] \
        if ("\n" + joined).find("\n" + HEX_PREFIX) >= 0 else []
    for i in hexes:
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
    by_col = list(zip(*body)) if body else [()] * ncol
    return _from_columns(types, by_col, like=like, encoding=encoding, params=params, texts=texts)


def _from_columns(types: list[int], by_col: list, *, like: Document | None,
                  encoding: str | None, params: dict | None, texts: bool) -> Document:
    """:func:`from_rows` once the cells are gathered column by column."""
    enc = encoding or (CODEC.encoding_of(like) if like is not None else CP_DEFAULT)
    names = header(types)
    like_cols = None
    if like is not None and like.root.get("columnTypes") == types:
        like_cols = like.root["columns"]
    cols: list[Any] = []
    # every integer column's text parsed in one C pass (the per-column pass and
    # its checks run only when this one cannot be trusted)
    ints = [j for j, t in enumerate(types) if t != STRING and TYPES[t][1].kind != "f"]
    batch: dict[int, np.ndarray] = {}
    nrow = len(by_col[0]) if by_col else 0
    if texts and len(ints) > 1 and nrow:
        import itertools
        flat = _fast_numbers(list(itertools.chain.from_iterable(by_col[j] for j in ints)),
                             np.int64)
        if flat is not None:
            batch = dict(zip(ints, flat.reshape(len(ints), nrow)))
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
            cols.append(_int_column(cells, TYPES[t][1], j, names[j], batch.get(j)))
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
    fast = _plain_columns(text, delimiter)
    if fast is not None:
        return _from_columns(*fast, like=like, encoding=encoding, params=params, texts=True)
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    except csv.Error as e:
        raise ValueFormatError(f"not readable as {'TSV' if delimiter == chr(9) else 'CSV'}: {e}",
                               path="csv") from None
    return from_rows(rows, like=like, encoding=encoding, params=params, texts=True)


def _plain_columns(text: str, delimiter: str) -> tuple[list[int], list] | None:
    """The cells column by column without a per-row pass over the text: every
    line ends in CR LF (no lone CR or LF, no empty line, so no quoted cell
    spans lines); a line without a quote is split on its delimiters (all such
    lines in one split), the few with quotes are read by the csv module one
    line at a time (a quote left open there is an error, so the line ends
    where the whole-text reader would end it).  None when any of this does not
    hold or a line has the wrong cell count: the csv reader then reads the
    text and names the bad row."""
    if "\0" in text or not text.endswith("\r\n"):
        return None
    body = text[:-2]
    n_crlf = body.count("\r\n")
    if body.count("\r") != n_crlf or body.count("\n") != n_crlf:
        return None
    lines = body.split("\r\n")
    if "" in lines:
        return None
    quoted: dict[int, list[str]] = {}
    if '"' in body:
        for i in [i for i, line in enumerate(lines) if '"' in line]:
            try:
                quoted[i] = next(csv.reader([lines[i]], delimiter=delimiter, strict=True))
            except (csv.Error, StopIteration):
                return None
    head = quoted[0] if 0 in quoted else lines[0].split(delimiter)
    ncol = len(head)
    per = ncol - 1
    filler = delimiter * per
    for i, cells in quoted.items():
        if len(cells) != ncol:
            return None
        lines[i] = filler
    if any(n != per for n in map(str.count, lines, [delimiter] * len(lines))):
        return None
    types = _parse_header(head)
    flat = delimiter.join(lines[1:]).split(delimiter) if len(lines) > 1 else []
    cols = [flat[j::ncol] for j in range(ncol)]
    for i, cells in quoted.items():
        if i:
            for j, c in enumerate(cells):
                cols[j][i - 1] = c
    return types, cols


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
