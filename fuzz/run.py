#!/usr/bin/env python3
"""Fuzz the decoders of one family (or all) for a time or input budget.

    python fuzz/run.py --family ko --seconds 60
    python fuzz/run.py --family all --inputs 100000 --report /tmp/fuzz.json
    python fuzz/run.py --family fbx --engine atheris --seconds 300

Engines: ``plain`` (random structure-blind mutations of the seeds, see
``fuzzlib.Mutator``) and ``atheris`` (coverage-guided libFuzzer, when
``pip install atheris`` works).  Seeds: files written by the project's own
encoders, plus ``../shared/corpus/<family>`` when present.

Reports: inputs, decoded/refused counts, duration, peak RSS, slowest input,
and findings (anything but a FormatError, an InternalDecodeError, a round trip
that changes bytes, a JSON form that does not load back, an input slower than
the time limit, a decode allocating more than a small multiple of its input).
Crashers are saved under ``fuzz/crashers/<family>/`` (not committed).
Exit status 1 when there are findings.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ALL = ("core", "ko", "darkstar", "fbx", "trle")


def _all_families() -> tuple[str, ...]:
    """"core" and every registered family, those of installed plugins included."""
    import fuzzlib
    return ("core", *fuzzlib.FAMILIES)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="all", help=f"one of {', '.join(ALL)} (or a family a plugin adds), or all")
    p.add_argument("--seconds", type=float, help="time budget per family")
    p.add_argument("--inputs", type=int, help="input budget per family")
    p.add_argument("--seed", type=int, default=0, help="random seed (plain engine)")
    p.add_argument("--engine", choices=("plain", "atheris"), default="plain")
    p.add_argument("--time-limit", type=float, default=2.0, help="slowest acceptable input, seconds")
    p.add_argument("--json-every", type=int, default=1,
                   help="check both JSON forms on every Nth input that decodes")
    p.add_argument("--trace-every", type=int, default=25,
                   help="measure the allocation peak of every Nth decode (0: never)")
    p.add_argument("--max-seed-size", type=int, default=64 << 10, help="largest corpus file used as a seed")
    p.add_argument("--no-corpus", action="store_true", help="encoder-made seeds only")
    p.add_argument("--truncate", action="store_true",
                   help="also truncate every seed under 4 KiB at every offset first")
    p.add_argument("--crash-dir", default=str(HERE / "crashers"))
    p.add_argument("--seed-cache", help="folder to keep prepared seeds in between runs "
                   "(outside the repository: they may derive from corpus files)")
    p.add_argument("--report", help="write the statistics as JSON here")
    p.add_argument("--memory-cap-mb", type=int, default=2048,
                   help="address-space cap of the fuzzing process (a runaway allocation fails)")
    p.add_argument("--json-mutate-every", type=int, default=10,
                   help="every Nth input that decodes: also one hostile edit of its JSON form")
    p.add_argument("--derived", default="", help="also build these views of every input that "
                   "decodes (with the JSON check): scene,textures")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--stats-file", help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    args.rest = rest
    if args.seconds is None and args.inputs is None:
        args.seconds = 60.0
    return args


def _cap_memory(mb: int) -> None:
    if mb > 0:
        lim = mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))


def _families(name: str) -> list[str]:
    every = _all_families()
    if name == "all":
        return list(every)
    if name not in every:
        raise SystemExit(f"unknown family {name!r} (one of {', '.join(every)}, all)")
    return [name]


def _print_stats(d: dict, out=sys.stdout) -> None:
    print(f"[{d['family']}] engine={d.get('engine', 'plain')} seeds={d['seeds']} inputs={d['inputs']} "
          f"decoded={d['decoded']} refused={d['refused']} duration={d['seconds']}s "
          f"rate={d['inputs'] / max(d['seconds'], 1e-9):.0f}/s peak_rss={d['peak_rss_mb']}MiB "
          f"slowest={d['slowest']}s CPU ({d['slowest_input']}) "
          f"hostile_json={d.get('json_documents', 0)} decode_alloc_peak={d.get('max_alloc_mb', 0)}MiB "
          f"(per byte+64KiB: {d['max_alloc_ratio']}) findings={len(d['findings'])}", file=out)
    if d.get("errors"):
        print(f"[{d['family']}] refusals: " + ", ".join(f"{k}={v}" for k, v in sorted(d["errors"].items()))
              + f"; without offset: {d['errors_without_offset']}, without field path: {d.get('errors_without_path', 0)}", file=out)
    for f in d["findings"]:
        print(f"[{d['family']}]   {f['kind']} in {f['codec']}: {f['detail']} "
              f"({f['bytes']} bytes, crasher {f['key']})", file=out)
    out.flush()


def load_seeds(family: str, args) -> list:
    """The family's seeds, from ``--seed-cache`` when it holds them."""
    import fuzzlib
    cache = Path(args.seed_cache) / family if args.seed_cache else None
    index = cache / "index.json" if cache else None
    if index is not None and index.exists():
        rows = json.loads(index.read_text())
        seeds = [fuzzlib.Seed(r["codec"], (cache / r["file"]).read_bytes(), r["origin"], r["ext"])
                 for r in rows]
        return [sd for sd in seeds if len(sd.data) <= args.max_seed_size]
    seeds = fuzzlib.family_seeds(family, corpus=not args.no_corpus, max_size=args.max_seed_size)
    if index is not None:
        cache.mkdir(parents=True, exist_ok=True)
        rows = []
        for i, sd in enumerate(seeds):
            name = f"seed{i:05d}.bin"
            (cache / name).write_bytes(sd.data)
            rows.append({"codec": sd.codec, "file": name, "origin": sd.origin, "ext": sd.ext})
        index.write_text(json.dumps(rows, indent=0))
    return seeds


