"""potsherd benchmark suite: ``python benchmarks/run.py`` (see --help).

For each family (codecs discovered through the registry, corpus files from
``../shared/corpus`` detected like the CLI does; generated files when a
family has no corpus) it measures decode, encode, decode+encode round trip,
JSON dump and load (wire form) and glTF export (codecs with ``to_scene``),
in MB/s and files/s, each the median of several runs, plus peak memory while
decoding the largest file of each format.  Next to the engine, in the same
run and interleaved with it, it measures baselines:

* hand-written ``struct``/``numpy.frombuffer`` decoders (``handwritten.py``)
  for n3pmesh, n3cskins (array-heavy) and uif (branchy): the practical limit;
* Construct definitions of the same records (``construct_baseline.py``);
* ``ufbx`` (native C) for binary FBX;
* the engine's own reference interpreter (the fast path switched off).

Times are CPU time of this process (``time.process_time``): the machine is
shared, and CPU time is what a decode costs regardless of other load.  The
table is printed and everything is written as JSON (``--json``).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# (process CPU time counts every thread: an idle OpenBLAS pool thread spinning
# after a numpy call added about a quarter to small figures; the CLI's batch
# conversion sets the same)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import potsherd  # noqa: E402
from potsherd import registry  # noqa: E402
from potsherd.core import fastpath, jsontext  # noqa: E402
from potsherd.core.errors import FormatError  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus"
MB = 1e6

# ----------------------------------------------------------------------------
# inputs


class Group:
    """The files of one format (codec) that decode."""

    def __init__(self, codec: Any, source: str) -> None:
        self.codec = codec
        self.source = source            # "corpus" or "generated"
        self.names: list[str] = []
        self.datas: list[bytes] = []
        self.docs: list[Any] = []
        self.failed: list[str] = []

    @property
    def size(self) -> int:
        return sum(map(len, self.datas))


def discover(families: set[str] | None) -> dict[str, dict[str, Group]]:
    """family -> codec name -> Group, from the corpus (detected per file)."""
    out: dict[str, dict[str, Group]] = {}
    if not CORPUS.is_dir():
        return out
    for p in sorted(CORPUS.rglob("*")):
        if not p.is_file() or not registry.known_extension(str(p)):
            continue
        data = p.read_bytes()
        try:
            codec = registry.detect(data, str(p))
        except FormatError:
            continue
        if families and codec.family not in families:
            continue
        g = out.setdefault(codec.family, {}).setdefault(codec.name, Group(codec, "corpus"))
        try:
            doc = registry.decode(data, format=codec.name, path=str(p))
        except FormatError as e:
            g.failed.append(f"{p.relative_to(CORPUS)}: {e}")
            continue
        g.names.append(str(p.relative_to(CORPUS)))
        g.datas.append(data)
        g.docs.append(doc)
    return out


def generated_groups() -> dict[str, Group]:
    """Large generated files (one per format) made by the codecs' encoders."""
    from generate import GENERATORS
    out = {}
    for name, make in GENERATORS.items():
        try:
            codec = registry.get_codec(name)
        except FormatError:
            continue
        data = make()
        g = Group(codec, "generated")
        g.names.append(f"generated.{name}")
        g.datas.append(data)
        g.docs.append(codec.decode(data))
        out[name] = g
    return out


# ----------------------------------------------------------------------------
# timing


def cpu_time(fn: Callable[[], Any]) -> float:
    """CPU seconds of one call; the garbage collector runs normally."""
    gc.collect()
    t = time.process_time()
    fn()
    return time.process_time() - t


#: shortest figure: a call that takes less is repeated within one figure
#: (reading the process CPU clock after a collection costs tens of microseconds,
#: as much as a pass over three small files)
MIN_FIGURE = 0.02


