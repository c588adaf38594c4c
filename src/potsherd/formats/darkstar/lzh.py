"""The Darkstar LZH stream (LZHRStream / LZHWStream): LZSS over a 4096-byte
ring with a 60-byte look-ahead, symbols coded by an adaptive Huffman tree
(Okumura's LZHUF with F = 60 instead of 18).

Facts from the published engine source (lzhuff.cpp, lzhrstrm.cpp,
lzhwstrm.cpp): 314 symbols (256 literals + match lengths 3..60), tree rebuilt
when the root frequency reaches 0x8000, the ring starts filled with spaces at
4036, match positions are coded as 6 high bits through the fixed ``p_code`` /
``p_len`` tables plus 6 low bits verbatim, and the writer ends a stream with
its partial byte and one zero byte.  The stream records no length: the reader
is told how many bytes to produce, and an engine-written stream is consumed to
exactly ``ceil(bits / 8) + 1`` bytes (the reader keeps 9..16 bits buffered),
which is how a parser finds where the next field starts.

:func:`encode` follows the engine's encoder step for step (binary-tree match
finder, the same tie-breaking, the same flush) so re-encoding an engine stream
gives its bytes back; the engine's ring past the first 4036 bytes starts as
uninitialised heap memory, which only matters for inputs under 60 bytes
(modelled as the MSVC debug heap's 0xCD fill, which reproduces every short
stream of the corpus).
"""
from __future__ import annotations

import numpy as np

from ...core.errors import FormatError, LimitError, TruncatedError
from ...core.limits import DEFAULT_LIMITS, Limits

N = 4096            # ring size
F = 60              # look-ahead / longest match
THRESHOLD = 2       # matches of 2 bytes or fewer are sent as literals
NCHAR = 256 - THRESHOLD + F   # 314 symbols
T = NCHAR * 2 - 1   # 627 tree nodes
R = T - 1           # root
MAX_FREQ = 0x8000
NIL = N

#: most output bytes one input byte can produce (a 60-byte match costs at least
#: 1 Huffman bit + 9 position bits), used to refuse impossible length claims
MAX_RATIO = 48

P_LEN = bytes([3] + [4] * 3 + [5] * 8 + [6] * 12 + [7] * 24 + [8] * 16)
P_CODE = bytes([0x00, 0x20, 0x30, 0x40, 0x50, 0x58, 0x60, 0x68, 0x70, 0x78, 0x80, 0x88,
                *range(0x90, 0xC0, 4), *range(0xC0, 0xF0, 2), *range(0xF0, 0x100)])


def _decode_tables() -> tuple[bytes, bytes]:
    """``d_code``/``d_len``: the inverse of P_CODE/P_LEN over a byte's top bits."""
    code, length = bytearray(256), bytearray(256)
    for hi in range(64):
        n = P_LEN[hi]
        start = P_CODE[hi]
        for b in range(start, start + (1 << (8 - n)) if n <= 8 else start + 1):
            code[b] = hi
            length[b] = n
    return bytes(code), bytes(length)


D_CODE, D_LEN = _decode_tables()


def _new_tree() -> tuple[list[int], list[int], list[int]]:
    freq = [0] * (T + 1)
    son = [0] * T
    prnt = [0] * (T + NCHAR)
    for i in range(NCHAR):
        freq[i] = 1
        son[i] = i + T
        prnt[i + T] = i
    i, j = 0, NCHAR
    while j <= R:
        freq[j] = freq[i] + freq[i + 1]
        son[j] = i
        prnt[i] = prnt[i + 1] = j
        i += 2
        j += 1
    freq[T] = 0xFFFF
    prnt[R] = 0
    return freq, son, prnt