def run_plain(family: str, args) -> dict:
    import fuzzlib
    ctx = None
    if family == "core":
        import fuzz_core
        ctx = fuzz_core.registered()
        ctx.__enter__()
    try:
        t0 = time.perf_counter()
        seeds = load_seeds(family, args)
        seed_seconds = time.perf_counter() - t0
        if not seeds:
            return {"family": family, "skipped": "no codec or no seed", "seeds": 0, "inputs": 0,
                    "decoded": 0, "refused": 0, "seconds": 0, "peak_rss_mb": fuzzlib.peak_rss_mb(),
                    "slowest": 0, "slowest_input": "", "max_alloc_ratio": 0, "findings": []}
        _cap_memory(args.memory_cap_mb)
        camp = fuzzlib.Campaign(family, seeds, rng_seed=args.seed, time_limit=args.time_limit,
                                json_every=args.json_every, crash_dir=Path(args.crash_dir),
                                trace_every=args.trace_every,
                                derived=tuple(x for x in args.derived.split(",") if x),
                                json_mutate_every=args.json_mutate_every)
        t_trunc = time.perf_counter()
        if args.truncate:
            for s in seeds:
                if len(s.data) < 4096:
                    for cut in fuzzlib.truncations(s.data):
                        out = fuzzlib.check_input(s.codec, cut, time_limit=args.time_limit,
                                                  json_check=False)
                        camp.stats.record(out, cut, f"{s.origin} cut at {len(cut)}")
                        if out.finding is not None:
                            camp._found(out.finding)
        progress = None if args.quiet else (lambda st: print(
            f"  [{family}] {st.inputs} inputs, {st.seconds:.0f}s, {len(st.findings)} findings, "
            f"peak {st.peak_rss_mb:.0f} MiB", flush=True))
        stats = camp.run(seconds=args.seconds, inputs=args.inputs, progress=progress,
                         progress_every=30.0)
        d = stats.summary()
        if args.truncate:  # the sweep ran before the timed campaign: count it in
            d["seconds"] = round(time.perf_counter() - t_trunc, 1)
        d["seed_seconds"] = round(seed_seconds, 1)
        d["engine"] = "plain"
        d["seed_origins"] = sorted({s.origin.split(":")[0] if ":" in s.origin else "corpus"
                                    for s in seeds})
        return d
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)


# ----------------------------------------------------------------------------
# atheris (coverage-guided)


def atheris_child(family: str, args) -> None:
    """Runs inside a child process: libFuzzer owns it and exits it."""
    import atheris
    with atheris.instrument_imports(include=["potsherd"]):
        import potsherd  # noqa: F401
        from potsherd import registry
        registry.codecs()
    import fuzzlib
    keep = None
    if family == "core":
        import fuzz_core
        keep = fuzz_core.registered()  # keep a reference: the generator unregisters when collected
        keep.__enter__()
    codecs = sorted(c.name for c in fuzzlib.codecs_of(family))
    stats = fuzzlib.Stats(family)
    stats_file = Path(args.stats_file)
    t0 = time.perf_counter()
    last = [t0]
    seen: set = set()

    def save() -> None:
        stats.seconds = time.perf_counter() - t0
        stats.peak_rss_mb = fuzzlib.peak_rss_mb()
        d = stats.summary()
        d["engine"] = "atheris"
        tmp = stats_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(d))
        os.replace(tmp, stats_file)

    def one(data: bytes) -> None:
        if not data or not codecs:
            return
        name = codecs[data[0] % len(codecs)]
        out = fuzzlib.check_input(name, data[1:], time_limit=args.time_limit,
                                  json_check=stats.inputs % max(1, args.json_every) == 0)
        if out.finding is None and out.seconds > args.time_limit:
            out.finding = fuzzlib.Finding("timeout", name, data[1:], f"took {out.seconds:.2f} s")
        stats.record(out, data[1:], f"{name} input")
        f = out.finding
        if f is not None:
            sig = (f.kind, f.codec, fuzzlib._innermost(f.detail) or f.detail[:100])
            if sig not in seen:
                seen.add(sig)
                stats.findings.append(f)
                d = Path(args.crash_dir) / family
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{f.kind.replace(' ', '_')}-{f.codec}-{f.key()}.bin").write_bytes(f.data)
                (d / f"{f.kind.replace(' ', '_')}-{f.codec}-{f.key()}.txt").write_text(f.detail)
        now = time.perf_counter()
        if now - last[0] > 2.0:
            last[0] = now
            save()

    save()
    import atexit
    atexit.register(save)
    atheris.Setup([sys.argv[0]] + args.rest, one)
    atheris.Fuzz()


