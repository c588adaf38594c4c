"""The storage classes and runtime helpers the generators look at, in one namespace
(``L.Prim``, ``L.Record``...): the generators depend on the storage modules only."""
from __future__ import annotations

from ..expr import Scope, compile_expr  # noqa: F401
from ..stream import Reader, Writer  # noqa: F401
from ..values import f32_from_bits, f64_from_bits  # noqa: F401
from ..layout.storages import Bytes, Choice, Group, Prim, Storage, String, Tail  # noqa: F401
from ..layout.arrays import Array, RecordColumns  # noqa: F401
from ..layout.sized import Sized  # noqa: F401
from ..layout.records import Record  # noqa: F401
from ..layout.tables import Table  # noqa: F401
from ..layout.ragged import RaggedTable  # noqa: F401
