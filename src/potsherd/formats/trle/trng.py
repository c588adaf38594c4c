"""TRNG's level encryption ("TR4c"): decrypted on read, re-encrypted on write.

The Next Generation level converter scrambles the first 99 bytes of the
payloads of the first four chunks of a TR4-engine level (found by stepping
over each chunk's stored size, as the game does, even where TR5's layout puts
no chunk) and writes ``c`` as the fourth magic byte.  Per chunk ``k`` (1..4),
the chunk's stored size ``n`` picks one of 16 keys of 99 bytes
(``(n >> k) & 15``) and one of 16 permutations of 50 bytes
(``(n >> (k + 4)) & 15``): bytes 50..98 are XORed with the key's tail, bytes
0..49 XORed with the key's head and then permuted.  The key and permutation
tables are data read from trview's decrypter (``trlevel/Decrypter.cpp``,
chreden/trview), checked against the encrypted/decrypted pair of its tests.
"""
from __future__ import annotations

import base64

import numpy as np

from ...core.errors import FormatError

_KEYS = np.frombuffer(base64.b64decode(
    "OCLpTyDxN2kVE9OQF4TCCa0EvtJSGAvsRzioFI2ql9DfKZKZyPjecL0afNu/iydTVk5nHfoes/LvP1FeNbD71ogvO6At"
    "Q4e6ImQl4WjVz1r+VA8joiRcPpiJ+WXdt6PdMXrjptRKMMDKas3oENx4pKeftypLbwREQI+hr4YCTCjZgIzwfZTYx3K0"
    "MjO44iGrDKUcdPN1rI7olge16gj0LoLK8PcmmoESG7vaOWEtybG0rMR7nL8RlZHgrryTD501K9GZ/c6h5RnDwYODCjRx"
    "+132bcUBxrmb9edXBzxZRn/S10FJd+uOH2wNLIqyfhoDBfwWy6nMYuWe7f8O5F/uhTgi6U8g8TdpFRPTkBeEwgmtBL7S"
    "UhgL7Ec4qBSNqpfQ3ymSmcj43nC9Gnzbv4snU1ZOZx36HrPy7z9RXjWw+9aILzugLUOHuiJkJeFo1c9a/lQPI6IkXD6Y"
    "ifll3bej3TF646bUSjDAymrN6BDceKSnn7cqS28ERECPoa+GAkwo2YCM8H2U2MdytDIzuOIhqwylHHTzdayO6JYHteoI"
    "9C6CyvD3JpqBEhu72jlhLcmxtKzEe5y/EZWR4K68kw+dNSvRmf3OoeUZw8GDgwo0cftd9m3FAca5m/XnVwc8WUZ/0tdB"
    "SXfrjh9sDSyKsn4aAwX8FsupzGLlnu3/DuRf7oU4IulPIPE3aRUT05AXhMIJrQS+0lIYC+xHOKgUjaqX0N8pkpnI+N5w"
    "vRp827+LJ1NWTmcd+h6z8u8/UV41sPvWiC87oC1Dh7oiZCXhaNXPWv5UDyOiJFw+mIn5Zd23o90xeuOm1EowwMpqzegQ"
    "3Hikp5+3KktvBERAj6GvhgJMKNmAjPB9lNjHcrQyM7jiIasMpRx083WsjuiWB7XqCPQugsrw9yaagRIbu9o5YS3JsbSs"
    "xHucvxGVkeCuvJMPnTUr0Zn9zqHlGcPBg4MKNHH7XfZtxQHGuZv151cHPFlGf9LXQUl3644fbA0sirJ+GgMF/BbLqcxi"
    "5Z7t/w7kX+6FOCLpTyDxN2kVE9OQF4TCCa0EvtJSGAvsRzioFI2ql9DfKZKZyPjecL0afNu/iydTVk5nHfoes/LvP1Fe"
    "NbD71ogvO6AtQ4e6ImQl4WjVz1r+VA8joiRcPpiJ+WXdt6PdMXrjptRKMMDKas3oENx4pKeftypLbwS8uAgaKP55xJ9R"
    "+ARp9QxQP+otqqoxW5gjhB6U7GztJQdhDn4uY4BtpvlDaG+eE/iKkzNSsdmlQSosJD3yFTiJDQpZJzUMhhasokkRdkcZ"
    "XZA8Ovr7gavpdNRu5T15PjIUbl/Pf7TQvfdLULnA7mMGl+SEowIq9pJ6fXWNRCFF2l4XZniFXNdm/a+aYseXaq7hjItM"
    "CY78O4EmezZKyY+CZb6wIIwFIg9IWKALEkBwV+c1kfRTNwSfy87G3pVylitrZ7bI1q0pc08Bp7IYpLv/MpnbnVrfTkjR"
    "d8yHmxuc07UQAXHcVi8cVanxWx9Nwag5QuJGYIhU7x0fFzChw+Z8vLgIGij+ecSfUfgEafUMUD/qLaqqMVuYI4QelOxs"
    "7SUHYQ5+LmOAbab5Q2hvnhP4ipMzUrHZpUEqLCQ98hU4iQ0KWSc1DIYWrKJJEXZHGV2QPDr6+4Gr6XTUbuU9eT4yFG5f"
    "z3+00L33S1C5wO5jBpfkhKMCKvaSen11jUQhRdpeF2Z4hVzXZv2vmmLHl2qu4YyLTAmO/DuBJns2SsmPgmW+sCCMBSIP"
    "SFigCxJAcFfnNZH0UzcEn8vOxt6VcpYra2e2yNatKXNPAaeyGKS7/zKZ251a305I0XfMh5sbnNO1EAFx3FYvHFWp8Vsf"
    "TcGoOULiRmCIVO8dHxcwocPmfLy4CBoo/nnEn1H4BGn1DFA/6i2qqjFbmCOEHpTsbO0lB2EOfi5jgG2m+UNob54T+IqT"
    "M1Kx2aVBKiwkPfIVOIkNClknNQyGFqyiSRF2RxldkDw6+vuBq+l01G7lPXk+MhRuX89/tNC990tQucDuYwaX5ISjAir2"
    "knp9dY1EIUXaXhdmeIVc12b9r5pix5dqruGMi0wJjvw7gSZ7NkrJj4JlvrAgjAUiD0hYoAsSQHBX5zWR9FM3BJ/LAAAA"
    "AAAAAAAAAAAAAAAAAA=="), dtype=np.uint8)

