"""ufbx's material maps against the glb potsherd writes, slot by slot.

The reference side asks ufbx, one file per child process (the 0.0.5 binding
crashes: see ``ufbx_probe``; besides, it segfaults on a later access once a
wrapper it handed out has been freed, so the probe keeps every wrapper alive
and leaves with ``os._exit``), for every material's ``pbr`` maps (base colour,
opacity, normal, emission, metalness, roughness, ambient occlusion) and the
file names of the texture in each (relative, absolute, resolved, plus the
embedded content).  The potsherd side converts the FBX to a glb with the
library and reads, for every glTF material slot, the file the image came from:
the image's ``extras`` (``source_file``, or ``source_files`` by channel for the
images potsherd packs: ``rgb``/``alpha`` in the base colour, ``roughness``/
``metallic`` in the metallic-roughness image), else its name (what glbs
written before the extras had: a clip name, or ``a.png+alpha`` with the alpha's
file unnamed, so those slots disagreed).

ufbx loads with ``use_blender_pbr_material``: Blender's exporter writes
alpha under ``TransparencyFactor`` and metallic under ``ReflectionFactor``,
and ufbx maps them into ``pbr.opacity``/``pbr.metalness`` only with that
option (without it, its plain Phong view has no texture in either slot while
potsherd, like Blender's importer, reads them as alpha and metallic).

A slot whose texture has neither content nor a file the confined resolver
(``TextureFiles``, beside the FBX) finds is expected to be empty in the glb:
potsherd names the file in a warning instead of inventing an image.

Run as a script for the corpus figures:
``PYTHONPATH=src:tests python3 tests/fbx/ufbx_materials.py [FILES...]``.
"""
from __future__ import annotations

import base64
import io
import json
import struct
import subprocess
import sys
from pathlib import Path

#: ufbx ``pbr`` map -> glTF-side slot
PBR_SLOTS = {"base_color": "base", "opacity": "opacity", "normal_map": "normal",
             "emission_color": "emissive", "metalness": "metallic", "roughness": "roughness",
             "ambient_occlusion": "occlusion", "glossiness": "roughness"}

PROBE = r"""
import gc, json, sys, os, base64
gc.disable()
import ufbx
# every wrapper the binding hands out is kept alive until the process exits:
# freeing them (0.0.5) corrupts the scene and a later access segfaults
KEEP = []
def k(x):
    KEEP.append(x)
    return x
scene = k(ufbx.load_file(sys.argv[1], use_blender_pbr_material=True))
done = {}
def tex(t):
    key = int(t.element_id)
    if key not in done:
        files = []
        for ft in k(t.file_textures):
            k(ft)
            c = k(ft.content)
            files.append({"name": ft.name, "filename": ft.filename,
                          "relative": ft.relative_filename, "absolute": ft.absolute_filename,
                          "content": base64.b64encode(bytes(c)).decode() if c else ""})
        done[key] = {"name": t.name, "type": int(t.type), "files": files}
        # how ufbx reached the files: a layered texture's layers, bottom to
        # top (the binding's ShaderTexture crashes on any attribute: a shader
        # texture is seen only through its type and file_textures)
        done[key]["layers"] = [{"blend": int(k(l).blend_mode), "alpha": float(l.alpha),
                                "texture": tex(k(l.texture))} for l in k(t.layers)]
    return done[key]
meta = k(scene.metadata)
out = {"exporter": int(meta.exporter), "materials": []}
for m in k(scene.materials):
    k(m)
    d = {"name": m.name, "shader": int(m.shader_type), "pbr": {}}
    pbr = k(m.pbr)
    for n in %(pbr)r:
        t = k(k(getattr(pbr, n)).texture)
        if t is not None:
            d["pbr"][n] = tex(t)
    out["materials"].append(d)
print(json.dumps(out), flush=True)
os._exit(0)
""" % {"pbr": tuple(PBR_SLOTS)}


def ufbx_materials(path: Path, *, attempts: int = 3, timeout: int = 120) -> dict | None:
    """ufbx's view of ``path``'s materials, or None when ufbx could not read it
    (no answer after ``attempts`` children, each killed by a signal or timed out)."""
    for _ in range(attempts):
        try:
            run = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                                 text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
        line = run.stdout.strip().splitlines()[:1]
        if line:
            try:
                return json.loads(line[0])
            except ValueError:
                return None
        if run.returncode >= 0:   # an ordinary error (ufbx refused the file): no retry
            return None
    return None


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1].lower()


def texture_names(t: dict) -> set:
    """The file base names ufbx gives a texture (lower case), over its files."""
    return {_base(n) for f in t["files"] for n in (f["filename"], f["relative"], f["absolute"])
            if _base(n)}


