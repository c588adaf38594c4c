"""Every real Darkstar file of the shared corpus: decode fully, write back
byte-exactly, and pass through both JSON forms.  Skipped without the corpus."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.core.errors import MagicError
from potsherd.formats.darkstar import geometry
from corpus_paths import CORPUS_ROOT

# tests/darkstar/<file> -> repo root is parents[2]; shared/ sits beside the repo
CORPUS = CORPUS_ROOT / "dts"

if not CORPUS.is_dir():
    pytest.skip("shared Darkstar corpus not present", allow_module_level=True)


def _sources() -> dict[str, dict]:
    """path -> {"classes": Counter of 'TS::Xv3' -> n, "quirks": set} from SOURCES.txt."""
    out: dict[str, dict] = {}
    current = None
    for line in (CORPUS / "SOURCES.txt").read_text("utf-8").splitlines():
        if re.fullmatch(r"\S+\.(dts|dml)", line, re.IGNORECASE):
            current = line.strip()
            out[current] = {"classes": Counter(), "quirks": set()}
        elif current and line.strip().startswith("contents:"):
            text = line.split("contents:", 1)[1].strip()
            head, _, quirks = text.partition(";")
            for m in re.finditer(r"(TS::\w+v\d+)x(\d+)", head):
                out[current]["classes"][m.group(1)] = int(m.group(2))
            out[current]["quirks"] = {q.strip() for q in quirks.split(",") if q.strip()}
    return out


SOURCES = _sources()
PERS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix.lower() in (".dts", ".dml")
                    and "non_pers" not in p.parts)
NON_PERS = sorted((CORPUS / "non_pers").glob("*"))


def _rel(p: Path) -> str:
    return p.relative_to(CORPUS).as_posix()


def _blocks(block: dict):
    yield block
    p = block["payload"]
    if isinstance(p, dict):
        for mesh in p.get("meshes", []):
            yield from _blocks(mesh)
        if isinstance(p.get("materials"), dict):
            yield from _blocks(p["materials"])


def test_corpus_is_the_documented_selection():
    assert len(PERS_FILES) == 34
    assert {_rel(p) for p in PERS_FILES} | {_rel(p) for p in NON_PERS} == set(SOURCES)


@pytest.mark.parametrize("path", PERS_FILES, ids=_rel)
def test_round_trip_and_json(path: Path):
    data = path.read_bytes()
    doc = potsherd.read(path)
    assert doc.format == ("dml" if path.suffix.lower() == ".dml" else "dts")
    assert potsherd.write(doc) == data
    # fully decoded: every block has a codec, no slack, nothing opaque but trailing bytes
    assert doc.codec.opaque_bytes(doc) == len(doc.trailing)
    classes = Counter()
    for b in _blocks(doc.root):
        assert isinstance(b["payload"], dict), b["className"]
        assert b["slack"] == b"" and b["pad"] == b""
        assert b["size"] & 0x80000000 == 0
        classes[f"{b['className'].decode()}v{b['version']}"] += 1
    assert classes == SOURCES[_rel(path)]["classes"]
    for form in ("wire", "readable"):
        j = json.loads(json.dumps(doc.to_json(form)))
        assert potsherd.write(potsherd.from_json(j)) == data, form


def test_trailing_bytes_kept():
    sizes = {}
    for p in PERS_FILES:
        doc = potsherd.read(p)
        if doc.trailing:
            sizes[_rel(p)] = (len(doc.trailing), len(p.read_bytes()))
            assert "trailing_bytes" in SOURCES[_rel(p)]["quirks"]
            assert doc.warnings and "after the top-level PERS block" in doc.warnings[0]
    assert sizes == {"tribesrebirth/entities_vol/larmor.dts": (148252, 761136),
                     "tribesrebirth/entities_vol/harmor.dts": (6678, 750246)}


@pytest.mark.parametrize("path", NON_PERS, ids=_rel)
def test_non_pers_refused(path: Path):
    with pytest.raises(MagicError) as ei:
        potsherd.read(path)
    e = ei.value
    assert e.offset == 0
    assert "3Space 2.x" in str(e)
    assert e.found == path.read_bytes()[:4].hex()


def test_documented_quirks_are_where_sources_says():
    """Name garbage, CDCDCDCD texture counts, non-zero v8 object pads."""
    for p in PERS_FILES:
        quirks = SOURCES[_rel(p)]["quirks"]
        doc = potsherd.read(p)
        root = doc.root
        if root["className"] != b"TS::Shape":
            continue
        pay = root["payload"]
        garbage = any(bytes(n).partition(b"\0")[2].strip(b"\0") for n in pay["names"]["name"])
        assert garbage == ("name_garbage_after_nul" in quirks)
        cdcd = any(m["version"] >= 2 and m["payload"]["mTextureVertsPerFrame"] == geometry.UNSET_TVPF
                   for m in pay["meshes"])
        assert cdcd == ("tvpf_CDCDCDCD" in quirks)
        if root["version"] == 8:
            pads = pay["objects"]["_pad0"]
            nonzero = [bytes(x) for x in pads if bytes(x) != b"\0\0"]
            assert bool(nonzero) == ("obj_pad_nonzero" in quirks)
            assert set(nonzero) <= {b"\x12\x00"}


def test_rpgtree_details():
    doc = potsherd.read(CORPUS / "kronos" / "RPGTREE1.DTS")
    info = doc.info()
    assert info["class"] == "TS::Shape" and info["version"] == 8
    assert info["material_list"] == "TS::MaterialList v4"
    assert doc.root["payload"]["hasMaterials"] == 1


def test_every_mesh_decodes_to_geometry():
    """Helpers work on every real mesh: positions are finite and inside the
    quantisation box, face indices are in range."""
    n_meshes = implied = 0
    for p in PERS_FILES:
        root = potsherd.read(p).root
        if root["className"] != b"TS::Shape":
            continue
        for m in root["payload"]["meshes"]:
            pos = geometry.frame_positions(m)
            pay = m["payload"]
            n_frames = len(pay["frames"]) or (1 if m["version"] < 3 else 0)
            implied += len(pay["frames"]) == 0 and m["version"] < 3
            assert pos.shape == (n_frames, pay["mVertsPerFrame"], 3)
            assert np.isfinite(pos).all()
            fi = geometry.face_indices(m)
            assert fi["vertex"].shape == (n_frames, len(pay["faces"]), 3)
            nrm = geometry.frame_normals(m)
            assert np.allclose(np.linalg.norm(nrm, axis=-1), 1.0, atol=2e-3)
            n_meshes += 1
    assert implied == 21                       # v1/v2 meshes with no frame records
    assert n_meshes == sum(c for s in SOURCES.values() for k, c in s["classes"].items()
                           if k.startswith("TS::CelAnimMesh"))
