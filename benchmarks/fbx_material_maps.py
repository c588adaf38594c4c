"""FBX material maps, potsherd's glb against ufbx, slot by slot, over a folder.

``python benchmarks/fbx_material_maps.py FOLDER [--glob 'max*.fbx'] [--json OUT]``

For every FBX in FOLDER (``--glob`` may be given more than once), potsherd
converts it to a glb (library API) and ufbx loads it in a child process (one
per file, the collector off: the 0.0.5 binding crashes otherwise, see
``tests/fbx/ufbx_probe.py``).  Per material and glTF slot (base colour,
opacity = base colour alpha, normal, emissive, metallic = blue and roughness
= green of the metallic-roughness image, occlusion), ufbx's ``pbr`` map is
compared with the file the glb's image records (``extras.source_file``, or
``source_files`` by channel for packed images):

* ``agree``: the glb's file is one of the files ufbx resolves the map to (its
  ``file_textures``: a layered texture's layers, a shader/OSL/graph map's
  bitmaps, a file texture itself);
* ``disagree``: another file;
* ``only-ufbx`` / ``only-glb``: one side has no texture in the slot (a ufbx
  map with no file behind it, e.g. an OSL shader ufbx does not know as a
  bitmap, counts as none);
* ``absent``: ufbx's texture names a file that is neither embedded nor found
  beside the FBX; potsherd leaves the slot empty and warns (counted apart).

Files whose textures are absent are converted a second time from a copy with
a small stand-in picture at every named file (figures ``standin``), so the
mapping is checked there too.  For a layered texture the layer the glb took
is shown (ufbx orders layers bottom to top).  The comparison functions are
those of the corpus test (``tests/fbx/ufbx_materials.py``).
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "fbx")]

import ufbx_materials as um  # noqa: E402

STATUSES = ("agree", "disagree", "only-ufbx", "only-glb", "absent")


def kind(path: Path) -> str:
    """'max ascii', 'maya binary', ... from the ufbx test data's file names."""
    stem = path.stem.lower()
    app = stem.split("_", 1)[0].rstrip("0123456789")
    enc = "ascii" if stem.endswith("_ascii") else "binary" if stem.endswith("_binary") else "?"
    return f"{app} {enc}"


def layer_of(want: dict, file: str) -> str:
    """Which layer (0 = bottom) of a layered texture holds ``file``."""
    hits = [str(i) for i, layer in enumerate(want.get("layers", []))
            if um._base(file) in um.texture_names(layer["texture"])]
    return f" (layer {'/'.join(hits) or '?'} of {len(want['layers'])}, bottom first)" \
        if want.get("layers") else ""


def classify(expected: dict, got: dict, available: dict) -> list[tuple]:
    """(material, slot, status, detail) for every slot either side fills."""
    out = []
    for name, slots in expected.items():
        if name not in got:   # a material no mesh uses is not in the glb
            continue
        have = got[name]
        for slot in sorted(set(slots) | set(have)):
            want, hit = slots.get(slot), have.get(slot)
            if want is None or not want["files"]:   # (a map ufbx found no file behind)
                if hit is not None:
                    out.append((name, slot, "only-glb", f"glb {hit[0]!r}" + (
                        f", ufbx map {want['name']!r} has no file" if want else "")))
                continue
            names = sorted(um.texture_names(want))
            kind_ = {0: "file", 1: "layered", 2: "procedural", 3: "shader"}.get(want["type"], "?")
            if not available.get((name, slot), True):
                status = "absent" if hit is None else "disagree"
                out.append((name, slot, status, f"ufbx {kind_} {names} not found"
                            + (f", glb {hit[0]!r}" if hit else "")))
            elif hit is None:
                out.append((name, slot, "only-ufbx", f"ufbx {kind_} {names}"))
            elif um._base(hit[0]) in names:
                out.append((name, slot, "agree", f"{kind_} {hit[0]!r}" + layer_of(want, hit[0])))
            else:
                out.append((name, slot, "disagree", f"ufbx {kind_} {names}, glb {hit[0]!r}"))
    return out


def check(path: Path, tmp: Path) -> dict:
    answer = um.ufbx_materials(path)
    if answer is None:
        return {"file": path.name, "kind": kind(path), "ufbx": False}
    expected = um.expected_slots(answer)
    report = {"file": path.name, "kind": kind(path), "ufbx": True,
              "materials": len(answer["materials"]), "slots": [], "standin": []}
    try:
        data, warnings = um.convert(path, tmp / (path.stem + ".glb"))
    except Exception as e:  # noqa: BLE001 - a failed conversion is reported, not fatal
        report["error"] = f"{type(e).__name__}: {e}"
        return report
    got = um.glb_slots(data)
    available = {(n, s): um.texture_available(t, path) for n, ss in expected.items()
                 for s, t in ss.items()}
    report["slots"] = classify(expected, got, available)
    report["warnings"] = warnings
    if not all(available.values()):
        copy = um.stand_ins(path, answer, tmp / (path.stem + "_standins"))
        data2, _ = um.convert(copy, tmp / (path.stem + "_standins.glb"))
        report["standin"] = classify(expected, um.glb_slots(data2), {})
    return report


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--glob", action="append", help="file pattern (default *.fbx)")
    ap.add_argument("--json", type=Path, help="write every report here")
    ap.add_argument("--quiet", action="store_true", help="only the totals")
    args = ap.parse_args(argv)
    paths = sorted({p for g in (args.glob or ["*.fbx"]) for p in args.folder.glob(g)
                    if p.is_file() and p.suffix.lower() == ".fbx"})
    reports = []
    totals: dict = collections.defaultdict(collections.Counter)
    files: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as d:
        for i, p in enumerate(paths):
            (Path(d) / str(i)).mkdir()
            r = check(p, Path(d) / str(i))
            reports.append(r)
            files[r["kind"]] += 1
            files["ufbx could not read"] += not r["ufbx"]
            files["conversion failed"] += "error" in r
            for key in ("slots", "standin"):
                for _, _, status, _ in r.get(key, []):
                    totals[key][status] += 1
                    totals[f"{key} {r['kind']}"][status] += 1
            lines = [s for s in r.get("slots", []) + r.get("standin", []) if s[2] != "agree"]
            if args.quiet:
                continue
            if not r["ufbx"] or "error" in r:
                sys.stdout.write(f"{p.name}: {r.get('error', 'ufbx could not read')}\n")
            elif r["slots"]:
                sys.stdout.write(f"{p.name}: {len(r['slots'])} slots, "
                                 f"{sum(s[2] == 'agree' for s in r['slots'])} agree"
                                 + (f"; stand-ins {len(r['standin'])}" if r["standin"] else "")
                                 + "\n")
                for m, slot, status, detail in r["slots"]:
                    if status != "agree" or "layer" in detail:
                        sys.stdout.write(f"    {m}.{slot}: {status}: {detail}\n")
                for m, slot, status, detail in r["standin"]:
                    if status != "agree":
                        sys.stdout.write(f"    stand-in {m}.{slot}: {status}: {detail}\n")
            del lines
    summary = {"files": dict(files),
               "slots": {k: {s: v[s] for s in STATUSES if v[s]} for k, v in sorted(totals.items())}}
    sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "files": reports}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