def texture_available(t: dict, fbx: Path) -> bool:
    """ufbx has the picture embedded, or the confined resolver finds a named file."""
    from potsherd.formats.fbx.scene_materials import TextureFiles
    files = TextureFiles(str(fbx), None)
    for f in t["files"]:
        if f["content"]:
            return True
        names = [n for n in (f["relative"], f["absolute"]) if n]
        if names and files.find(names) is not None:
            return True
    return False


def expected_slots(answer: dict) -> dict:
    """{material name: {slot: ufbx texture}} (the first material of a name)."""
    out: dict = {}
    for m in answer["materials"]:
        # ufbx moves a 3ds Max roughness map flagged as glossiness to
        # ``pbr.glossiness``; glTF has roughness only (potsherd inverts it)
        slots = {PBR_SLOTS[k]: t for k, t in m["pbr"].items() if k != "glossiness"}
        if "glossiness" in m["pbr"]:
            slots.setdefault("roughness", m["pbr"]["glossiness"])
        out.setdefault(m["name"], slots)
    return out


def read_glb(data: bytes) -> tuple[dict, bytes]:
    """(JSON, BIN chunk) of a glb."""
    n = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + n])
    rest = data[20 + n:]
    binary = rest[8:8 + struct.unpack_from("<I", rest, 0)[0]] if len(rest) >= 8 else b""
    return doc, binary


def _image_bytes(doc: dict, binary: bytes, i: int) -> bytes | None:
    view = doc["images"][i].get("bufferView")
    if view is None:
        return None
    v = doc["bufferViews"][view]
    return binary[v.get("byteOffset", 0):v.get("byteOffset", 0) + v["byteLength"]]


def _sources(image: dict) -> dict:
    """The files an image was made from, by channel ('' for a plain image)."""
    extras = image.get("extras") or {}
    if "source_files" in extras:
        return {k: v for k, v in extras["source_files"].items() if v}
    if "source_file" in extras:
        return {"": extras["source_file"]}
    # no record: the image name ('a.png', 'a.png+alpha', 'm.png+r.png+metal_rough')
    parts = [p for p in image.get("name", "").split("+") if p not in ("alpha", "metal_rough", "white")]
    return {"": parts[0]} if len(parts) == 1 else {f"?{i}": p for i, p in enumerate(parts)}


def glb_slots(data: bytes) -> dict:
    """{material name: {slot: (file base name or None, image index, channel)}} of a glb."""
    doc, _ = read_glb(data)
    images, textures = doc.get("images", []), doc.get("textures", [])
    out: dict = {}
    for m in doc.get("materials", []):
        slots: dict = {}
        pbr = m.get("pbrMetallicRoughness", {})
        refs = {"base": pbr.get("baseColorTexture"), "mr": pbr.get("metallicRoughnessTexture"),
                "normal": m.get("normalTexture"), "emissive": m.get("emissiveTexture"),
                "occlusion": m.get("occlusionTexture")}
        for key, ref in refs.items():
            if not ref:
                continue
            img = textures[ref["index"]]["source"]
            src = _sources(images[img])
            if key == "base":
                pairs = {"base": src.get("rgb", src.get("")), "opacity": src.get("alpha")}
                if any(k.startswith("?") for k in src):   # unrecorded packing: order unknown
                    pairs = {"base": src.get("?0"), "opacity": src.get("?1")}
            elif key == "mr":
                pairs = {"metallic": src.get("metallic"), "roughness": src.get("roughness")}
                if any(k.startswith("?") for k in src):
                    pairs = {"metallic": src.get("?0"), "roughness": src.get("?1")}
                elif "" in src:
                    pairs = {"metallic": src[""], "roughness": src[""]}
            else:
                pairs = {key: src.get("")}
            for slot, name in pairs.items():
                if name is not None:
                    channel = {"opacity": "alpha", "metallic": "metallic",
                               "roughness": "roughness"}.get(slot, "rgb" if key == "base" else "")
                    slots[slot] = (name, img, channel if key in ("base", "mr") else "")
        out.setdefault(m.get("name", ""), slots)
    return out