def medians(contenders: dict[str, Callable[[], Any]], runs: int) -> dict[str, float]:
    """Interleaved runs (each contender once per round, so load changes hit all
    alike); returns the median CPU time of one call of each (calls shorter
    than :data:`MIN_FIGURE` are repeated within a figure and divided)."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    slowest = 0.0
    repeat: dict[str, int] = {}
    for k, fn in contenders.items():
        t = cpu_time(fn)  # warm-up (compiles the layout, fills caches)
        if t < MIN_FIGURE:
            t = cpu_time(fn)  # (the steady cost, for the repeat count)
        slowest = max(slowest, t)
        repeat[k] = max(1, min(10_000, int(MIN_FIGURE / max(t, 1e-6)) + 1)) if t < MIN_FIGURE else 1
    if slowest > 2.0:
        runs = min(runs, 3)  # long figures: 3 rounds are enough for a stable median
    for _ in range(runs):
        for k, fn in contenders.items():
            n = repeat[k]
            if n == 1:
                times[k].append(cpu_time(fn))
            else:
                times[k].append(cpu_time(lambda fn=fn, n=n: [fn() for _ in range(n)]) / n)
    return {k: statistics.median(v) for k, v in times.items()}


def _gc_like_engine(fn: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """Baselines get the engine's collector policy: the library leaves the collector
    alone (see potsherd.core.gcpolicy), so baselines run as they are."""
    return fn


# ----------------------------------------------------------------------------
# per-format operations


def scene_bytes(doc: Any) -> bytes:
    from potsherd.export.gltf import document_scene, glb_bytes, scene_to_gltf
    gl, b = scene_to_gltf(document_scene(doc), True)
    return glb_bytes(gl, b)


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def measure_group(g: Group, runs: int) -> dict:
    codec = g.codec
    progress(f"{codec.family}/{codec.name}: {len(g.datas)} files, {g.size / MB:.2f} MB")
    datas, docs = g.datas, g.docs
    wire = [d.dumps("wire") for d in docs]

    def decode():
        for d in datas:
            codec.decode(d)

    def encode():
        for d in docs:
            codec.encode(d)

    def roundtrip():
        for d in datas:
            codec.encode(codec.decode(d))

    def dump():  # (what `potsherd dump` and Document.dumps write: core.jsontext)
        for d in docs:
            d.dumps("wire")

    def load():  # (what `potsherd build` reads: core.jsontext.loads)
        for s in wire:
            codec.from_json(jsontext.loads(s))

    ops = {"decode": decode, "encode": encode, "roundtrip": roundtrip, "json_dump": dump,
           "json_load": load}
    gltf_docs = []
    gsize = 0
    if getattr(codec, "to_scene", None) is not None:
        for d, name, data in zip(docs, g.names, datas):
            d.source = str(CORPUS / name) if g.source == "corpus" else None
            try:
                scene_bytes(d)
                gltf_docs.append(d)
                gsize += len(data)
            except FormatError:
                pass
        if gltf_docs:
            ops["gltf"] = lambda: [scene_bytes(d) for d in gltf_docs]
    t = medians(ops, runs)
    size = g.size
    out = {"files": len(datas), "bytes": size, "failed": len(g.failed), "source": g.source}
    for op, sec in t.items():
        n, b = (len(gltf_docs), gsize) if op == "gltf" else (len(datas), size)
        out[op] = {"seconds": sec, "MB_s": b / MB / sec if sec > 0 else None,
                   "files_s": n / sec if sec > 0 else None, "files": n}
    return out


# ----------------------------------------------------------------------------
# baselines


def baseline_records(groups: dict[str, dict[str, Group]], gen: dict[str, Group], runs: int) -> list[dict]:
    from construct_baseline import ConstructLayout
    from handwritten import DECODERS
    ko = registry.get_codec("n3pmesh") if "ko" in {c.family for c in registry.codecs()} else None
    if ko is None:
        return []
    rows_text = ko.layout.rows
    clayout = ConstructLayout(rows_text)
    out = []
    for name, hw in DECODERS.items():
        corpus_group = groups.get("ko", {}).get(name)
        for g in (corpus_group, gen.get(name)):
            if g is None or not g.datas or (g is gen.get(name) and g is corpus_group):
                continue
            codec = g.codec
            datas = g.datas
            params = [{k: v for k, v in d.params.items() if k != "opaque"} for d in g.docs]
            hwr = _gc_like_engine(hw)

            def engine():
                for d in datas:
                    codec.decode(d)

            def reference():
                with fastpath.reference_only():
                    for d in datas:
                        codec.decode(d)

            def handwritten():
                for d in datas:
                    hwr(d)

            def construct():
                for d, p in zip(datas, params):
                    clayout.parse(codec.root, d, **p)

            contenders = {"engine": engine, "handwritten": handwritten, "reference": reference}
            if g.source == "generated":
                t = medians(contenders, runs)
                # Construct is slow: fewer rounds on big inputs (still a median)
                t.update(medians({"construct": construct}, 3))
            else:
                t = medians({**contenders, "construct": construct}, runs)
            size = g.size
            row = {"format": name, "source": g.source, "files": len(datas), "bytes": size}
            for k, sec in t.items():
                row[k] = {"seconds": sec, "MB_s": size / MB / sec}
            row["engine_vs_handwritten"] = t["engine"] / t["handwritten"]
            row["construct_vs_engine"] = t["construct"] / t["engine"]
            row["reference_vs_engine"] = t["reference"] / t["engine"]
            out.append(row)
    return out


def fbx_vs_ufbx(groups: dict[str, dict[str, Group]], runs: int) -> dict | None:
    g = groups.get("fbx", {}).get("fbx")
    if g is None or not g.datas:
        return None
    try:
        import ufbx
    except ImportError:
        return {"skipped": "ufbx is not installed (pip install 'potsherd[bench]')"}
    datas = []
    for d in g.datas:
        try:
            ufbx.load_memory(d)
            datas.append(d)
        except Exception:  # noqa: BLE001 - files ufbx refuses are left out of both sides
            pass
    codec = g.codec

    def potsherd_decode():
        for d in datas:
            codec.decode(d)

    def ufbx_load():
        for d in datas:
            ufbx.load_memory(d)

    t = medians({"potsherd": potsherd_decode, "ufbx": ufbx_load}, runs)
    size = sum(map(len, datas))
    return {"files": len(datas), "bytes": size,
            "potsherd": {"seconds": t["potsherd"], "MB_s": size / MB / t["potsherd"]},
            "ufbx": {"seconds": t["ufbx"], "MB_s": size / MB / t["ufbx"]},
            "ratio": t["potsherd"] / t["ufbx"]}


def ko_corpus_vs_construct(groups: dict[str, dict[str, Group]], runs: int) -> dict | None:
    """Round trip of every KO corpus file vs Construct reading the record files."""
    ko = groups.get("ko")
    if not ko:
        return None
    from construct_baseline import ConstructLayout
    pairs = [(g.codec, d, doc) for g in ko.values() for d, doc in zip(g.datas, g.docs)]
    layout_codec = next((g.codec for g in ko.values() if hasattr(g.codec, "layout")), None)
    clayout = ConstructLayout(layout_codec.layout.rows)
    readable = []
    for codec, d, doc in pairs:
        if getattr(codec, "layout", None) is not layout_codec.layout or doc.params.get("opaque"):
            continue  # textures (no Construct equivalent) and opaque files: left to potsherd alone
        params = {k: v for k, v in doc.params.items() if k != "opaque"}
        readable.append((codec.root, d, params))

    def roundtrip():
        for codec, d, _ in pairs:
            codec.encode(codec.decode(d))

    failures = []

    def construct_read():
        failures.clear()
        for root, d, p in readable:
            try:
                clayout.parse(root, d, **p)
            except Exception as e:  # noqa: BLE001 - counted and reported
                failures.append(f"{root}: {type(e).__name__}")

    t = medians({"potsherd_roundtrip": roundtrip}, runs)
    t.update(medians({"construct_read": construct_read}, 1))
    return {"potsherd_files": len(pairs), "potsherd_bytes": sum(len(d) for _, d, _ in pairs),
            "construct_files": len(readable), "construct_bytes": sum(len(d) for _, d, _ in readable),
            "construct_failures": len(failures),
            "potsherd_roundtrip_s": t["potsherd_roundtrip"], "construct_read_s": t["construct_read"],
            "ratio": t["construct_read"] / t["potsherd_roundtrip"]}


# ----------------------------------------------------------------------------
# memory


_MEMORY_PROBE = r"""
import gc, json, sys
from potsherd import registry
registry.codecs()
def status():
    out = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0]) * 1024
    return out
