"""Issue 44: every corpus FBX whose texture files exist exports with them in
the glb, and ufbx's material maps and the glb's agree slot by slot (by the
file each slot's image came from, and by its pixels).  The comparison is in
``ufbx_materials`` (run it as a script for the figures); textures absent from
the corpus are checked through stand-in pictures written beside a copy.

A file ufbx could not read (its child process crashed or refused it) is
skipped as such: the binding's failure is not potsherd's."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import ufbx_materials as um
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "fbx"
FILES = um.corpus_files(CORPUS) if CORPUS.is_dir() else []
EMBEDDED = "ufbx__blender_293_embedded_textures_7400_binary.fbx"


def _files():
    if not FILES:
        return [pytest.param(None, marks=pytest.mark.skip(reason="FBX corpus not present"))]
    return [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in FILES]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    """check_file's report for every corpus FBX, by path (ufbx in one child per file)."""
    pytest.importorskip("ufbx")
    if not FILES:
        pytest.skip("FBX corpus not present")
    tmp = tmp_path_factory.mktemp("ufbx_materials")
    out = {}
    for i, p in enumerate(FILES):
        (tmp / str(i)).mkdir()
        out[p] = um.check_file(p, tmp / str(i))
    return out


@pytest.mark.parametrize("path", _files())
def test_ufbx_and_the_glb_agree(path: Path, reports: dict) -> None:
    r = reports[path]
    if not r["ufbx"]:
        pytest.skip(f"ufbx could not read {path.name}")
    if not r["textured"]:
        return
    assert not r["duplicates"], "materials compared by name need distinct names"
    assert r["disagree"] == [], r["disagree"]
    assert r["pictures"] == [], r["pictures"]
    assert r["unwarned"] == [], "a texture not found is named in a warning"
    assert r.get("standin_disagree", []) == [], r["standin_disagree"]
    assert r.get("standin_pictures", []) == [], r["standin_pictures"]


def test_corpus_figures(reports: dict) -> None:
    """The coverage the agreement stands on (the figures of issue 44): a probe
    answering nothing, or a conversion losing slots, would pass the test above."""
    read = [r for r in reports.values() if r["ufbx"]]
    textured = [r for r in read if r["textured"]]
    assert len(read) == len(FILES) >= 45
    assert len(textured) >= 10
    assert sum(r["slots"] for r in textured) >= 30
    # every slot whose picture exists (embedded or beside the FBX) is in the glb
    assert sum(r["available"] for r in textured) >= 19
    assert sum(r["checked"] for r in textured) == sum(r["available"] for r in textured)
    assert sum(r.get("standin_slots", 0) for r in textured) >= 11


def _ufbx_texture(*names: str, content: str = "") -> dict:
    return {"name": "t", "type": 0, "files": [
        {"name": "t", "filename": n, "relative": n, "absolute": "C:\\x\\" + n, "content": content}
        for n in names]}


def test_a_wrong_mapping_is_detected() -> None:
    """Negative control of the comparison: swapped slots, a slot ufbx does not
    have, a file invented for an absent texture, a missing slot."""
    expected = {"m": {"base": _ufbx_texture("a.png"), "emissive": _ufbx_texture("e.png"),
                      "normal": _ufbx_texture("n.png")}}
    right = {"m": {"base": ("A.PNG", 0, "rgb"), "emissive": ("e.png", 1, ""),
                   "normal": ("n.png", 2, "")}}
    assert um.compare(expected, right, {}) == []
    swapped = copy.deepcopy(right)
    swapped["m"]["base"], swapped["m"]["emissive"] = right["m"]["emissive"], right["m"]["base"]
    assert len(um.compare(expected, swapped, {})) == 2
    extra = copy.deepcopy(right)
    extra["m"]["occlusion"] = ("a.png", 0, "")
    assert um.compare(expected, extra, {}) == ["m.occlusion: glb has 'a.png', ufbx has no texture"]
    assert len(um.compare(expected, right, {("m", "normal"): False})) == 1   # invented
    missing = copy.deepcopy(right)
    del missing["m"]["normal"]
    assert len(um.compare(expected, missing, {})) == 1
    assert um.compare(expected, missing, {("m", "normal"): False}) == []     # absent: fine


def test_a_wrong_picture_and_a_wrong_packing_record_are_detected(tmp_path) -> None:
    """Negative control on a real glb: the base colour slot compared with
    ufbx's emissive texture fails by name and by pixels; a glb whose packed
    image names the wrong channel sources fails by name."""
    pytest.importorskip("ufbx")
    src = CORPUS / EMBEDDED
    if not src.is_file():
        pytest.skip(f"{EMBEDDED} not in the FBX corpus")
    answer = um.ufbx_materials(src)
    assert answer is not None
    expected = um.expected_slots(answer)
    data, _ = um.convert(src, tmp_path / "e.glb")
    got = um.glb_slots(data)
    assert um.compare(expected, got, {}) == []
    checked, bad = um.picture_mismatches(data, src, expected)
    assert checked == 5 and bad == []
    (name,) = expected
    wrong = {name: dict(expected[name], base=expected[name]["emissive"])}
    assert len(um.compare(wrong, got, {})) == 1
    assert len(um.picture_mismatches(data, src, wrong)[1]) == 1
    # the metallic-roughness image claiming its channels the other way round
    doc, binary = um.read_glb(data)
    for img in doc["images"]:
        files = img.get("extras", {}).get("source_files", {})
        if "metallic" in files:
            files["metallic"], files["roughness"] = files["roughness"], files["metallic"]
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    import struct
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + \
        struct.pack("<II", len(binary), 0x004E4942) + binary
    forged = struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body
    assert len(um.compare(expected, um.glb_slots(forged), {})) == 2


def test_a_file_ufbx_cannot_read_is_reported_not_failed(tmp_path) -> None:
    pytest.importorskip("ufbx")
    bad = tmp_path / "not.fbx"
    bad.write_bytes(b"Kaydara FBX Binary  \x00\x1a\x00" + b"\xff" * 40)
    assert um.ufbx_materials(bad, attempts=1, timeout=60) is None
    assert um.check_file(bad, tmp_path, None) == {"file": "not.fbx", "ufbx": False}
