"""``potsherd table``: Knight Online data tables to and from spreadsheets.

    potsherd table Item_Org.tbl                       # CSV on standard output
    potsherd table Item_Org.tbl -o Item_Org.csv       # .csv, or .tsv for tabs
    potsherd table Item_Org.csv --like Item_Org.tbl -o New.tbl

The CSV's header names each column's type (``c0:dword``), so a CSV alone
builds a table (classic key); ``--like ORIGINAL.tbl`` takes the cipher and key
of the original and keeps what a spreadsheet cannot hold (stored lengths of
empty strings, bytes after the last row).
"""
from __future__ import annotations

import os
import sys

from .. import api
from ..core.fileio import atomic_write
from .inputs import limits_from_args


def _delimiter(path: str, given: str | None) -> str:
    if given:
        return "\t" if given in ("tab", "\\t", "\t") else given
    return "\t" if path.lower().endswith((".tsv", ".tab", ".txt")) else ","


def cmd_table(args) -> int:
    from ..formats.ko.table import from_csv, to_csv
    src = args.file
    limits = limits_from_args(args)
    if src.lower().endswith(".tbl") or (args.format == "tbl"):
        _, doc = api.read_doc(src, limits=limits, format="tbl",
                              params=api.parse_params(getattr(args, "param", None)))
        out = args.output
        text = to_csv(doc, _delimiter(out or "", args.delimiter))
        if not out:
            sys.stdout.write(text)
            return 0
        atomic_write(out, text.encode("utf-8-sig"))
        cols = doc.root["columns"]
        print(f"{out}: {len(cols[0]) if cols else 0} rows, {len(cols)} columns "
              f"({doc.codec.encoding_of(doc)} text)")
        return 0
    if not args.output:
        print("potsherd table: building a .tbl needs -o OUTPUT.tbl", file=sys.stderr)
        return 2
    raw = api.read_input(src, limits)
    try:
        text = bytes(raw).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        print(f"potsherd table: {src} is not UTF-8 text (byte {e.start}); save the sheet "
              f"as UTF-8 CSV", file=sys.stderr)
        return 1
    like = None
    if args.like:
        _, like = api.read_doc(args.like, limits=limits, format="tbl")
    from ..formats.ko.text import text_encoding_for
    enc = None if like is not None else text_encoding_for(src)
    doc = from_csv(text, delimiter=_delimiter(src, args.delimiter), like=like, encoding=enc,
                   params=api.parse_params(getattr(args, "param", None)))
    data = doc.encode()
    atomic_write(args.output, data)
    cols = doc.root["columns"]
    same = ""
    if like is not None:
        old = like.encode()
        same = " (identical to --like)" if old == data else ""
    print(f"{args.output}: {len(cols[0]) if cols else 0} rows, {len(cols)} columns, "
          f"{len(data)} bytes{same}")
    return 0


def add_cli(subparsers, common) -> None:
    sp = subparsers.add_parser(
        "table", help="Knight Online .tbl data table to CSV/TSV, or CSV/TSV back to .tbl",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sp.add_argument("file", help="a .tbl (to CSV/TSV) or a .csv/.tsv (to .tbl)")
    sp.add_argument("-o", "--output", help="output: .csv/.tsv from a table, .tbl from a sheet "
                                            "(a table without -o prints CSV)")
    sp.add_argument("--like", help="the original .tbl: its cipher, key and stored details")
    sp.add_argument("--delimiter", help="cell separator (default: tab for .tsv, else comma; "
                                        "'tab' for a tab)")
    common(sp)
    sp.set_defaults(func=cmd_table)
    _ = os  # (paths only)
