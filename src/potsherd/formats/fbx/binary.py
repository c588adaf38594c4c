"""Binary FBX: node records (13/25 bytes), properties, null records, footer.

The parser is iterative (a file nested 1,000 levels deep is a LimitError,
not a RecursionError).  It validates every record and property list at
decode time but builds a node's ``(code, value)`` tuples only when its
``props`` is first read (see :func:`decode_binary`); arrays stay compressed
until their values are read.  What is not regenerated from the tree is kept:
the header bytes, per-node null records, zero EndOffsets, compressed array
payloads and everything after the top-level null record.
"""
from __future__ import annotations

import struct
from typing import Any

from ...core.errors import (CountError, EncodeError, FormatError, LimitError, MagicError,
                            TruncatedError, ValueFormatError)
from ...core.limits import DEFAULT_LIMITS, Limits
from ...core.compress import DocumentBudget
from ...core.values import F32NaN, F64NaN, f32_from_bits, f32_to_bits, f64_from_bits, f64_to_bits
from .model import (ARRAY_DTYPES, BLENDER_TIME, FOOTER_MAGIC, FbxArray, FbxNode, file_id,
                    footer_id)

MAGIC = b"Kaydara FBX Binary  \x00"
HEADER_SIZE = 27


class _Order:
    """Struct formats for one byte order and record width."""

    def __init__(self, big_endian: bool, wide: bool) -> None:
        e = ">" if big_endian else "<"
        self.big_endian = big_endian
        self.wide = wide
        self.record = struct.Struct(e + ("QQQB" if wide else "IIIB"))
        self.null = bytes(self.record.size)
        self.u32 = struct.Struct(e + "I")
        self.arr = struct.Struct(e + "III")
        self.scalar = {
            "Y": struct.Struct(e + "h"), "C": struct.Struct("B"), "B": struct.Struct("B"),
            "Z": struct.Struct("B"), "I": struct.Struct(e + "i"), "F": struct.Struct(e + "I"),
            "D": struct.Struct(e + "Q"), "L": struct.Struct(e + "q"),
        }
        #: per type-code byte, for building validated lists: (code, Struct of the
        #: value, Struct of its bits for F/D NaNs or None), None for S/R/arrays
        self.build: list = [None] * 256
        for code, st in self.scalar.items():
            value = {"F": struct.Struct(e + "f"), "D": struct.Struct(e + "d")}.get(code, st)
            self.build[ord(code)] = (code, value, st if code in "FD" else None)


    def __reduce__(self):
        # Structs neither pickle nor deepcopy; a pending node's source holds one of these
        return _order, (self.big_endian, self.wide)


def parse_header(data: bytes) -> dict:
    if len(data) < HEADER_SIZE:
        raise TruncatedError("file shorter than the 27-byte FBX header", offset=len(data))
    if not data.startswith(MAGIC):
        raise MagicError("not a binary FBX file", offset=0, expected=MAGIC, found=data[:21])
    endian = data[22]
    big = endian != 0
    version = struct.unpack_from(">I" if big else "<I", data, 23)[0]
    return {"version": version, "endian_byte": endian, "byte21": data[21]}


def _order(big_endian: bool, wide: bool = False) -> _Order:
    """The shared :class:`_Order` (its Structs are compiled once)."""
    key = (big_endian, wide)
    order = _ORDERS.get(key)
    if order is None:
        order = _ORDERS[key] = _Order(big_endian, wide)
    return order


_ORDERS: dict[tuple[bool, bool], _Order] = {}

#: per type-code byte, what the validating scan skips: > 0 a scalar property
#: of that many bytes (code included), -1 a string (u32 length), -(itemsize + 1)
#: an array, 0 an unknown code
_PROP_KIND = [0] * 256
for _code, _size in (("Y", 2), ("C", 1), ("B", 1), ("Z", 1), ("I", 4), ("F", 4), ("D", 8),
                     ("L", 8)):
    _PROP_KIND[ord(_code)] = 1 + _size