def run_atheris(family: str, args) -> dict:
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is not installed (pip install atheris); using the plain engine", file=sys.stderr)
        return run_plain(family, args)
    import fuzzlib
    ctx = None
    if family == "core":
        import fuzz_core
        ctx = fuzz_core.registered()
        ctx.__enter__()
    try:
        seeds = load_seeds(family, args)
        codecs = sorted(c.name for c in fuzzlib.codecs_of(family))
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    with tempfile.TemporaryDirectory(prefix=f"potsherd-fuzz-{family}-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, s in enumerate(seeds):
            (corpus / f"seed{i:05d}").write_bytes(bytes([codecs.index(s.codec)]) + s.data)
        stats_file = Path(tmp) / "stats.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--engine", "atheris",
               "--family", family, "--stats-file", str(stats_file), "--time-limit", str(args.time_limit),
               "--json-every", str(args.json_every), "--crash-dir", args.crash_dir,
               f"-rss_limit_mb={args.memory_cap_mb}", f"-timeout={int(args.time_limit * 3) + 1}",
               "-print_final_stats=1", str(corpus)]
        if args.seconds:
            cmd.append(f"-max_total_time={int(args.seconds)}")
        if args.inputs:
            cmd.append(f"-runs={args.inputs}")
        log = Path(tmp) / "libfuzzer.log"
        with open(log, "wb") as lf:
            rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT)
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        d = json.loads(stats_file.read_text()) if stats_file.exists() else {
            "family": family, "inputs": 0, "decoded": 0, "refused": 0, "seconds": 0,
            "slowest": 0, "slowest_input": "", "max_alloc_ratio": 0, "findings": []}
        d["peak_rss_mb"] = round(max(d.get("peak_rss_mb", 0), child_rss), 1)
        d["seeds"] = len(seeds)
        d["engine"] = "atheris"
        d["libfuzzer_exit"] = rc
        tail = log.read_text(errors="replace").splitlines()[-15:]
        d["libfuzzer_tail"] = tail
        if rc not in (0,) and not d["findings"]:
            d["findings"].append({"kind": "libfuzzer", "codec": family, "bytes": 0, "key": "-",
                                  "detail": " | ".join(tail[-5:])})
        return d


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        atheris_child(args.family, args)
        return 0
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    fams = _families(args.family)
    results = []
    if len(fams) > 1:
        # one process per family: peak RSS is then per family
        for fam in fams:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
                rep = tf.name
            cmd = [sys.executable, str(Path(__file__).resolve()), "--family", fam, "--report", rep]
            for k in ("seconds", "inputs", "seed", "time_limit", "json_every", "trace_every",
                      "max_seed_size", "crash_dir", "memory_cap_mb", "seed_cache", "derived", "json_mutate_every"):
                v = getattr(args, k)
                if v is not None:
                    cmd += [f"--{k.replace('_', '-')}", str(v)]
            cmd += ["--engine", args.engine] + (["--no-corpus"] if args.no_corpus else []) \
                + (["--truncate"] if args.truncate else []) + (["--quiet"] if args.quiet else [])
            subprocess.call(cmd)
            try:
                results += json.loads(Path(rep).read_text())
            except (OSError, ValueError):
                results.append({"family": fam, "error": "run failed"})
            finally:
                Path(rep).unlink(missing_ok=True)
    else:
        fam = fams[0]
        d = run_atheris(fam, args) if args.engine == "atheris" else run_plain(fam, args)
        if not d.get("skipped"):
            _print_stats(d)
        else:
            print(f"[{fam}] skipped: {d['skipped']}")
        results.append(d)
    if len(results) > 1:
        print("\nfamily     inputs   duration  peak RSS  slowest (CPU)  decoded  findings")
        for r in results:
            if "inputs" in r:
                print(f"{r['family']:<9} {r['inputs']:>8} {r['seconds']:>8}s {r['peak_rss_mb']:>7}MiB "
                      f"{r['slowest']:>12}s {r['decoded']:>8} {len(r['findings']):>9}")
            else:
                print(f"{r['family']:<9} {r.get('error') or r.get('skipped')}")
    if args.report:
        Path(args.report).write_text(json.dumps(results, indent=1))
    return 1 if any(r.get("findings") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
