"""ASCII FBX: the same node tree, with the source spelling kept.

Byte-exact strategy (docs/formats/fbx.md, ASCII): every value keeps its
lexeme (number spelling, string content with its ``&quot;`` escapes, bare
words), arrays keep the source text of their ``a:`` list, and each node keeps
the trivia between its tokens (``fmt``) *only where it differs* from what the
canonical writer would produce for the file's newline and indent style.  A
node without ``fmt`` (edited, converted, built from scratch) is written
canonically, SDK style.

Property kinds: ``("s", content)`` string (text between the quotes, escapes
not decoded), ``("n", lexeme)`` number, ``("w", word)`` bare word (``T``,
``Y``: binary ``C`` chars), ``("*", AsciiArray)`` a 7.x ``*N { a: ... }`` array.
Text is handled as latin-1 so every byte maps to one character.
"""
from __future__ import annotations

import re

import numpy as np

from ...core.errors import FormatError, LimitError, TruncatedError, ValueFormatError
from ...core.limits import DEFAULT_LIMITS, Limits
from .model import FbxNode

_TRIVIA = re.compile(r"(?:[ \t\r\n,]+|;[^\n]*)*")
_TOKEN = re.compile(r'''
   (?P<key>(?:[^\s,;:"{}]+|"[^"\n]*"):)
 | (?P<str>"[^"]*")
 | (?P<lb>\{)
 | (?P<rb>\})
 | (?P<word>[^\s,;:"{}]+)
''', re.X)
#: take a line's plain values with one regular expression (off: token by token, the
#: same result; the tests compare the two)
FAST_VALUES = True
#: a run of plain values on one line (no array, block, key or comment): each a string or
#: a word ending at a space, a comma or the line's end (a word before ':' is a node name)
_SIMPLE_RUN = re.compile(r'(?:[ \t,]*(?:"[^"\n]*"|[^\s,;:"{}*][^\s,;:"{}]*)(?=[\s,]|\Z))*')
_SIMPLE_ITEM = re.compile(r'([ \t,]*)("[^"\n]*"|[^\s,;:"{}]+)')
_STAR = re.compile(r"\*\d+\Z")
_FLOATY = re.compile(r"[.eEnN]")


class AsciiArray:
    """A ``*N { a: ... }`` array: count lexeme, source text, lazy values."""

    __slots__ = ("count", "text", "_values", "_lexemes")

    def __init__(self, count: str | None = None, text: str | None = None,
                 values: np.ndarray | list | None = None) -> None:
        self.count = count
        self.text = text
        self._lexemes: list[str] | None = None
        self._values = None if values is None else np.asarray(values)

    def lexemes(self) -> list[str]:
        if self._lexemes is None:
            if self.text is None:
                self._lexemes = format_numbers(np.asarray(self._values))
            else:
                parts = self.text.replace("\r", "").replace("\n", "").split(",")
                lex = [p.strip() for p in parts]
                if lex == [""]:
                    lex = []
                self._lexemes = lex
        return self._lexemes

    @property
    def values(self) -> np.ndarray:
        """Numbers as int64 when every lexeme is an integer, else float64."""
        if self._values is None:
            if self.text is not None:  # numpy parses the comma-separated parts (spaces ok)
                parts = self.text.split(",") if self.text.strip() else []
                floaty = _FLOATY.search(self.text) is not None
            else:
                parts = self.lexemes()
                floaty = any(_FLOATY.search(x) for x in parts)
            try:
                self._values = np.array(parts, dtype=np.float64 if floaty else np.int64)
            except (ValueError, OverflowError):
                raise ValueFormatError("array holds a value that is not a number") from None
        return self._values

    @values.setter
    def values(self, v) -> None:
        self._values = np.asarray(v)
        self.text = None
        self._lexemes = None
        self.count = None

    def __len__(self) -> int:
        return len(self.lexemes())

    def __repr__(self) -> str:
        return f"AsciiArray(count={self.count!r}, {len(self)} values)"


def format_numbers(vals: np.ndarray) -> list[str]:
    """Shortest round-trip spellings (float32 precision for 4-byte floats),
    integral floats without ``.0`` as the SDK writes them; formatted by numpy."""
    if vals.dtype.kind in "iub":
        return vals.astype(np.int64).astype(str).tolist()
    text = vals.astype(np.float32 if vals.dtype.itemsize == 4 else np.float64).astype(str)
    integral = np.char.endswith(text, ".0")
    if integral.any():
        text[integral] = np.char.rstrip(np.char.rstrip(text[integral], "0"), ".")
    return text.tolist()


def sniff_ascii(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"; FBX") or head.startswith(b";FBX"):
        return True
    return b"FBXHeaderExtension:" in head and not data.startswith(b"Kaydara")


def detect_version(text: str, root: FbxNode) -> int | None:
    m = re.match(r"\s*;\s*FBX (\d+)\.(\d+)\.(\d+)", text)
    if m:
        return int(m.group(1)) * 1000 + int(m.group(2)) * 100 + int(m.group(3)) * 10
    hdr = root.find(b"FBXHeaderExtension")
    v = hdr.find(b"FBXVersion") if hdr else None
    if v is not None and v.props and v.props[0][0] == "n":
        try:
            return int(v.props[0][1])
        except ValueError:
            return None
    return None


