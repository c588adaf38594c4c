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

Modules (each imports only those listed before it, and the storage modules of
:mod:`potsherd.core.layout`, never its front end)
-----------------------------------------------------------------------------
* :mod:`.kinds` - the storage classes the generators test for, as ``L``;
* :mod:`.runtime` - the on/off switch and the helpers generated code calls;
* :mod:`.analysis` - questions about storages (kinds, references, fixed runs);
* :mod:`.exprs` - expression compiler and the generator's shared base;
* :mod:`.decoder` / :mod:`.encoder` - per-storage code generation;
* :mod:`.compiled` - :class:`FastLayout`: generated functions, cached, run
  optimistically; the source registered in :mod:`linecache` under
  ``<potsherd-fast:ROOT:decode>`` / ``<potsherd-fast:ROOT:encode>``.
"""
from __future__ import annotations

from .runtime import PrivateBuffer, reference_only, set_enabled
from .compiled import FastLayout, fast_layout

__all__ = ["FastLayout", "PrivateBuffer", "fast_layout", "reference_only", "set_enabled"]
