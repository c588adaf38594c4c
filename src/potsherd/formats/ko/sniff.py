"""Foreign-file recognition for the opaque fallback (see ``codecs.py``): files of
another layout that share an extension are kept raw instead of refused; and the
post-decode check of fxb bundles."""
from __future__ import annotations

from ...core.errors import CountError, FormatError, TruncatedError, ValueFormatError
from ...document import Document


# ----------------------------------------------------------------------------
# foreign-layout recognition (the opaque fallback rule, see module docstring)


def _failed_inside(data: bytes, e: FormatError) -> bool:
    """The parse failed on an absurd count or length (one that needs more
    items than the whole input has bytes, and at least 2**20), or on an
    impossible value (a non-finite cell grid).  A truncated real file fails by
    running out of input on a genuine count instead, which is never that large."""
    if isinstance(e, ValueFormatError):
        return True
    found = e.found
    return (isinstance(e, (CountError, TruncatedError)) and isinstance(found, int)
            and found >= 1 << 20 and found > len(data))


def _i32(data: bytes, off: int) -> int | None:
    if off + 4 > len(data):
        return None
    return int.from_bytes(data[off:off + 4], "little", signed=True)


def _plausible_string(data: bytes, off: int, maxlen: int = 260) -> int | None:
    """End offset of a plausible name string at ``off`` (printable bytes)."""
    n = _i32(data, off)
    if n is None or n < 0 or n > maxlen or off + 4 + n > len(data):
        return None
    s = data[off + 4:off + 4 + n]
    if any(b < 0x20 and b not in (0,) for b in s):
        return None
    return off + 4 + n


def foreign_shape(data: bytes, e: FormatError) -> str | None:
    """A shape of another N3 game (Repent Online): a plausible transform name,
    then a layout this engine does not read."""
    if _plausible_string(data, 0) is not None and _failed_inside(data, e):
        return "n3shape of an unknown layout (a Repent Online shape)"
    return None


def foreign_opd(data: bytes, e: FormatError) -> str | None:
    """An opd of another build (Hero Online): plausible width/length floats."""
    import struct
    for off in (0, None):
        if off is None:
            end = _plausible_string(data, 4, 64)
            if end is None or _i32(data, 0) not in (1, 2):
                continue
            off = end
        if off + 8 > len(data):
            continue
        w, h = struct.unpack_from("<2f", data, off)
        if 0 < w <= 65536 and 0 < h <= 65536 and _failed_inside(data, e):
            return "opd of an unknown layout (the Hero Online build)"
    return None


def foreign_gtd(data: bytes, e: FormatError) -> str | None:
    """An obfuscated or compressed gtd of a current client: neither a header
    (version 1-2 + short name) nor a 2^n+1 map size at offset 0, and the
    file is large enough to be a terrain."""
    v = _i32(data, 0)
    header = v in (1, 2) and _plausible_string(data, 4, 64) is not None
    size_ok = v is not None and v > 1 and ((v - 1) & (v - 2)) == 0
    if not header and not size_ok and len(data) >= 4096:
        return "gtd of an unknown layout (obfuscated or compressed)"
    return None


def foreign_uif(data: bytes, e: FormatError) -> str | None:
    """A UIF of an older or foreign build: a plausible root
    name and child count, but a layout this engine does not read."""
    end = _plausible_string(data, 0, 256)
    if end is None or _i32(data, end) is None:
        return None
    count = int.from_bytes(data[end:end + 2], "little", signed=True)
    if 0 <= count <= 4096 and _failed_inside(data, e):
        return "uif of an unknown layout"
    return None


# ----------------------------------------------------------------------------
# post-decode checks


def check_fxb(doc: Document) -> None:
    v = doc.root.get("version")
    if isinstance(v, int) and v >= 3:
        doc.warnings.append(f"fxb version {v}: part layouts unknown; "
                            f"body of {len(doc.root.get('body', b''))} bytes kept raw")


