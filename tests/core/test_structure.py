"""The module structure of src/potsherd: imports go one way (no two modules import
each other, at top level or inside functions), no library module imports the command
line, no module is over 800 lines, and tests do not edit sys.path."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
PACKAGE = SRC / "potsherd"
MAX_LINES = 800
SIZE_EXEMPT: set[str] = set()
TWO_WAY_EXEMPT: set = set()


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every potsherd module ``name`` imports, anywhere in the file; ``from X import y``
    counts ``X.y`` when that is a module, else ``X``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def is_package_parent(a: str, b: str) -> bool:
    """A package importing its own submodule (``formats.ko`` -> ``formats.ko.codecs``)
    while the submodule imports a sibling through the package's relative name is how
    Python loads packages; only the package ``__init__`` may be such a parent."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def two_way_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in graph.items() for b in deps
                  if a < b and a in graph.get(b, ()) and not is_package_parent(a, b))


def test_the_import_parser_sees_function_level_and_relative_imports(tmp_path):
    # negative control: a two-way pair inside functions is found
    pkg = tmp_path / "potsherd"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    known = {"potsherd", "potsherd.a", "potsherd.b"}
    graph = {"potsherd.a": imports_of("potsherd.a", pkg / "a.py", known),
             "potsherd.b": imports_of("potsherd.b", pkg / "b.py", known)}
    assert graph == {"potsherd.a": {"potsherd.b"}, "potsherd.b": {"potsherd.a"}}
    assert two_way_pairs(graph) == [("potsherd.a", "potsherd.b")]


def test_no_two_modules_import_each_other():
    assert [p for p in two_way_pairs(import_graph()) if p not in TWO_WAY_EXEMPT] == []


def test_no_library_module_imports_the_command_line():
    graph = import_graph()
    cli_modules = {n for n in graph if n == "potsherd.cli" or n.endswith(".cli")}
    allowed = {"potsherd.__main__"} | cli_modules
    offenders = sorted((n, "potsherd.cli") for n, deps in graph.items()
                       if "potsherd.cli" in deps and n not in allowed)
    assert offenders == []


def test_no_module_over_800_lines():
    long = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in modules().items()}
    over = {n: k for n, k in long.items() if k > MAX_LINES and n not in SIZE_EXEMPT}
    assert over == {}


def test_tests_do_not_edit_sys_path():
    offenders = []
    for p in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and \
                    isinstance(node.value, ast.Name) and node.value.id == "sys":
                offenders.append(f"{p.relative_to(TESTS)}:{node.lineno}")
    assert offenders == []


def test_every_error_class_is_exported_from_the_package():
    import inspect

    import potsherd
    from potsherd.core import errors as core_errors
    from potsherd import errors
    for mod in (core_errors, errors):
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, Exception) and \
                    obj.__module__ == mod.__name__:
                assert getattr(potsherd, name) is obj, name
                assert name in potsherd.__all__, name
    assert issubclass(potsherd.InternalEncodeError, potsherd.EncodeError)
    assert issubclass(potsherd.ValueFormatError, potsherd.FormatError)


def test_no_source_line_points_outside_the_repository():
    """Format facts are cited from docs/formats/, never from the notes beside the checkout."""
    import re
    outside = re.compile(r"\.\./shared|shared/(notes|specs|corpus)|notes/\w+\.md|note sections? \d")
    hits = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".json", ".layout", ".js", ".html") or "__pycache__" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if outside.search(line):
                hits.append(f"{path.relative_to(PACKAGE)}:{n}")
    assert hits == []
    assert outside.search("see ../shared/notes/knight-online.md") is not None   # control