_PROP_KIND[ord("S")] = _PROP_KIND[ord("R")] = -1
for _code, _dtype in ARRAY_DTYPES.items():
    _PROP_KIND[ord(_code)] = -1 - int(_dtype[1])
del _code, _size, _dtype


class _PropSource:
    """The input that a decoded tree's pending property lists and child nodes
    are built from (one per decode, shared by its nodes; kept alive by the
    tree).  Everything read here was validated by :func:`_validate`, so
    building cannot fail."""

    __slots__ = ("data", "order", "limits", "budget")

    def __init__(self, data: bytes, order: _Order, limits: Limits) -> None:
        self.data = data
        self.order = order
        self.limits = limits
        #: what all the document's compressed arrays may inflate to together
        self.budget = DocumentBudget(limits.document_budget(len(data)))

    @property
    def big_endian(self) -> bool:
        return self.order.big_endian

    def span(self, record: int) -> tuple[int, int, int]:
        """(start, end, count) of the property list of the node record at ``record``."""
        _, count, plen, nlen = self.order.record.unpack_from(self.data, record)
        start = record + self.order.record.size + nlen
        return start, start + plen, count

    def parse(self, record: int) -> list:
        """The property list of the node record at ``record`` (validated at
        decode by :func:`_props_valid`, so this cannot raise)."""
        start, _, count = self.span(record)
        return _build_props(self.data, start, count, self.order, self.limits, self.budget)

    def first_string(self, record: int) -> bytes | None:
        """The first property of the record at ``record`` when it is a string
        (S), read without building the list (validated at decode)."""
        start, _, count = self.span(record)
        if not count or self.data[start] != 0x53:
            return None
        n = self.order.u32.unpack_from(self.data, start + 1)[0]
        return self.data[start + 5:start + 5 + n]

    def children(self, record: int) -> list:
        """The child nodes of the node record at ``record`` (one that has a null record)."""
        end_offset, _, plen, nlen = self.order.record.unpack_from(self.data, record)
        size = self.order.record.size
        return self.nodes(record + size + nlen + plen, end_offset - size)

    def nodes(self, pos: int, end: int, spans: Any = None) -> list:
        """The nodes of the records from ``pos`` to ``end`` (a parent's null
        record or the top-level one), their props and children pending."""
        data = self.data
        unpack_record = self.order.record.unpack_from
        size = self.order.record.size
        new_node = object.__new__
        out = []
        append = out.append
        while pos < end:
            end_offset, _, plen, nlen = unpack_record(data, pos)
            name_at = pos + size
            props_at = name_at + nlen
            props_end = props_at + plen
            # every slot set here rather than by FbxNode.__init__ (a third less per node)
            node = new_node(FbxNode)
            node.name = data[name_at:props_at]
            node.fmt = None
            if plen:
                node._props = pos  # pending: the record's offset (see FbxNode.props)
                node._pending = self
            else:  # no properties (_validate checked the count fits in 0 bytes)
                node._props = []
                node._pending = None
            if end_offset > props_end:
                node._children = pos  # pending, like the props
                node._kids_source = self
                node.zero_end = False
                next_pos = end_offset
            else:  # a leaf: EndOffset at the end of its props, or 0
                node._children = None
                node._kids_source = None
                node.zero_end = end_offset == 0
                next_pos = props_end
            append(node)
            if spans is not None:
                spans.add(node, "record", pos, next_pos)
                spans.add(node, "name", name_at, props_at)
                spans.add(node, "props", props_at, props_end)
            pos = next_pos
        return out


def decode_binary(data: bytes, limits: Limits = DEFAULT_LIMITS,
                  spans: Any = None) -> tuple[FbxNode, dict, bytes]:
    """Parse a binary FBX file into (root node, params, raw tail).

    Every record and every property list is validated here (hostile input
    raises now, with the offset and node path), but nodes below the top level
    are created only when their parent's ``children`` is first read, and
    property values only when a node's ``props`` is: :func:`_props_valid`
    accepts exactly the lists :func:`_parse_props` accepts, and any list it
    rejects is handed to :func:`_parse_props` at once so the error is the
    same one.  ``spans`` (a :class:`~potsherd.core.spans.SpanMap`) receives
    each node's ``record`` (header to end), ``name`` and ``props`` byte
    ranges; every node is then created now.
    """
    if not isinstance(data, bytes):
        data = bytes(data)  # pending nodes must not see later edits of the buffer
    # (the collector is left alone: pausing it is the application's choice,
    # see potsherd.core.gcpolicy)
    return _decode_binary(data, limits, spans)