fmt, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
gc.collect()
before = status()
doc = registry.decode(data, format=fmt, path=path)
after = status()
print(json.dumps({"format": fmt, "path": path, "bytes": len(data), "rss_before": before["VmRSS"],
                  "peak_rss": after["VmHWM"]}))
"""


def _version_of(dist: str) -> str:
    """The installed version of a reference (the JSON rows' orjson: its writing
    speed is the reference, and it doubled between 3.8 and 3.13)."""
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def memory(groups: dict[str, dict[str, Group]], gen: dict[str, Group]) -> list[dict]:
    """Peak RSS while decoding the largest file of each format, each in a fresh
    process (``before``: after imports and reading the file)."""
    jobs = []
    tmp_files = []
    for fam in groups.values():
        for g in fam.values():
            if g.source == "corpus" and g.datas:
                i = max(range(len(g.datas)), key=lambda k: len(g.datas[k]))
                jobs.append((g.codec.name, str(CORPUS / g.names[i])))
    import tempfile
    tmpdir = tempfile.mkdtemp(prefix="potsherd-bench-")
    for name, g in gen.items():
        p = os.path.join(tmpdir, f"generated.{name}")
        with open(p, "wb") as f:
            f.write(g.datas[0])
        tmp_files.append(p)
        jobs.append((g.codec.name, p))
    if not jobs or not os.path.exists("/proc/self/status"):
        return []
    rows = []
    for fmt, path in jobs:
        res = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, fmt, path],
                             capture_output=True, text=True)
        if res.returncode == 0:
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
        else:
            rows.append({"format": fmt, "path": path, "bytes": os.path.getsize(path),
                         "error": (res.stderr.strip().splitlines() or ["?"])[-1]})
    for p in tmp_files:
        os.unlink(p)
    os.rmdir(tmpdir)
    for r in rows:
        if "error" in r:
            r["within_bound"] = None
            continue
        r["growth"] = r["peak_rss"] - r["rss_before"]
        r["bound"] = 3 * r["bytes"] + 50 * (1 << 20)
        r["within_bound"] = r["growth"] <= r["bound"]
    return rows


# ----------------------------------------------------------------------------
# report


def _f(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def print_report(res: dict) -> None:
    p = print
    m = res["machine"]
    p(f"\npotsherd benchmarks  ({m['python']}, {m['platform']}, numpy {m['numpy']}, "
      f"orjson {m['orjson']}, ufbx {m['ufbx']}; median of {res['runs']} runs, CPU time)\n")
    p("Per format: MB/s (files/s)")
    ops = ["decode", "encode", "roundtrip", "json_dump", "json_load", "gltf"]
    hdr = f"{'family':9} {'format':14} {'files':>5} {'MB':>7} " + " ".join(f"{o:>17}" for o in ops)
    p(hdr)
    p("-" * len(hdr))
    for fam, fmts in res["formats"].items():
        for name, r in fmts.items():
            cells = []
            for o in ops:
                if o in r:
                    cells.append(f"{_f(r[o]['MB_s'])} ({_f(r[o]['files_s'], 0)})".rjust(17))
                else:
                    cells.append("-".rjust(17))
            tag = name + ("*" if r["source"] == "generated" else "")
            p(f"{fam:9} {tag:14} {r['files']:>5} {r['bytes'] / MB:>7.2f} " + " ".join(cells))
    p("  * generated file (project encoder), not corpus")
    if res.get("baselines"):
        p("\nDecode vs baselines (same files, interleaved runs): MB/s")
        hdr = (f"{'format':10} {'source':9} {'MB':>6} {'engine':>8} {'handwr.':>8} {'construct':>9} "
               f"{'interp.':>8} {'eng/hand':>8} {'constr/eng':>10} {'interp/eng':>10}")
        p(hdr)
        p("-" * len(hdr))
        for r in res["baselines"]:
            p(f"{r['format']:10} {r['source']:9} {r['bytes'] / MB:>6.2f} {_f(r['engine']['MB_s']):>8} "
              f"{_f(r['handwritten']['MB_s']):>8} {_f(r['construct']['MB_s'], 2):>9} "
              f"{_f(r['reference']['MB_s']):>8} {r['engine_vs_handwritten']:>8.2f} "
              f"{r['construct_vs_engine']:>10.1f} {r['reference_vs_engine']:>10.1f}")
    fb = res.get("fbx_vs_ufbx")
    if fb and "ratio" in fb:
        p(f"\nFBX binary decode ({fb['files']} files, {fb['bytes'] / MB:.2f} MB): potsherd "
          f"{_f(fb['potsherd']['MB_s'])} MB/s, ufbx {_f(fb['ufbx']['MB_s'])} MB/s, "
          f"potsherd/ufbx time {fb['ratio']:.1f}x")
    elif fb:
        p(f"\nFBX vs ufbx: {fb.get('skipped')}")
    kc = res.get("ko_corpus")
    if kc:
        p(f"\nKO corpus: potsherd round trip of {kc['potsherd_files']} files "
          f"({kc['potsherd_bytes'] / MB:.1f} MB) {kc['potsherd_roundtrip_s']:.2f} s; Construct read of "
          f"the {kc['construct_files']} record files ({kc['construct_bytes'] / MB:.1f} MB) "
          f"{kc['construct_read_s']:.2f} s ({kc['construct_failures']} failed); "
          f"Construct/potsherd {kc['ratio']:.1f}x")
    if res.get("memory"):
        p("\nPeak RSS while decoding the largest file of each format (MB)")
        p(f"{'format':14} {'file MB':>8} {'before':>8} {'peak':>8} {'growth':>8} {'3x+50':>8}  ok")
        for r in res["memory"]:
            if "error" in r:
                p(f"{r['format']:14} {r['bytes'] / MB:>8.2f}  probe failed: {r['error']}")
                continue
            p(f"{r['format']:14} {r['bytes'] / MB:>8.2f} {r['rss_before'] / MB:>8.1f} "
              f"{r['peak_rss'] / MB:>8.1f} {r['growth'] / MB:>8.1f} {r['bound'] / MB:>8.1f}  "
              f"{'yes' if r['within_bound'] else 'NO'}")
    if res.get("issue_table"):
        import issue21
        issue21.print_rows(res["issue_table"], p)
    p("\nTargets")
    for t in res["targets"]:
        p(f"  [{'met' if t['met'] else 'NOT met'}] {t['target']}: {t['value']}")


def targets(res: dict) -> list[dict]:
    out = []
    for r in res.get("baselines", []):
        if r["source"] != "corpus":
            continue
        limit = 2.0 if r["format"] == "uif" else 1.5
        out.append({"target": f"{r['format']} decode within {limit}x of hand-written",
                    "value": f"{r['engine_vs_handwritten']:.2f}x",
                    "met": r["engine_vs_handwritten"] <= limit})
        out.append({"target": f"{r['format']} decode >= 20x faster than Construct",
                    "value": f"{r['construct_vs_engine']:.1f}x",
                    "met": r["construct_vs_engine"] >= 20})
    fb = res.get("fbx_vs_ufbx")
    if fb and "ratio" in fb:
        out.append({"target": "FBX binary decode within 5x of ufbx", "value": f"{fb['ratio']:.1f}x",
                    "met": fb["ratio"] <= 5})
    kc = res.get("ko_corpus")
    if kc:
        out.append({"target": "KO corpus round trip faster than Construct reading it",
                    "value": f"{kc['potsherd_roundtrip_s']:.2f} s vs {kc['construct_read_s']:.2f} s",
                    "met": kc["potsherd_roundtrip_s"] < kc["construct_read_s"]})
    for r in res.get("issue_table", []):
        if r["met"] is not None:
            out.append({"target": f"{r['path']} {r['goal']}",
                        "value": f"{r['value']:.2f}{r['unit'] if r['unit'] == 'x' else ' ' + r['unit']}",
                        "met": r["met"]})
    mem = res.get("memory", [])
    if mem:
        mem = [r for r in mem if "error" not in r]
        bad = [r["format"] for r in mem if not r["within_bound"]]
        out.append({"target": "peak RSS growth while decoding < 3x file size + 50 MB",
                    "value": f"{len(mem) - len(bad)} of {len(mem)} formats" +
                             (f" (over: {', '.join(bad)})" if bad else ""),
                    "met": not bad})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (median), default 5")
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    ap.add_argument("--json", default=str(HERE / "results.json"), help="where to write the JSON")
    ap.add_argument("--no-generated", action="store_true", help="skip the generated large files")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory probe")
    ap.add_argument("--no-construct-corpus", action="store_true",
                    help="skip the (slow) Construct read of the whole KO corpus")
    ap.add_argument("--no-issue-table", action="store_true",
                    help="skip the performance issue's table (its extra references)")
    ap.add_argument("--no-processes", action="store_true",
                    help="skip the whole-process FBX -> glb row (potsherd vs assimp)")
    args = ap.parse_args(argv)
    fams = {f for f in args.families.split(",") if f} or None
    t0 = time.time()
    progress("decoding the corpus")
    groups = discover(fams)
    gen = {} if args.no_generated else generated_groups()
    for name, g in gen.items():
        fam = g.codec.family
        if fams and fam not in fams:
            continue
        if fam not in groups or name not in groups[fam]:
            groups.setdefault(fam, {})[name] = g   # no corpus: the generated file stands in
    res: dict[str, Any] = {
        "runs": args.runs, "potsherd": potsherd.__version__,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "numpy": np.__version__, "orjson": _version_of("orjson"),
                    "ufbx": _version_of("ufbx"), "cpus": os.cpu_count()},
        "timer": "process_time (CPU seconds), median of interleaved runs",
        "formats": {}, "failed": {},
    }
    for fam in sorted(groups):
        res["formats"][fam] = {}
        for name in sorted(groups[fam]):
            g = groups[fam][name]
            if g.failed:
                res["failed"][name] = g.failed
            if not g.datas:
                continue
            res["formats"][fam][name] = measure_group(g, args.runs)
        for name, g in gen.items():
            if g.codec.family == fam and groups[fam].get(name) is not g:
                res["formats"][fam][name + " (generated)"] = measure_group(g, args.runs)
    progress("baselines: hand-written and Construct decoders")
    res["baselines"] = baseline_records(groups, gen, args.runs)
    progress("FBX vs ufbx")
    res["fbx_vs_ufbx"] = fbx_vs_ufbx(groups, args.runs)
    if not args.no_construct_corpus:
        progress("KO corpus: potsherd round trip vs Construct read (slow)")
        res["ko_corpus"] = ko_corpus_vs_construct(groups, max(3, args.runs // 2))
    if not args.no_memory:
        progress("peak memory (one process per file)")
        res["memory"] = memory(groups, gen)
    if not args.no_issue_table:
        progress("performance issue table (small reads, FBX, whole processes)")
        import issue21
        res["issue_table"] = issue21.measure(groups, res, CORPUS, medians, args.runs,
                                             processes=not args.no_processes)
    res["targets"] = targets(res)
    res["wall_seconds"] = time.time() - t0
    print_report(res)
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1, default=str)
    print(f"\nJSON written to {args.json} ({res['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
