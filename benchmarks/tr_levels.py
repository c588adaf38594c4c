"""Tomb Raider levels: decode + encode of each corpus level against the floor of
inflating its zlib chunks with ``zlib`` alone, and peak traced memory.

    python benchmarks/tr_levels.py [--runs 5] [FILES...]

Without files, the levels of ``../shared/corpus/trlevels/``.  CPU seconds
(process_time), the best of ``--runs``; the ratio goal is <= 5x, the memory
goal <= 10x the file size.
"""
from __future__ import annotations

import argparse
import struct
import sys
import tracemalloc
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from potsherd import registry  # noqa: E402
from timing import best  # noqa: E402


def chunks(data: bytes, engine: int) -> list[bytes]:
    """The zlib streams of a TR4/TR5 level (none for TR1-TR3)."""
    if engine < 4:
        return []
    out, p = [], 10
    for _ in range(4 if engine == 4 else 3):
        _, n = struct.unpack_from("<II", data, p)
        out.append(data[p + 8:p + 8 + n])
        p += 8 + n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files] or sorted(
        p for p in (HERE.parent.parent / "shared" / "corpus" / "trlevels").glob("*")
        if p.suffix.lower() in {".phd", ".tr2", ".tr4", ".trc"})
    print(f"{'file':24} {'MB':>6} {'dec+enc s':>10} {'zlib floor s':>12} {'ratio':>6} {'peak x':>7}")
    for path in files:
        data = path.read_bytes()
        codec = registry.detect(data, str(path))
        plain = data
        if data[:4] == b"TR4c":
            from potsherd.formats.trle import trng
            plain = trng.decrypt(data)
        streams = chunks(plain, codec.engine)

        def ours():
            assert codec.encode(codec.decode(data)) == data

        def floor():
            for s in streams:
                zlib.decompress(s)

        ours()
        t_ours, t_floor = best(ours, args.runs), best(floor, args.runs)
        tracemalloc.start()
        codec.encode(codec.decode(data))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        ratio = f"{t_ours / t_floor:6.1f}" if streams else "     -"
        print(f"{path.name:24} {len(data) / 1e6:6.2f} {t_ours:10.3f} {t_floor:12.3f} {ratio} "
              f"{peak / len(data):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