def _decode_binary(data: bytes, limits: Limits, spans: Any = None) -> tuple[FbxNode, dict, bytes]:
    params = parse_header(data)
    version = params["version"]
    order = _order(params["endian_byte"] != 0, version >= 7500)
    pos = _validate(data, order, limits)  # where the top-level null record starts
    source = _PropSource(data, order, limits)
    root = FbxNode(b"", [], source.nodes(HEADER_SIZE, pos, spans))
    if spans is not None:
        _create_all(root, spans)
    pos += order.record.size
    params["terminated"] = True
    ct = creation_time(root)
    fid = root.find(b"FileId")
    if ct is not None and len(ct) >= 22 and fid is not None and fid.props == [("R", file_id(ct))]:
        params["file_id"] = "derived"  # the writer re-derives it if CreationTime is edited
    tail = data[pos:]
    params["footer"] = "raw"
    style = detect_footer(root, pos, tail, params["version"], order.big_endian)
    if style:
        params["footer"] = style
        tail = b""
    return root, params, tail


def _create_all(root: FbxNode, spans: Any) -> None:
    """Create every pending node of the tree now, recording its spans."""
    stack = list(root.children or ())
    while stack:
        node = stack.pop()
        source = node._kids_source
        if source is not None:
            end_offset, _, plen, nlen = source.order.record.unpack_from(source.data,
                                                                        node._children)
            size = source.order.record.size
            node.children = source.nodes(node._children + size + nlen + plen,
                                         end_offset - size, spans)
            stack.extend(node.children)


