"""JSON text identity check across code changes.

``record DIR``: decode every file under the corpus folders and write the
sha256 of its JSON text (``doc.dumps(form)`` and the CLI's streamed
``write_json``, wire and readable) to ``DIR/digests.json``.  ``compare DIR``:
the same with the current code, printing every file whose text differs.  Run
``record`` with the tree before a change (``PYTHONPATH`` at its ``src``) and
``compare`` after: JSON speed work must not change one byte of the text.
``values [CORPUS...]``: check that every file's text (``dumps``, compact and
indented, and ``write_json``) reads back as exactly its ``to_json`` value
(NaN equal to NaN): what a change of the text's layout must keep.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import potsherd
from potsherd import api
from potsherd.core.errors import FormatError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPORA = [ROOT.parent / "shared" / "corpus" / f for f in ("ko", "dts")]


def _documents(corpora: list[Path]):
    """(corpus, path, document) of every file potsherd reads under the corpora."""
    for corpus in corpora:
        if not corpus.is_dir():
            continue
        for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
            try:
                yield corpus, path, potsherd.read(path)
            except (FormatError, OSError, ValueError):
                continue


def _texts(doc, form: str) -> dict[str, str]:
    """The texts a form is written as: ``dumps`` indented and compact, and the
    streamed ``write_json``."""
    buf = io.StringIO()
    api.write_json(doc, form, buf)
    return {"dumps": doc.dumps(form), "compact": doc.dumps(form, None), "write_json": buf.getvalue()}


def digests(corpora: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for corpus, path, doc in _documents(corpora):
        key = str(path.relative_to(corpus.parent))
        for form in ("wire", "readable"):
            for how, text in _texts(doc, form).items():
                if how != "compact":
                    out[f"{key}|{form}|{how}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def _reads_back(key: str, corpora: list[Path]) -> bool:
    """Whether the current text of a changed entry still reads back as its
    document's value (a change of layout rather than of values)."""
    name, form, how = key.split("|")
    for corpus in corpora:
        path = corpus.parent / name
        if path.is_file():
            doc = potsherd.read(path)
            return _same(json.loads(_texts(doc, form)[how]), doc.to_json(form))
    return False


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def values(corpora: list[Path]) -> int:
    """Every text reads back as its document's ``to_json`` value."""
    bad = checked = 0
    for _, path, doc in _documents(corpora):
        for form in ("wire", "readable"):
            want = doc.to_json(form)
            for how, text in _texts(doc, form).items():
                checked += 1
                if not _same(json.loads(text), want):
                    bad += 1
                    print("DIFFERS", path, form, how)
    print(f"{checked} texts checked, {bad} differ")
    return 1 if bad or not checked else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["values"]:
        return values([Path(p) for p in argv[1:]] or DEFAULT_CORPORA)
    if len(argv) < 2 or argv[0] not in ("record", "compare"):
        print(__doc__)
        return 2
    where = Path(argv[1])
    corpora = [Path(p) for p in argv[2:]] or DEFAULT_CORPORA
    now = digests(corpora)
    if argv[0] == "record":
        where.mkdir(parents=True, exist_ok=True)
        (where / "digests.json").write_text(json.dumps(now, indent=1))
        print(f"recorded {len(now)} texts")
        return 0
    before = json.loads((where / "digests.json").read_text())
    differ = sorted(k for k in before if now.get(k) != before[k])
    missing = sorted(set(now) ^ set(before))
    for k in differ:
        print("DIFFERS", k, "(the same values)" if _reads_back(k, corpora) else "(other values)")
    for k in missing:
        print("ONLY ONE SIDE", k)
    print(f"{len(before)} texts before, {len(now)} now, {len(differ)} differ")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