_PERMUTATIONS = np.frombuffer(base64.b64decode(
    "ABEHCQYZARgwGgsWCBMVEhssFwojKyEdHikDHAwoJiQnDQ4uBS0iMR8qAhAEFA8vICUSIA8ABw0OEDArCCEoFhcpBiwe"
    "MQodJhgjHy4FJAMTIhUaDAEJJS0qLxQnBAsRAhkcGyYYDAAnLwcQFwgZHQ4aDywtJQsJFQUeKiEkFCgpAwYTAREWIiMC"
    "HzAuEjEgCisEGxwNLQomBRcREyEEKh0YBhIxHiQAGQ4HHCIoEAggHwsbFBUjAQkuGiksDxYrAi8MMA0lJwMbBAorDAIW"
    "EhcHHhEiARgcKgshICMfDywUKCQZCS4QGgANKQgGAyYlFTEnEx0tLw4wBQYXFSgIEgMaJw4rLyMWCgcgLQ8sHx0kECEA"
    "HAEpCwIYBSYlBBEZIiouEwwxGzAJHhQNBiUQFwsSJxUoACEbKgQNJBQwAxkHKQ4ICg8tJissIgwCHS8YHC4FAR4WExoj"
    "CSARMR8qGw8HIQ4UEwwlEQALGR0KFQggBRgeBBwiEi0rJAkoKSwBFw0vJwMmFjAaIy4QMQYfAhsODAkoAQIEKRcTIQgW"
    "FRgKLxkeJB0iKwYmBSAjCxQSMCoHMR8PEBotAyUsAA0cLicRHQALBBASDRQZICwBHiUHBgkaFgMqISMkHw8CDiITJy4t"
    "KQgVMQoRJi8cKCsbBRcwGAwHGAoUBhwJECkmKzAvIxYIEyADGyweJCEiLh0RJwIFGQQAJSgSGg4qDwsBMS0NHxUMFwYl"
    "EBcLEicVKAAhGyoEDSQUMAMZBykOCAoPLSYrLCIMAh0vGBwuBQEeFhMaIwkgETEfKhsPByEOFBMMJREACxkdChUIIAUY"
    "HgQcIhItKyQJKCksARcNLycDJhYwGiMuEDEGHwIbDgwJKAECBCkXEyEIFhUYCi8ZHiQdIisGJgUgIwsUEjAqBzEfDxAa"
    "LQMlLAANHC4nER0ACwQQEg0UGSAsAR4lBwYJGhYDKiEjJB8PAg4iEycuLSkIFTEKESYvHCgrGwUXMBgMBxgKFAYcCRAp"
    "JiswLyMWCBMgAxssHiQhIi4dEScCBRkEACUoEhoOKg8LATEtDR8VDBc="), dtype=np.uint8)

#: the offset of the first chunk's stored size
_FIRST = 14
_REGION = 99


def _regions(buf: bytes | bytearray) -> list[tuple[int, int, int]]:
    """(payload offset, key offset, permutation offset) of the four regions."""
    out = []
    p = _FIRST
    for k in range(1, 5):
        if p + 4 + _REGION > len(buf):
            raise FormatError(f"TRNG encrypted level: region {k} passes the end of the file",
                              offset=p, expected=f">= {p + 4 + _REGION} bytes", found=len(buf))
        n = int.from_bytes(buf[p:p + 4], "little")
        out.append((p + 4, ((n >> k) & 15) * _REGION, ((n >> (k + 4)) & 15) * 50))
        p = p + 8 + n
    return out


def is_encrypted(data: bytes) -> bool:
    return data[:4] == b"TR4c"


def decrypt(data: bytes) -> bytes:
    """The plain level ("TR4\\0") of an encrypted one ("TR4c")."""
    buf = bytearray(data)
    for at, key, perm in _regions(buf):
        region = np.frombuffer(bytes(buf[at:at + _REGION]), dtype=np.uint8).copy()
        region[50:] ^= _KEYS[key + 50:key + _REGION]
        head = np.empty(50, dtype=np.uint8)
        head[_PERMUTATIONS[perm:perm + 50]] = region[:50]
        region[:50] = head ^ _KEYS[key:key + 50]
        buf[at:at + _REGION] = region.tobytes()
    buf[3] = 0
    return bytes(buf)


def encrypt(data: bytes) -> bytes:
    """The encrypted level ("TR4c") of a plain one: :func:`decrypt` undone."""
    buf = bytearray(data)
    for at, key, perm in _regions(buf):
        region = np.frombuffer(bytes(buf[at:at + _REGION]), dtype=np.uint8).copy()
        head = region[:50] ^ _KEYS[key:key + 50]
        region[:50] = head[_PERMUTATIONS[perm:perm + 50]]
        region[50:] ^= _KEYS[key + 50:key + _REGION]
        buf[at:at + _REGION] = region.tobytes()
    buf[3] = ord("c")
    return bytes(buf)