# ----------------------------------------------------------------------------
# parser

def decode_ascii(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[FbxNode, dict]:
    text = data.decode("latin-1")
    bom = ""
    pos = 0
    if text.startswith("\xef\xbb\xbf"):
        bom = text[:3]
        pos = 3
    root = FbxNode(b"", [], [])
    stack = [root]
    n = len(text)
    trivia = _TRIVIA.match
    token = _TOKEN.match
    simple_run = _SIMPLE_RUN.match
    simple_item = _SIMPLE_ITEM.findall
    number = _NUM.match
    while True:
        g_end = trivia(text, pos).end()
        gap = text[pos:g_end]
        if g_end >= n:
            if len(stack) > 1:
                raise TruncatedError("input ends inside a node block", offset=len(data),
                                     path=_apath(stack))
            root.fmt = [gap]
            break
        m = token(text, g_end)
        if m is None:  # a lone ':' or an unterminated '"'
            raise FormatError(f"unexpected {text[g_end]!r}", offset=g_end, path=_apath(stack),
                              expected="a node name or '}'")
        kind = m.lastgroup
        if kind == "rb":
            if len(stack) == 1:
                raise FormatError("'}' without an open block", offset=g_end)
            node = stack.pop()
            node.fmt.append(gap)  # type: ignore[union-attr]
            pos = m.end()  # type: ignore[union-attr]
            continue
        if kind != "key":
            raise FormatError(f"expected a node name, found {m.group()[:30]!r}", offset=g_end,  # type: ignore
                              path=_apath(stack))
        props: list = []
        fmt = [gap]
        node = FbxNode(m.group()[:-1].encode("latin-1"), props)  # type: ignore[union-attr]
        node.fmt = fmt
        stack[-1].children.append(node)  # type: ignore[union-attr]
        pos = m.end()  # type: ignore[union-attr]
        # values: a line's plain ones (strings, numbers, words) at once, then one by one
        while True:
            eol = text.find("\n", pos)
            run = simple_run(text, pos, n if eol < 0 else eol) if FAST_VALUES else None
            if run is not None and run.end() > pos:
                items = simple_item(text, pos, run.end())
                fmt += [g for g, _ in items]
                props += [("s", v[1:-1]) if v[0] == '"' else ("n" if number(v) else "w", v)
                          for _, v in items]
                pos = run.end()
            v_start = trivia(text, pos).end()
            g = text[pos:v_start]
            if v_start >= n:
                break
            vm = token(text, v_start)
            if vm is None:  # a lone ':' or an unterminated '"'
                raise FormatError(f"unexpected {text[v_start]!r}", offset=v_start,
                                  path=_apath(stack), expected="a value, '{' or a node name")
            vk = vm.lastgroup
            if vk == "str":
                props.append(("s", vm.group()[1:-1]))  # type: ignore[union-attr]
            elif vk == "word":
                w = vm.group()  # type: ignore[union-attr]
                arr_end = _STAR.match(w) and _try_array(text, vm.end(), node, g, w)  # type: ignore
                if arr_end:
                    pos = arr_end
                    break
                props.append(("n" if number(w) else "w", w))
            elif vk == "lb":
                fmt.append(g)
                node.children = []
                if len(stack) > limits.max_depth:
                    raise LimitError(f"nodes nested deeper than {limits.max_depth}",
                                     offset=v_start, path=_apath(stack), found=len(stack))
                stack.append(node)
                pos = vm.end()  # type: ignore[union-attr]
                break
            else:
                break
            fmt.append(g)
            pos = vm.end()  # type: ignore[union-attr]
    params = {"version": detect_version(text[len(bom):], root)}
    if bom:
        params["bom"] = True
    nl, ind = _detect_style(text, root)
    params["newline"] = nl
    params["indent"] = ind
    _compress_fmt(root, nl, ind, params["version"])
    return root, params


def _try_array(text: str, pos: int, node: FbxNode, g1: str, star: str) -> int | None:
    """Parse ``{ a: ... }`` after ``*N``; None when the block is something else."""
    gb_end = _TRIVIA.match(text, pos).end()  # type: ignore[union-attr]
    if not text.startswith("{", gb_end):
        return None
    ga_end = _TRIVIA.match(text, gb_end + 1).end()  # type: ignore[union-attr]
    if not text.startswith("a:", ga_end):
        return None
    close = text.find("}", ga_end + 2)
    if close < 0:
        raise TruncatedError("input ends inside an array", offset=len(text))
    body = text[ga_end + 2:close]
    if any(c in body for c in '";{:'):
        return None
    node.props.append(("*", AsciiArray(star[1:], body)))
    node.fmt += [g1, text[pos:gb_end], text[gb_end + 1:ga_end]]  # type: ignore[operator]
    return close + 1


_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z|[-+]?(?:1\.#\w+|inf|nan)\Z", re.I)


def _is_number(w: str) -> bool:
    return bool(_NUM.match(w))


def _apath(stack: list) -> str:
    return "/" + "/".join(n.name.decode("latin-1") for n in stack[1:])


def _detect_style(text: str, root: FbxNode) -> tuple[str, str]:
    nl = "\r\n" if "\r\n" in text[:4096] else "\n"
    ind = "\t"
    for top in root.children or ():
        if top.children:
            g = top.children[0].fmt[0] if top.children[0].fmt else ""
            tail = g.rsplit("\n", 1)[-1]
            if tail and tail.strip(" \t") == "":
                ind = tail
            break
    return nl, ind


# ----------------------------------------------------------------------------
# canonical layout

def canonical_fmt(node: FbxNode, depth: int, nl: str, ind: str) -> list[str]:
    g = [nl + ind * depth]
    props = node.props
    if props:
        g.append(" ")
        g += [", " if k == "s" else "," for k, _ in props[1:]]
    if props and props[-1][0] == "*":
        g += [" ", nl + ind * (depth + 1)]
    elif node.children is not None:
        g += ["  " if not props else " ", nl + ind * depth]
    return g


def _compress_fmt(root: FbxNode, nl: str, ind: str, version: int | None) -> None:
    """Drop the layout of nodes the canonical writer reproduces exactly."""
    if root.fmt == [nl]:
        root.fmt = None
    first = root.children[0] if root.children else None
    stack = [(c, 0) for c in root.children or ()]
    while stack:
        node, depth = stack.pop()
        canon = canonical_fmt(node, depth, nl, ind)
        if node is first:
            canon[0] = (header_comment(version, nl) if version else "") + canon[0]
        if node.fmt == canon:
            arr = node.props[-1][1] if node.props and node.props[-1][0] == "*" else None
            if arr is None or _canonical_array_layout(arr.text, depth, nl, ind):
                node.fmt = None
        for c in node.children or ():
            stack.append((c, depth + 1))


_SPACE = re.compile(r"\s")


def _canonical_array_layout(text: str | None, depth: int, nl: str, ind: str) -> bool:
    """Is ``text`` what the canonical writer would print for its own lexemes?"""
    if text is None:
        return True
    tail = nl + ind * depth
    return (len(text) > len(tail) and text[0] == " " and text.endswith(tail)
            and _SPACE.search(text, 1, len(text) - len(tail)) is None)


def _canonical_array_text(arr: AsciiArray, depth: int, nl: str, ind: str) -> str:
    return " " + ",".join(arr.lexemes()) + nl + ind * depth


def header_comment(version: int, nl: str) -> str:
    v = f"{version // 1000}.{version % 1000 // 100}.{version % 100 // 10}"
    return f"; FBX {v} project file{nl}; {'-' * 52}{nl}"


# ----------------------------------------------------------------------------
# writer

def encode_ascii(root: FbxNode, params: dict, canonical: bool = False) -> bytes:
    nl = params.get("newline", "\n")
    ind = params.get("indent", "\t")
    out: list[str] = []
    if params.get("bom"):
        out.append("\xef\xbb\xbf")
    tops = root.children or []
    if (canonical or tops and tops[0].fmt is None) and params.get("version"):
        out.append(header_comment(int(params["version"]), nl))
    stack: list = [(root, -1, iter(tops), None)]
    while stack:
        node, depth, it, fmt = stack[-1]
        child = next(it, None)
        if child is None:
            stack.pop()
            if node is not root:
                out.append(fmt[-1])
                out.append("}")
            continue
        d = depth + 1
        f = child.fmt if (child.fmt is not None and not canonical) else \
            canonical_fmt(child, d, nl, ind)
        name = child.name.decode("latin-1")
        out.append(f[0])
        out.append(name)
        out.append(":")
        props = child.props
        for i, (k, v) in enumerate(props):
            out.append(f[i + 1])
            if k == "s":
                out.append('"' + v + '"')
            elif k == "*":
                count = v.count if (v.count is not None and not canonical) else str(len(v))
                out.append("*" + count)
                text = v.text if (v.text is not None and not canonical) else \
                    _canonical_array_text(v, d, nl, ind)
                out.append(f[i + 2])
                out.append("{")
                out.append(f[i + 3])
                out.append("a:")
                out.append(text)
                out.append("}")
            else:
                out.append(v)
        if child.children is not None:
            out.append(f[len(props) + 1])
            out.append("{")
            stack.append((child, d, iter(child.children), f))
    tail = root.fmt[0] if (root.fmt is not None and not canonical) else nl
    out.append(tail)
    return "".join(out).encode("latin-1")


# ----------------------------------------------------------------------------
# string escapes (for conversion)

def unescape(content: str) -> bytes:
    s = content.replace("&quot;", '"').replace("&cr;", "\r").replace("&lf;", "\n")
    return s.encode("latin-1")


def escape(value: bytes) -> str:
    s = value.decode("latin-1")
    return s.replace('"', "&quot;").replace("\r", "&cr;").replace("\n", "&lf;")