def _validate(data: bytes, order: _Order, limits: Limits) -> int:
    """Check every node record and property list of the file; the offset of
    the top-level null record.

    The parser is iterative (a file nested 1,000 levels deep is a LimitError,
    not a RecursionError) and builds nothing on the accepting path, so what
    it costs per record is the checks alone.
    """
    unpack_record = order.record.unpack_from
    null_record = order.null
    null_len = order.record.size
    end_of_data = len(data)
    props_valid = _props_valid
    prop_kind = _PROP_KIND
    unpack_u32 = order.u32.unpack_from
    unpack_arr = order.arr.unpack_from
    max_depth = limits.max_depth
    max_elements = limits.max_elements
    max_inflated = limits.max_inflated
    inflation_ratio = limits.max_inflation_ratio
    # (end offset, record offset) of each open parent; the innermost end
    # offset is also held in ``limit`` (None at the top level)
    stack: list[tuple[int, int]] = []
    limit: int | None = None
    # where the current parent's null record starts; at the top level the
    # end of the input, which no record may reach
    child_end = end_of_data
    pos = HEADER_SIZE
    while True:
        if pos >= child_end:
            if limit is None:
                raise TruncatedError("input ends before the top-level null record", offset=pos)
            if pos > child_end:
                raise FormatError("child nodes overrun their parent's end offset",
                                  offset=pos, path=_path(data, null_len, stack),
                                  expected=child_end)
            if data[pos:limit] != null_record:
                raise FormatError("null record of a node is not all zero", offset=pos,
                                  path=_path(data, null_len, stack))
            pos = limit
            stack.pop()
            if stack:
                limit = stack[-1][0]
                child_end = limit - null_len
            else:
                limit = None
                child_end = end_of_data
            continue
        try:
            end_offset, nprops, plen, nlen = unpack_record(data, pos)
        except struct.error:
            raise TruncatedError("input ends inside a node record", offset=pos,
                                 path=_path(data, null_len, stack), expected=null_len,
                                 found=end_of_data - pos) from None
        start = pos
        name_at = pos + null_len
        pos = name_at + nlen  # where the property list starts
        props_end = pos + plen
        if props_end > end_of_data or nprops > plen or end_offset == 0:
            # rare: one test here instead of four on every record
            if end_offset == 0 and nlen == 0 and limit is None:
                if data[start:name_at] != null_record:
                    raise FormatError("top-level null record is not all zero", offset=start)
                return start
            if nlen > end_of_data - name_at:
                raise TruncatedError("input ends inside a node name", offset=name_at,
                                     path=_path(data, null_len, stack))
            if plen > end_of_data - pos:
                raise TruncatedError(f"property list of {plen} bytes runs past the end of input",
                                     offset=pos, path=_path(data, null_len, stack, start))
            if nprops > plen:
                raise CountError(f"{nprops} properties cannot fit in {plen} bytes", offset=start,
                                 path=_path(data, null_len, stack, start))
        if plen:
            valid = False
            if nprops == 1:
                # half the nodes hold one scalar or string filling the list:
                # checked inline (same rule as the scan), the rest by the scan
                kind = prop_kind[data[pos]]
                if kind > 0:
                    valid = kind == plen
                elif kind == -1 and plen >= 5:
                    valid = unpack_u32(data, pos + 1)[0] == plen - 5
                elif kind and plen >= 13:  # one array (KeyTime, Vertices, ...)
                    n, enc, clen = unpack_arr(data, pos + 1)
                    if clen == plen - 13 and n <= max_elements:
                        size = n * (-1 - kind)
                        if enc == 0:
                            valid = clen == size
                        elif enc == 1:
                            valid = size <= max_inflated and size <= inflation_ratio * clen + (1 << 20)
            if not valid and not props_valid(data, pos, props_end, nprops, unpack_u32,
                                             unpack_arr, limits):
                try:  # raises the precise error (were the scan stricter, the lazy parse
                    # would build the same list later)
                    _parse_props(data, pos, props_end, nprops, order, limits)
                except FormatError as e:
                    raise e.prepend(_path(data, null_len, stack, start))
        pos = props_end
        if end_offset == pos and pos <= child_end:
            continue  # a leaf inside its parent (the checks below would all pass)
        if end_offset == 0:
            continue  # a leaf with a zero EndOffset (kept as FbxNode.zero_end)
        if end_offset > end_of_data:
            raise TruncatedError(f"node ends at {end_offset}, past the end of input",
                                 offset=start, path=_path(data, null_len, stack, start),
                                 found=end_of_data)
        if end_offset > child_end:  # (at the top level the test above caught it)
            raise FormatError("node ends past its parent's children", offset=start,
                              path=_path(data, null_len, stack, start), expected=child_end,
                              found=end_offset)
        if end_offset == pos:
            continue
        if end_offset - pos < null_len:
            raise FormatError("node end offset leaves no room for its null record",
                              offset=start, path=_path(data, null_len, stack, start),
                              found=end_offset)
        if len(stack) >= max_depth:
            raise LimitError(f"nodes nested deeper than {max_depth}", offset=start,
                             path=_path(data, null_len, stack, start), found=len(stack) + 1)
        stack.append((end_offset, start))
        limit = end_offset
        child_end = end_offset - null_len


def _props_valid(data: bytes, pos: int, end: int, count: int, unpack_u32, unpack_arr,
                 limits: Limits) -> bool:
    """Would :func:`_parse_props` accept data[pos:end] as ``count`` properties?

    The same checks in one tight loop that builds nothing: type codes known,
    every property inside the list, the list used exactly, array headers
    within the element / inflation limits with a known encoding and raw
    sizes matching.  Bounds are not checked per property: ``pos`` grows by at
    least one byte per property, so a property starting or running past
    ``end`` leaves it past ``end`` for the final test (reading past the end of
    the input on the way is an IndexError / struct.error, also a rejection).
    """
    kinds = _PROP_KIND
    try:
        for _ in range(count):
            kind = kinds[data[pos]]
            if kind == -1:  # S / R: u32 length + bytes
                pos += 5 + unpack_u32(data, pos + 1)[0]
            elif kind > 0:  # scalar
                pos += kind
            elif kind:  # array: count, encoding, stored length, payload
                n, enc, clen = unpack_arr(data, pos + 1)
                pos += 13 + clen
                if pos > end or n > limits.max_elements:
                    return False
                size = n * (-1 - kind)
                if enc == 0:
                    if clen != size:
                        return False
                elif enc != 1 or size > limits.max_inflated or \
                        size > limits.max_inflation_ratio * clen + (1 << 20):
                    return False
            else:
                return False
    except (IndexError, struct.error):
        return False
    return pos == end