def compare(expected: dict, got: dict, available: dict) -> list[str]:
    """Disagreements between ufbx's slots and the glb's.  ``available`` maps a
    (material, slot) to whether the texture's picture can be had (embedded or
    found); an unavailable one must leave the slot empty.  Materials ufbx has
    that no mesh uses are absent from the glb and skipped."""
    bad = []
    for name, slots in expected.items():
        if name not in got:
            continue
        have = got[name]
        for slot in sorted(set(slots) | set(have)):
            want = slots.get(slot)
            hit = have.get(slot)
            if want is None:
                bad.append(f"{name}.{slot}: glb has {hit[0]!r}, ufbx has no texture")
            elif not available.get((name, slot), True):
                if hit is not None:
                    bad.append(f"{name}.{slot}: texture absent, glb has {hit[0]!r}")
            elif hit is None:
                bad.append(f"{name}.{slot}: ufbx has {sorted(texture_names(want))}, glb none")
            elif _base(hit[0]) not in texture_names(want):
                bad.append(f"{name}.{slot}: ufbx has {sorted(texture_names(want))}, "
                           f"glb {hit[0]!r}")
    return bad


def slot_count(expected: dict, got: dict) -> int:
    return sum(len(set(s) | set(got[n])) for n, s in expected.items() if n in got)


def _pixels(data: bytes, channel: str = ""):
    import numpy as np
    from PIL import Image as PILImage
    im = PILImage.open(io.BytesIO(data))
    if channel in ("alpha", "roughness", "metallic"):
        return np.asarray(im.convert("L"))
    return np.asarray(im.convert("RGB"))


def picture_mismatches(data: bytes, fbx: Path, expected: dict) -> tuple[int, list[str]]:
    """(slots checked, slots whose glb image does not hold the picture ufbx's
    texture names): a plain image the same pixels, a packed one the source in
    its channel (roughness green, possibly inverted for glossiness; metallic
    blue; alpha); a packed channel resized to another map's size is not checked."""
    import numpy as np
    from potsherd.formats.fbx.scene_materials import TextureFiles
    doc, binary = read_glb(data)
    files = TextureFiles(str(fbx), None)
    bad, checked = [], 0
    for name, slots in glb_slots(data).items():
        for slot, (_, img, channel) in slots.items():
            want = expected.get(name, {}).get(slot)
            if want is None:
                continue
            src = None
            for f in want["files"]:
                if f["content"]:
                    src = base64.b64decode(f["content"])
                    break
                path = files.find([n for n in (f["relative"], f["absolute"]) if n])
                if path is not None:
                    src = path.read_bytes()
                    break
            out = _image_bytes(doc, binary, img)
            if src is None or out is None:
                continue
            checked += 1
            try:
                a, b = _pixels(out), _pixels(src, channel)
            except Exception as e:  # noqa: BLE001 - reported as a mismatch
                bad.append(f"{name}.{slot}: unreadable ({e})")
                continue
            if channel:
                plane = {"alpha": 3, "roughness": 1, "metallic": 2}.get(channel)
                if plane is None:
                    a = a if a.ndim == 3 else a[..., None]
                    ok = a.shape[:2] == b.shape[:2] and np.array_equal(a[..., :3], b[..., :3])
                else:
                    from PIL import Image as PILImage
                    full = np.asarray(PILImage.open(io.BytesIO(out)).convert("RGBA"))
                    ok = full.shape[:2] != b.shape[:2] or np.array_equal(full[..., plane], b) \
                        or np.array_equal(full[..., plane], 255 - b)
            else:
                ok = a.shape == b.shape and np.array_equal(a, b)
            if not ok:
                bad.append(f"{name}.{slot}: glb image {img} is not {sorted(texture_names(want))}")
    return checked, bad


def stand_ins(fbx: Path, answer: dict, folder: Path) -> Path:
    """A copy of ``fbx`` in ``folder`` with a distinct small picture written at
    every texture file ufbx names that has no content (its relative path when
    it stays inside ``folder``, else its base name beside the copy): the slot
    mapping of files whose textures are not in the corpus is checked too."""
    import numpy as np
    from PIL import Image as PILImage
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / fbx.name
    copy.write_bytes(fbx.read_bytes())
    seed = 0
    for m in answer["materials"]:
        for t in m["pbr"].values():
            for f in t["files"]:
                if f["content"]:
                    continue
                rel = f["relative"].replace("\\", "/")
                parts = [p for p in rel.split("/") if p not in ("", ".")]
                target = folder.joinpath(*parts) if parts and ".." not in parts \
                    and not parts[0].endswith(":") else folder / _base(f["absolute"] or rel)
                if target.exists() or not target.name:
                    continue
                seed += 1
                px = np.random.default_rng(seed).integers(0, 256, (4, 8, 3), dtype=np.uint8)
                target.parent.mkdir(parents=True, exist_ok=True)
                fmt = {".jpg": "PNG", ".jpeg": "PNG", ".tga": "TGA"}.get(target.suffix.lower(), "PNG")
                PILImage.fromarray(px, "RGB").save(target, format=fmt)
    return copy


