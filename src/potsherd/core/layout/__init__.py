"""The layout engine: a format described as data decodes and encodes itself.

A *layout* is a set of named records; each record is an ordered list of
``(field, storage, condition)`` rows, exactly the notation of the Knight Online
wire layout reference.  This module turns such data into :class:`Storage`
objects that decode bytes into a plain document tree (dicts, lists, numpy
arrays, bytes), encode that tree back to identical bytes, and convert it to and
from the two JSON forms.  One declaration serves all four directions.

Storage kinds
-------------
* primitives ``u8 i8 u16 i16 u32 i32 u64 i64 f32 f64`` (little-endian) and
  ``u16be i16be u32be i32be f32be``;
* groups ``vec3`` (3 x f32), ``quat`` (4 x f32), ``rect`` (4 x i32);
* ``string``: ``i32`` signed length, then that many raw bytes (a length <= 0
  reads none; a negative length is kept); ``{"kind":"string","prefix":"u8"}``
  for other prefixes;
* ``{"kind":"bytes","count":E}``: opaque bytes; ``{"kind":"tail"}``: the rest;
* ``{"kind":"array","count":E,"item":S}``: arrays of primitives (and arrays of
  fixed groups / fixed inner arrays) are numpy arrays, others are lists;
* ``{"kind":"choice","condition":E,"yes":S,"no":S}``;
* ``{"kind":"parameter","name":N,"default":V}``: an input, never serialised;
* ``{"kind":"struct","format":F,"keys":K}``: a record from a Python struct
  format string (how the Darkstar spec writes its records), built as an
  ordinary record of primitive fields;
* ``{"kind":"table","count":E,"item":R}`` (or ``"format"``/``"keys"``): fixed
  records as one numpy structured array (:mod:`.tables`);
* ``{"kind":"ragged","count":E,"item":R}``: records of fixed fields followed by
  numeric arrays counted by those fields, column-wise (:mod:`.ragged`);
* ``{"kind":"sized","size":E,"item":S}`` (``"repeat":true`` for items back to
  back): a bounded sub-stream, kept raw when its content does not parse,
  its size field regenerated on encode (:mod:`.sized`);
* any record name, and any custom storage a family registers in Python.

Conditions are ``"always"``, ``"optional tail"`` (present while bytes remain)
or an expression (:mod:`potsherd.core.expr`).

Speed: reference interpreter and compiled fast path
---------------------------------------------------
The classes below are the *reference*: they define every document and every
error (message, offset, path).  :meth:`Layout.decode` and
:meth:`Layout.encode` first run the same layout compiled once (cached per
layout) into specialised Python by :mod:`potsherd.core.fastpath`: runs of
fixed fields in one ``struct`` call, numeric arrays in one ``frombuffer``,
arrays of fixed scalar records in one ``iter_unpack``, expressions inlined.
The fast path only ever returns what the reference would; on anything
unusual (any error, a limit, an unexpected value type while encoding) it
steps aside and the reference runs from the start, so errors are the
reference's own.  ``reference=True`` (or ``fastpath.reference_only()``)
forces the interpreter; ``tests/core/test_engine_differential.py`` checks
both agree on every corpus file and on mutated files.  Families calling
``Record.decode`` directly (inside custom storages) get the interpreter.

Document model of record arrays: an ``array`` of records is a list of dicts
(flexible: records of any shape, conditions, nested lists); a ``table`` of
fixed records is one numpy structured array (one ``frombuffer``/``tobytes``,
JSON as columns), the form for bulk records.  Encoding a table also accepts a
list of dicts, so hand-built documents need not know numpy.

Modules (each imports only those listed before it)
--------------------------------------------------
* :mod:`.jsonio` - JSON context, hex/text cells, numpy arrays in JSON;
* :mod:`.storages` - base class, primitives, groups, strings, bytes, tails,
  parameters, choices;
* :mod:`.arrays` - counted arrays;
* :mod:`.sized` - sized sub-streams;
* :mod:`.records` - records of conditional fields;
* :mod:`.tables` - struct format strings, fixed-record tables;
* :mod:`.ragged` - records with variable numeric arrays, column-wise;
* :mod:`.text` - the ``.layout`` table notation;
* :mod:`.front` - :class:`Layout` (rows to records, fast path then reference).

``potsherd.core.layout`` keeps exporting every name it always did.
"""
from __future__ import annotations

from ..errors import (CountError, EncodeError, FormatError, JsonFormatError,  # noqa: F401
                      LimitError, TruncatedError)
from ..expr import Scope, compile_expr, linear_count  # noqa: F401
from ..limits import DEFAULT_LIMITS, Limits  # noqa: F401
from ..stream import Reader, Writer, cached_struct  # noqa: F401
from ..values import (F32NaN, F64NaN, RawString, f32_from_bits, f32_to_bits,  # noqa: F401
                      f64_from_bits, f64_to_bits)
from .jsonio import (JsonCtx, _jerr, _np_from_json, _np_to_json, hex_to_bytes,  # noqa: F401
                     text_or_hex, text_or_hex_back)
from .storages import (GROUPS, PRIMS, Bytes, Choice, Group, Param, Prim, Storage,  # noqa: F401
                       String, Tail, _byte_count)
from .arrays import Array, RecordColumns  # noqa: F401
from .sized import Sized, Unparsed, bounded_reader, reading  # noqa: F401
from .records import Field, Record  # noqa: F401
from .ragged import Ragged, RaggedTable  # noqa: F401
from .tables import (STRUCT_CODES, ColumnJson, Table, parse_struct, record_dtype, struct_dtype,  # noqa: F401
                     struct_rows)
from .text import parse_layout_text  # noqa: F401
from .front import Layout, _fast_layout  # noqa: F401