def _path(data: bytes, null_len: int, stack: list, record: int | None = None) -> str:
    """The node path of an error: the names of the open parents (``stack`` of
    (end, record offset)) and of the record at ``record``."""
    records = [r for _, r in stack] + ([] if record is None else [record])
    # the name length is the record header's last byte
    names = [data[r + null_len:r + null_len + data[r + null_len - 1]] for r in records]
    return "/" + "/".join(n.decode("latin-1") for n in names)


def _build_props(data: bytes, pos: int, count: int, order: _Order, limits: Limits,
                 budget: Any = None) -> list:
    """The ``count`` properties at ``pos`` of a list :func:`_validate` accepted:
    what :func:`_parse_props` builds, without re-checking (a third of the time
    of reading a scene's properties went to checks already made at decode)."""
    props: list = []
    append = props.append
    build = order.build
    unpack_u32 = order.u32.unpack_from
    unpack_arr = order.arr.unpack_from
    big_endian = order.big_endian
    for _ in range(count):
        b = data[pos]
        scalar = build[b]
        if scalar is not None:
            code, st, bits = scalar
            v = st.unpack_from(data, pos + 1)[0]
            if bits is not None and v != v:  # a NaN keeps its bit pattern
                v = (f32_from_bits if code == "F" else f64_from_bits)(bits.unpack_from(
                    data, pos + 1)[0])
            append((code, v))
            pos += 1 + st.size
        elif b == 0x53 or b == 0x52:  # S, R
            n = unpack_u32(data, pos + 1)[0]
            pos += 5
            append(("S" if b == 0x53 else "R", data[pos:pos + n]))
            pos += n
        else:  # an array (the only other codes validation lets through)
            code = chr(b)
            n, enc, clen = unpack_arr(data, pos + 1)
            append((code, FbxArray(code, count=n, encoding=enc,
                                   payload=data[pos + 13:pos + 13 + clen], offset=pos + 1,
                                   big_endian=big_endian, limits=limits, budget=budget)))
            pos += 13 + clen
    return props


