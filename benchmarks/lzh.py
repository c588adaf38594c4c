"""Darkstar LZH: decoding the three maps of each corpus terrain block (``.dtb``
inside the mission's ``.ted``) against the floor of ``zlib.decompress`` of the
same uncompressed bytes, and the encoder on the same maps.

    python benchmarks/lzh.py [--runs 3] [--encode-kb 64] [TED...]

Without files, the ``.ted`` of ``../shared/corpus/tribes/base/missions/``.  CPU
seconds (process_time), the best of ``--runs``.  No packaged C implementation
of this LZHUF variant (F = 60) exists, so zlib (a C inflater) is the floor.
"""
from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from potsherd.containers import read_input  # noqa: E402
from potsherd.formats.darkstar import lzh  # noqa: E402
from potsherd import registry  # noqa: E402
from timing import best  # noqa: E402


def maps(ted: Path) -> list[tuple[bytes, int]]:
    """The (stream, size) of each LZH map of the terrain's first block."""
    name = f"{ted.stem}#0.dtb"
    dtb = read_input(f"{ted}::{name}")
    root = registry.decode(dtb, path=name).root
    return [(bytes(root[k]["stream"]), root[k]["size"]) for k in ("heights", "materials", "lightMap")
            if isinstance(root.get(k), dict) and "stream" in root[k]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--encode-kb", type=int, default=64,
                    help="encode the first N KB of each block's maps (0: all)")
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files] or sorted(
        (HERE.parent.parent / "shared" / "corpus" / "tribes" / "base" / "missions").glob("*.ted"))
    print(f"{'terrain block':28} {'KB out':>7} {'decode s':>9} {'MB/s':>6} {'zlib s':>8} "
          f"{'ratio':>6} {'encode MB/s':>11}")
    for ted in files:
        streams = maps(ted)
        raws = [lzh.decode(s, n)[0] for s, n in streams]
        total = sum(len(r) for r in raws)
        zs = [zlib.compress(r, 6) for r in raws]
        dec = best(lambda: [lzh.decode(s, n) for s, n in streams], args.runs)
        floor = best(lambda: [zlib.decompress(z) for z in zs], max(args.runs, 20))
        part = b"".join(raws)
        part = part[:args.encode_kb * 1024] if args.encode_kb else part
        enc = best(lambda: lzh.encode(part), 1)
        print(f"{ted.stem + '#0.dtb':28} {total / 1024:7.0f} {dec:9.3f} {total / dec / 1e6:6.2f} "
              f"{floor * 1000:6.2f}ms {dec / floor:6.0f}x {len(part) / enc / 1e6:11.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