def convert(fbx: Path, out: Path) -> tuple[bytes, list]:
    """potsherd's glb of ``fbx`` (library API) and its warnings."""
    import potsherd
    from potsherd.export.gltf import export_document
    summary = export_document(potsherd.read(fbx), out)
    return out.read_bytes(), list(summary.get("warnings", []))


def check_file(fbx: Path, tmp: Path, answer: dict | None = None) -> dict:
    """Everything the comparison finds for one FBX (``answer``: ufbx's, probed when None)."""
    answer = answer if answer is not None else ufbx_materials(fbx)
    report = {"file": fbx.name, "ufbx": answer is not None}
    if answer is None:
        return report
    expected = expected_slots(answer)
    names = [m["name"] for m in answer["materials"]]
    report.update(materials=len(names), textured=0,
                  duplicates=sorted({n for n in names if names.count(n) > 1}))
    if not names:
        return report
    data, warnings = convert(fbx, tmp / (fbx.stem + ".glb"))
    got = glb_slots(data)
    # a material either side gives a texture (ufbx's unused ones are not in the glb)
    textured = {n: s for n, s in expected.items() if s or got.get(n)}
    report["textured"] = len(textured)
    if not textured:
        return report
    available = {(n, s): texture_available(t, fbx) for n, ss in textured.items()
                 for s, t in ss.items()}
    checked, pictures = picture_mismatches(data, fbx, textured)
    unwarned = sorted({_base(f["relative"] or f["absolute"]) for (n, s), ok in available.items()
                       if not ok for f in textured[n][s]["files"]
                       if not any(_base(f["relative"] or f["absolute"]) in w.lower()
                                  for w in warnings)})
    report.update(slots=slot_count(textured, got), available=sum(available.values()),
                  disagree=compare(textured, got, available), checked=checked,
                  pictures=pictures, unwarned=unwarned, warnings=warnings)
    if not all(available.values()):   # the mapping of the absent files, with stand-ins
        copy = stand_ins(fbx, answer, tmp / (fbx.stem + "_standins"))
        data2, _ = convert(copy, tmp / (fbx.stem + "_standins.glb"))
        got2 = glb_slots(data2)
        checked2, pictures2 = picture_mismatches(data2, copy, textured)
        report.update(standin_slots=slot_count(textured, got2),
                      standin_disagree=compare(textured, got2, {}),
                      standin_checked=checked2, standin_pictures=pictures2)
    return report


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".fbx")


def main(argv: list[str]) -> int:
    import tempfile
    from corpus_paths import CORPUS_ROOT   # (tests/ on PYTHONPATH, as pytest has it)
    paths = [Path(a) for a in argv] or corpus_files(CORPUS_ROOT / "fbx")
    totals = dict(files=0, unread=0, materials=0, with_materials=0, with_textures=0, slots=0,
                  agree=0, standin_slots=0, standin_agree=0, pictures_checked=0,
                  picture_bad=0, unwarned=0)
    with tempfile.TemporaryDirectory() as d:
        for p in paths:
            r = check_file(p, Path(d))
            totals["files"] += 1
            if not r["ufbx"]:
                totals["unread"] += 1
                print(f"{p.name}: ufbx could not read")
                continue
            totals["materials"] += r["materials"]
            totals["with_materials"] += r["materials"] > 0
            if not r["textured"]:
                continue
            totals["with_textures"] += 1
            totals["slots"] += r["slots"]
            totals["agree"] += r["slots"] - len(r["disagree"])
            totals["picture_bad"] += len(r["pictures"]) + len(r.get("standin_pictures", []))
            totals["pictures_checked"] += r["checked"] + r.get("standin_checked", 0)
            totals["unwarned"] += len(r["unwarned"])
            if "standin_slots" in r:
                totals["standin_slots"] += r["standin_slots"]
                totals["standin_agree"] += r["standin_slots"] - len(r["standin_disagree"])
            if r["duplicates"]:
                print(f"    material names ufbx gives twice (compared by first): {r['duplicates']}")
            print(f"{p.name}: {r['textured']}/{r['materials']} textured materials, "
                  f"{r['slots']} slots ({r['available']} with pictures), "
                  f"{len(r['disagree'])} disagree" + (
                      f"; stand-ins {r['standin_slots']} slots, "
                      f"{len(r['standin_disagree'])} disagree" if "standin_slots" in r else ""))
            for line in r["disagree"] + r["pictures"] + r.get("standin_disagree", []) \
                    + r.get("standin_pictures", []) \
                    + [f"absent texture not warned about: {u}" for u in r["unwarned"]]:
                print("   ", line)
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