def _parse_props(data: bytes, pos: int, end: int, count: int, order: _Order,
                 limits: Limits) -> list:
    props: list = []
    scal = order.scalar
    u32 = order.u32
    for i in range(count):
        if pos >= end:
            raise TruncatedError(f"property {i} starts past the property list", offset=pos,
                                 path=f"props[{i}]")
        code = chr(data[pos])
        pos += 1
        st = scal.get(code)
        if st is not None:
            if pos + st.size > end:
                raise TruncatedError(f"property {code} runs past the property list",
                                     offset=pos, path=f"props[{i}]")
            v = st.unpack_from(data, pos)[0]
            if code == "F":
                v = f32_from_bits(v)
            elif code == "D":
                v = f64_from_bits(v)
            props.append((code, v))
            pos += st.size
        elif code == "S" or code == "R":
            if pos + 4 > end:
                raise TruncatedError("string length runs past the property list", offset=pos,
                                     path=f"props[{i}]")
            n = u32.unpack_from(data, pos)[0]
            pos += 4
            if n > end - pos:
                raise CountError(f"string of {n} bytes exceeds the {end - pos} bytes left",
                                 offset=pos - 4, path=f"props[{i}]", found=n)
            props.append((code, data[pos:pos + n]))
            pos += n
        elif code in ARRAY_DTYPES:
            if pos + 12 > end:
                raise TruncatedError("array header runs past the property list", offset=pos,
                                     path=f"props[{i}]")
            n, enc, clen = order.arr.unpack_from(data, pos)
            at = pos
            pos += 12
            if clen > end - pos:
                raise CountError(f"array payload of {clen} bytes exceeds the {end - pos} left",
                                 offset=at + 8, path=f"props[{i}]", found=clen)
            item = 8 if code in "dl" else 4 if code in "fi" else 1
            if n > limits.max_elements:
                raise LimitError(f"array of {n} elements exceeds max_elements", offset=at,
                                 path=f"props[{i}]", found=n)
            if enc == 0:
                if clen != n * item:
                    raise CountError(f"raw array of {n} x {item} bytes stores {clen} bytes",
                                     offset=at + 8, path=f"props[{i}]", expected=n * item,
                                     found=clen)
            elif enc == 1:
                size = n * item
                if size > limits.max_inflated or size > limits.max_inflation_ratio * clen + (1 << 20):
                    raise LimitError(f"array would inflate to {size} bytes from {clen}",
                                     offset=at, path=f"props[{i}]", found=size)
            else:
                raise ValueFormatError(f"unknown array encoding {enc}", offset=at + 4,
                                       path=f"props[{i}]", found=enc)
            props.append((code, FbxArray(code, count=n, encoding=enc,
                                         payload=data[pos:pos + clen], offset=at,
                                         big_endian=order.big_endian, limits=limits)))
            pos += clen
        else:
            raise ValueFormatError(f"unknown property type code 0x{ord(code):02X}",
                                   offset=pos - 1, path=f"props[{i}]", found=code)
    if pos != end:
        raise FormatError(f"properties end at {pos}, the property list at {end}", offset=pos,
                          expected=end)
    return props


# ----------------------------------------------------------------------------
# footer

def creation_time(root: FbxNode) -> bytes | None:
    node = root.find(b"CreationTime")
    if node and node.props and node.props[0][0] == "S":
        return node.props[0][1]
    return None


def build_footer(style: str, creation: bytes | None, offset: int, version: int,
                 big_endian: bool) -> bytes:
    """The footer written after the top-level null record at ``offset``."""
    fid = footer_id(creation if creation and len(creation) >= 22 else BLENDER_TIME)
    ver = struct.pack(">I" if big_endian else "<I", version)
    q = offset + 16
    if style == "sdk":
        pad = 16 - (q % 16)
        return fid + bytes(pad) + bytes(4) + ver + bytes(120) + FOOTER_MAGIC
    if style == "blender":
        pad = 16 - ((q + 4) % 16)
        return fid + bytes(4) + bytes(pad) + ver + bytes(120) + FOOTER_MAGIC
    raise ValueFormatError(f"unknown footer style {style!r}")


def detect_footer(root: FbxNode, offset: int, tail: bytes, version: int,
                  big_endian: bool) -> str | None:
    if version < 7000 or len(tail) < 160:
        return None
    ct = creation_time(root)
    if ct is None or len(ct) < 22:
        return None
    for style in ("sdk", "blender"):
        if build_footer(style, ct, offset, version, big_endian) == tail:
            return style
    return None


# ----------------------------------------------------------------------------
# writer

