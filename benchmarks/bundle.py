"""``potsherd bundle`` against the Library of Congress ``bagit`` library alone.

    python benchmarks/bundle.py                     # the corpus's ko folder, 2 workers
    python benchmarks/bundle.py --tree DIR --jobs 2 --runs 3 --memory

Rows (median of ``--runs`` interleaved runs; both sides use the same number of
worker processes): CPU seconds of the process and its joined worker processes
(the figure a shared, loaded machine moves least), and wall seconds:

* ``bagit``: ``bagit.make_bag`` over a fresh copy of the tree with SHA-256 only
  (the floor of reading and hashing every byte once; the copy is not timed);
* ``copy + bagit``: copying the tree, then ``bagit`` (a package beside
  untouched masters, the least a bundle must do);
* ``bundle --no-access --fast-identify``: the same, identifying by signature
  or extension alone (no decoding): the cost of the packaging itself;
* ``bundle --no-access``: potsherd's package without access copies (the
  masters copied and hashed, every file identified by decoding, the records,
  the manifest);
* ``bundle``: the same with access copies (glTF, PNG, CSV, JSON);
* ``identify only``: the decoding identification costs, in one process, for
  the breakdown (the part of the ratio that is the codecs' decode speed).

``--memory``: the peak memory allocated while bundling N and 10 N small
generated files (in-process, one worker), to show it does not grow with the
file count.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
CORPUS = ROOT.parent / "shared" / "corpus"


def _cpu() -> float:
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _bagit(tree: Path, work: Path, jobs: int) -> tuple[float, float]:
    import bagit
    logging.getLogger("bagit").setLevel(logging.WARNING)
    copy = work / "bagit-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(tree, copy)
    t, c = time.perf_counter(), _cpu()
    bagit.make_bag(str(copy), checksums=["sha256"], processes=jobs)
    dt, dc = time.perf_counter() - t, _cpu() - c
    shutil.rmtree(copy)
    return dc, dt


def _copy_and_bagit(tree: Path, work: Path, jobs: int) -> tuple[float, float]:
    """bagit bags a folder in place (it moves the files into data/): a package
    beside untouched masters needs the copy too."""
    import bagit
    copy = work / "bagit-copy"
    shutil.rmtree(copy, ignore_errors=True)
    t, c = time.perf_counter(), _cpu()
    shutil.copytree(tree, copy)
    bagit.make_bag(str(copy), checksums=["sha256"], processes=jobs)
    dt, dc = time.perf_counter() - t, _cpu() - c
    shutil.rmtree(copy)
    return dc, dt


def _bundle(tree: Path, work: Path, jobs: int, access: bool,
            deep: bool = True) -> tuple[float, float]:
    from potsherd.preserve import bundle
    pkg = work / "pkg"
    shutil.rmtree(pkg, ignore_errors=True)
    t, c = time.perf_counter(), _cpu()
    s = bundle.bundle(str(tree), str(pkg), access=access, workers=jobs, deep=deep)
    dt, dc = time.perf_counter() - t, _cpu() - c
    assert s.failed == 0, s.failures[:3]
    shutil.rmtree(pkg)
    return dc, dt


def _identify(tree: Path) -> tuple[float, float]:
    from potsherd.preserve.identify import identify
    t, c = time.perf_counter(), _cpu()
    for _ in identify([str(tree)], members=False):
        pass
    return _cpu() - c, time.perf_counter() - t


def _memory(n: int, work: Path) -> float:
    """Peak traced memory (MB, tracemalloc: Python and numpy allocations) of a
    fresh process while it bundles ``n`` small files."""
    code = f"""
import os, sys, shutil
sys.path.insert(0, {str(ROOT / 'src')!r})
from potsherd import examples
from potsherd.preserve import bundle
tree = {str(work)!r} + '/mem-tree-{n}'
os.makedirs(tree, exist_ok=True)
examples.write_examples(tree)
data = open(os.path.join(tree, 'cube.n3pmesh'), 'rb').read()
for i in range({n}):
    d = os.path.join(tree, f'd{{i // 500}}')
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, f'c{{i}}.n3pmesh'), 'wb').write(data)
import potsherd.registry as r; r.codecs()
import tracemalloc
tracemalloc.start()
bundle.bundle(tree, tree + '-pkg', access=False, workers=1)
print(tracemalloc.get_traced_memory()[1] / 2**20)
shutil.rmtree(tree); shutil.rmtree(tree + '-pkg')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", default=str(CORPUS / "ko"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--memory", action="store_true")
    p.add_argument("--memory-files", type=int, default=400)
    args = p.parse_args(argv)
    tree = Path(args.tree)
    files = [q for q in tree.rglob("*") if q.is_file()]
    size = sum(q.stat().st_size for q in files)
    print(f"tree {tree}: {len(files)} files, {size / 1e6:.1f} MB; {args.jobs} workers, "
          f"median of {args.runs} runs")
    import bagit  # noqa: F401  - both sides imported before timing
    from potsherd import registry
    registry.codecs()
    rows: dict[str, list[tuple[float, float]]] = {"bagit": [], "copy + bagit": [], "bundle --no-access --fast-identify": [],
                                    "bundle --no-access": [], "bundle": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for _ in range(args.runs):
            rows["bagit"].append(_bagit(tree, work, args.jobs))
            rows["copy + bagit"].append(_copy_and_bagit(tree, work, args.jobs))
            rows["bundle --no-access --fast-identify"].append(
                _bundle(tree, work, args.jobs, False, deep=False))
            rows["bundle --no-access"].append(_bundle(tree, work, args.jobs, False))
            rows["bundle"].append(_bundle(tree, work, args.jobs, True))
        ident = _identify(tree)
        floor = statistics.median(c for c, _ in rows["bagit"])
        wfloor = statistics.median(w for _, w in rows["bagit"])
        print("| row | CPU s | / bagit | wall s | / bagit |\n|---|---|---|---|---|")
        for name, xs in [*rows.items(), ("identify only (1 process, decoding every file)",
                                         [ident])]:
            c = statistics.median(x for x, _ in xs)
            w = statistics.median(y for _, y in xs)
            print(f"| {name} | {c:.2f} | {c / floor:.2f}x | {w:.2f} | {w / wfloor:.2f}x |")
        if args.memory:
            n = args.memory_files
            small, big = _memory(n, work), _memory(10 * n, work)
            print(f"peak traced memory while bundling: {n} files {small:.2f} MB, "
                  f"{10 * n} files {big:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