def _reconst(freq: list[int], son: list[int], prnt: list[int]) -> None:
    """Halve the frequencies and rebuild the tree (the engine's reconst)."""
    j = 0
    for i in range(T):
        if son[i] >= T:
            freq[j] = (freq[i] + 1) // 2
            son[j] = son[i]
            j += 1
    i, j = 0, NCHAR
    while j < T:
        f = freq[i] + freq[i + 1]
        freq[j] = f
        k = j - 1
        while f < freq[k]:
            k -= 1
        k += 1
        freq[k + 1:j + 1] = freq[k:j]
        freq[k] = f
        son[k + 1:j + 1] = son[k:j]
        son[k] = i
        i += 2
        j += 1
    for i in range(T):
        k = son[i]
        if k >= T:
            prnt[k] = i
        else:
            prnt[k] = prnt[k + 1] = i


def max_output(compressed: int) -> int:
    """Most bytes a stream of ``compressed`` bytes can expand to."""
    return MAX_RATIO * compressed + F


def decode(data: bytes | bytearray | memoryview, size: int, offset: int = 0,
           end: int | None = None, *, limits: Limits = DEFAULT_LIMITS,
           path: str = "lzh") -> tuple[bytes, int]:
    """Expand the stream at ``data[offset:end]`` to exactly ``size`` bytes.

    Returns the bytes and how many stream bytes the engine's reader consumed
    (so the caller knows where the next field starts).  A claimed size the
    limits or the stream's length cannot hold, and a stream that runs out
    before ``size`` bytes, are refused with a FormatError.
    """
    buf = bytes(data)
    if end is None:
        end = len(buf)
    avail = end - offset
    if size < 0:
        raise FormatError(f"negative LZH size {size}", offset=offset, path=path)
    if size > limits.max_inflated:
        raise LimitError(f"LZH stream claims {size} bytes, above the limit of "
                         f"{limits.max_inflated}", offset=offset, path=path, found=size)
    if size > max_output(avail):
        raise FormatError(f"LZH stream of at most {avail} bytes cannot expand to {size}",
                          offset=offset, path=path, found=size)
    if size == 0:
        return b"", 0
    freq, son, prnt = _new_tree()
    # the output buffer is also the ring: a match of position p copies from
    # p + 1 bytes back.  Its first N bytes stand for the engine's starting ring
    # (output byte n sits at ring index (N - F + n) mod N): F uninitialised
    # bytes (zeros), then N - F spaces.
    out = bytearray(N + size)
    out[F:N] = b" " * (N - F)
    j = N
    stop = N + size
    # the stream as one byte per bit (numpy unpacks it once), so the tree walk
    # takes a bit with one index; a position reads its 9..14 bits from the
    # packed bytes.  Zero bytes pad the end, as the engine's reader gets zeros
    # there; it consumed ceil(bits / 8) + 1 stream bytes.
    # (no symbol takes more than 37 bits and each gives at least one byte, so
    # only that much of what follows is unpacked)
    packed = buf[offset:offset + min(avail, (37 * size + 7) // 8 + 2)] + bytes(8)
    bits = np.unpackbits(np.frombuffer(packed, np.uint8)).tobytes()
    # the walk past the stream's end: each symbol takes at most 23 bits (the
    # tree is Huffman and its root weight stays under 0x8000, a Fibonacci
    # bound) + 14 position bits, so a pad of 64 zero bits never runs out
    limit = 8 * avail
    p = 0
    d_code, d_len = D_CODE, D_LEN
    frombytes = int.from_bytes
    while j < stop:
        if p > limit:
            break
        # --- decodeChar: walk from the root, one bit per level
        c = son[R]
        while c < T:
            c = son[c + bits[p]]
            p += 1
        c -= T
        # --- update (inlined: the hot loop): from the symbol's leaf up to the
        # root (whose parent is 0; node 0 is only ever a leaf, never a parent)
        if freq[R] == MAX_FREQ:
            _reconst(freq, son, prnt)
        k = prnt[c + T]
        while True:
            f = freq[k] + 1
            if f > freq[k + 1]:   # move it past the nodes of its old weight
                l = k + 2
                while f > freq[l]:
                    l += 1
                l -= 1
                freq[k] = freq[l]
                freq[l] = f
                i = son[k]
                prnt[i] = l
                if i < T:
                    prnt[i + 1] = l
                m = son[l]
                son[l] = i
                prnt[m] = k
                if m < T:
                    prnt[m + 1] = k
                son[k] = m
                k = prnt[l]
            else:
                freq[k] = f
                k = prnt[k]
            if not k:
                break
        if c < 256:
            out[j] = c
            j += 1
            continue
        # --- decodePosition: a byte through the tables, then 1..6 more bits
        q = p >> 3
        w = frombytes(packed[q:q + 3], "big") << (p & 7)    # 17+ bits from p
        i = (w >> 16) & 0xFF
        extra = d_len[i] - 2
        p += 8 + extra
        i = (w >> (16 - extra)) & ((1 << (8 + extra)) - 1)
        back = ((d_code[i >> extra] << 6) | (i & 0x3F)) + 1
        length = c - 253          # c - 255 + THRESHOLD
        if length > stop - j:
            length = stop - j
        src = j - back
        if back >= length:
            out[j:j + length] = out[src:src + length]
        else:                     # overlapping: the last ``back`` bytes repeat
            out[j:j + length] = (out[src:j] * (length // back + 1))[:length]
        j += length
    consumed = (p + 7) // 8 + 1
    if j < stop or consumed > avail:
        raise TruncatedError(f"LZH stream ends before its {size} bytes (needed "
                             f"{consumed} stream bytes, {avail} left)", offset=end, path=path)
    return bytes(out[N:]), consumed


def encode(data: bytes | bytearray | memoryview) -> bytes:
    """Compress ``data`` exactly as the engine's LZHWStream does (one write,
    then flush)."""
    data = bytes(data)
    L = len(data)
    out = bytearray()
    putbuf = 0
    putlen = 0
    freq, son, prnt = _new_tree()
    frombytes = int.from_bytes
    if L == 0:
        return b"\x00"
    # the ring past its first N - F spaces is uninitialised heap memory in the
    # engine (``new``), which the MSVC debug heap fills with 0xCD: modelled so,
    # the encoder gives back the engine's streams of fewer than F bytes too
    text = bytearray(b"\xcd" * (N + F - 1))
    text[:N - F] = b" " * (N - F)
    lson = [NIL] * (N + 1)
    rson = [NIL] * (N + 257)
    dad = [NIL] * (N + 1)
    s = 0
    r = N - F
    ln = min(F, L)
    text[r:r + ln] = data[:ln]
    inp = ln
    state = [0, 0]   # match_length, match_position

    def insert(r: int) -> None:
        cmp = 1
        p = N + 1 + text[r]
        rson[r] = lson[r] = NIL
        mlen = 0
        mpos = state[1]
        key = None          # the 59 bytes after r as one integer, when needed
        t1 = text[r + 1]
        t2 = text[r + 2]
        while True:
            if cmp >= 0:
                if rson[p] != NIL:
                    p = rson[p]
                else:
                    rson[p] = r
                    dad[r] = p
                    state[0] = mlen
                    state[1] = mpos
                    return
            else:
                if lson[p] != NIL:
                    p = lson[p]
                else:
                    lson[p] = r
                    dad[r] = p
                    state[0] = mlen
                    state[1] = mpos
                    return
            # the first differing byte: most nodes differ within two bytes
            # (compared one by one), the rest through one integer XOR
            c = text[p + 1]
            if c != t1:
                cmp = t1 - c
                continue
            c = text[p + 2]
            if c != t2:
                cmp = t2 - c
                continue
            if key is None:
                key = frombytes(text[r + 1:r + F], "big")
            x = key ^ frombytes(text[p + 1:p + F], "big")
            if x:
                i = F - 1 - ((x.bit_length() - 1) >> 3)   # first differing index (1-based)
                cmp = text[r + i] - text[p + i]
            else:
                i = F
                cmp = 0
            if i > THRESHOLD:
                d = ((r - p) & (N - 1)) - 1
                if i > mlen:
                    mpos = d
                    mlen = i
                    if mlen >= F:
                        break
                if i == mlen and d < mpos:
                    mpos = d
        state[0] = mlen
        state[1] = mpos
        dad[r] = dad[p]
        lson[r] = lson[p]
        rson[r] = rson[p]
        dad[lson[p]] = r
        dad[rson[p]] = r
        if rson[dad[p]] == p:
            rson[dad[p]] = r
        else:
            lson[dad[p]] = r
        dad[p] = NIL

    def delete(p: int) -> None:
        if dad[p] == NIL:
            return
        if rson[p] == NIL:
            q = lson[p]
        elif lson[p] == NIL:
            q = rson[p]
        else:
            q = lson[p]
            if rson[q] != NIL:
                while rson[q] != NIL:
                    q = rson[q]
                rson[dad[q]] = lson[q]
                dad[lson[q]] = dad[q]
                lson[q] = lson[p]
                dad[lson[p]] = q
            rson[q] = rson[p]
            dad[rson[p]] = q
        dad[q] = dad[p]
        if rson[dad[p]] == p:
            rson[dad[p]] = q
        else:
            lson[dad[p]] = q
        dad[p] = NIL

    def put(l: int, c: int) -> None:
        nonlocal putbuf, putlen
        putbuf = (putbuf | (c >> putlen)) & 0xFFFF
        putlen += l
        if putlen >= 8:
            out.append(putbuf >> 8)
            putlen -= 8
            if putlen >= 8:
                out.append(putbuf & 0xFF)
                putlen -= 8
                putbuf = (c << (l - putlen)) & 0xFFFF
            else:
                putbuf = (putbuf << 8) & 0xFFFF
        putlen &= 0xFF

    def enc_char(c: int) -> None:
        i = 0
        j = 0
        k = prnt[c + T]
        while True:
            i >>= 1
            if k & 1:
                i += 0x8000
            j += 1
            k = prnt[k]
            if k == R:
                break
        put(j, i)
        # --- update, as in decode
        if freq[R] == MAX_FREQ:
            _reconst(freq, son, prnt)
        k = prnt[c + T]
        while True:
            f = freq[k] + 1
            if f > freq[k + 1]:
                l = k + 2
                while f > freq[l]:
                    l += 1
                l -= 1
                freq[k] = freq[l]
                freq[l] = f
                i = son[k]
                prnt[i] = l
                if i < T:
                    prnt[i + 1] = l
                m = son[l]
                son[l] = i
                prnt[m] = k
                if m < T:
                    prnt[m + 1] = k
                son[k] = m
                k = prnt[l]
            else:
                freq[k] = f
                k = prnt[k]
            if not k:
                break

    for i in range(1, F + 1):
        insert(r - i)
    insert(r)
    while ln:
        mlen = state[0]
        if mlen > ln:
            mlen = ln
        if mlen <= THRESHOLD:
            mlen = 1
            enc_char(text[r])
        else:
            enc_char(255 - THRESHOLD + mlen)
            pos = state[1]
            hi = pos >> 6
            put(P_LEN[hi], P_CODE[hi] << 8)
            put(6, (pos & 0x3F) << 10)
        for _ in range(mlen):
            delete(s)
            if inp < L:
                c = data[inp]
                inp += 1
                text[s] = c
                if s < F - 1:
                    text[s + N] = c
                s = (s + 1) & (N - 1)
                r = (r + 1) & (N - 1)
                insert(r)
            else:
                s = (s + 1) & (N - 1)
                r = (r + 1) & (N - 1)
                ln -= 1
                if ln:
                    insert(r)
    if putlen:
        out.append(putbuf >> 8)
    out.append(0)
    return bytes(out)