def encode_binary(root: FbxNode, params: dict, tail: bytes = b"",
                  compression_level: int | None = None) -> bytes:
    """Write the tree; offsets, lengths and null records follow the tree."""
    version = int(params.get("version", 7400))
    if params.get("file_id") == "derived":
        regenerate_ids(root)
    endian_byte = int(params.get("endian_byte", 0))
    big = endian_byte != 0
    order = _Order(big, version >= 7500)
    out = bytearray(MAGIC)
    out.append(int(params.get("byte21", 0x1A)))
    out.append(endian_byte)
    out += order.u32.pack(version)
    rec = order.record
    hsize = rec.size
    stack: list[tuple[Any, int, Any]] = [(None, 0, iter(root.children or ()))]
    while stack:
        node, start, it = stack[-1]
        child = next(it, None)
        if child is None:
            stack.pop()
            if node is not None:
                out += order.null
                _patch(out, rec, node, start)
            continue
        start_c = len(out)
        if child._kids_source is not None and _copy_unbuilt(out, child, order):
            continue
        if len(child.name) > 255:
            raise FormatError(f"node name of {len(child.name)} bytes exceeds 255",
                              path=child.name[:40].decode("latin-1"))
        out += bytes(hsize)
        out += child.name
        pending = child.pending_props()
        if pending is not None and pending[0].big_endian == big:
            # never built, so unchanged: the source bytes are what _write_props would write
            source, p_start, p_end, nprops = pending
            out += source.data[p_start:p_end]
        else:
            _write_props(out, child.props, order, compression_level)
            nprops = len(child.props)
        plen = len(out) - start_c - hsize - len(child.name)
        rec.pack_into(out, start_c, 0, nprops, plen, len(child.name))
        if child.children is None:
            _patch(out, rec, child, start_c)
        else:
            if len(stack) > 100000:
                raise FormatError("tree nested too deeply to write")
            stack.append((child, start_c, iter(child.children)))
    if params.get("terminated", True):
        out += order.null
        style = params.get("footer", "raw")
        if style in ("sdk", "blender"):
            out += build_footer(style, creation_time(root), len(out), version, big)
    out += tail
    return bytes(out)


def _copy_unbuilt(out: bytearray, node: FbxNode, order: _Order) -> bool:
    """Append the node's whole record from the source when nothing of it can
    have changed: its children never created, its props never built (or none),
    its name as stored, and the same record layout.  EndOffsets are absolute,
    so the copy is exact only where the record lands at its source offset
    (everywhere, in an unedited round trip); elsewhere the writer goes on."""
    source: _PropSource = node._kids_source  # type: ignore[assignment]
    record = node._children
    if record != len(out) or source.order is not order and (
            source.order.big_endian != order.big_endian or source.order.wide != order.wide):
        return False
    data = source.data
    end_offset, _, plen, nlen = order.record.unpack_from(data, record)
    name_at = record + order.record.size
    if node._pending is not source and (plen or node._pending is not None or node._props):
        return False  # props built (perhaps edited) or assigned
    if node.zero_end or node.name != data[name_at:name_at + nlen]:
        return False
    out += data[record:end_offset]
    return True


def _patch(out: bytearray, rec: struct.Struct, node: FbxNode, start: int) -> None:
    end = 0 if node.zero_end else len(out)
    _, n, plen, nlen = rec.unpack_from(out, start)
    rec.pack_into(out, start, end, n, plen, nlen)


def _write_props(out: bytearray, props: list, order: _Order, level: int | None) -> None:
    scal = order.scalar
    for code, v in props:
        st = scal.get(code)
        if st is not None:
            out += code.encode()
            if code == "F":
                v = f32_to_bits(v if isinstance(v, F32NaN) else float(v))
            elif code == "D":
                v = f64_to_bits(v if isinstance(v, F64NaN) else float(v))
            out += st.pack(v)
        elif code == "S" or code == "R":
            out += code.encode()
            out += order.u32.pack(len(v))
            out += v
        elif code in ARRAY_DTYPES:
            n, enc, payload = v.encoded(order.big_endian, level)
            out += code.encode()
            out += order.arr.pack(n, enc, len(payload))
            out += payload
        else:
            raise FormatError(f"cannot write property type {code!r}")


def regenerate_ids(root: FbxNode) -> None:
    """Set the FileId node from CreationTime, as the SDK derives it."""
    ct = creation_time(root)
    node = root.find(b"FileId")
    if ct is not None and node is not None:
        if len(ct) < 22:  # an edited CreationTime the SDK rule cannot use
            raise EncodeError(f"file_id 'derived' needs CreationTime as YYYY-MM-DD HH:MM:SS:mmm, "
                              f"found {bytes(ct)!r}", path="CreationTime")
        node.props = [("R", file_id(ct))]
