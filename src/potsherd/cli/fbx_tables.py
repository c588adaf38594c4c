"""``python -m potsherd.cli.fbx_tables OUT.json FILES_OR_DIRS... [--facts
node_signatures.json] [--p-facts p_datatypes.json]``: regenerate the FBX
property signature table (:mod:`potsherd.formats.fbx.tables`) from real
binary files, for developers."""
from __future__ import annotations

import json
import os
import sys

from ..api import read_document
from ..core.fileio import atomic_write   # a half-written table would break every import
from ..formats.fbx.binary import MAGIC
from ..formats.fbx.tables import build_table


def main(argv: list[str]) -> int:
    facts = p_facts = None
    files: list[str] = []
    args = iter(argv[1:])
    out = argv[0]
    for a in args:
        if a == "--facts":
            with open(next(args), encoding="utf-8") as f:
                facts = json.load(f)
        elif a == "--p-facts":
            with open(next(args), encoding="utf-8") as f:
                p_facts = json.load(f)
        elif os.path.isdir(a):
            files += [os.path.join(a, n) for n in sorted(os.listdir(a))
                      if os.path.isfile(os.path.join(a, n))]
        else:
            files.append(a)
    trees = []
    for p in files:
        with open(p, "rb") as f:
            data = f.read()
        if data.startswith(MAGIC):
            trees.append(read_document(data, format="fbx").root)
    table = build_table(trees, facts, p_facts)
    atomic_write(out, (json.dumps(table, indent=0, sort_keys=False) + "\n").encode("utf-8"))
    print(f"{out}: {len(table['nodes'])} node paths from {len(trees)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
