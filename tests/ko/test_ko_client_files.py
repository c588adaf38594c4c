"""The Knight Online client files beyond meshes and characters (issue 38): collision
meshes, lights, cameras, scenes and the zone side files.

Unit tests build each kind from the engine's layout by hand; the corpus tier
round-trips every real file of these kinds through bytes and both JSON forms and
checks how much of each file is in fields.
"""
from __future__ import annotations

import collections
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from corpus_paths import CORPUS_ROOT
from potsherd.core.errors import CountError, FormatError
from potsherd.formats.ko.codecs import tlt_grid
from ko_bytes import f32, i32, s

CORPUS = CORPUS_ROOT / "ko"


def transform(name=b"t", pos=(1, 2, 3)):
    return s(name) + f32(*pos) + f32(0, 0, 0, 1) + f32(1, 1, 1) + i32(0, 0, 0)


def light_data(kind=1, number=2):
    return (i32(kind) + f32(1, .5, .25, 1) + f32(0, 0, 0, 0) + f32(.7, .35, .17, 1)
            + f32(4, 5, 6) + f32(0, -1, 0) + f32(100, 1, .5, .01, 0, 0, 0) + i32(1, number))


def decode(data: bytes, name: str):
    from potsherd import registry
    return registry.decode(data, path=name)


def roundtrip(data: bytes, name: str):
    doc = decode(data, name)
    assert doc.encode() == data
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.loads(json.dumps(doc.to_json(form)))).encode() == data
    assert doc.codec.opaque_bytes(doc) == 0 and not doc.warnings
    return doc


# ----------------------------------------------------------------------------
# records, by hand


def test_n3vmesh():
    data = s(b"fence") + i32(3) + f32(0, 0, 0, 1, 0, 0, 0, 1, 0) + i32(3) + struct.pack("<3H", 0, 1, 2)
    doc = roundtrip(data, "a.n3vmesh")
    assert doc.info()["triangles"] == 1
    assert np.asarray(doc.root["vertices"]).tolist()[3] == 1.0
    with pytest.raises(FormatError):
        decode(data[:-1], "a.n3vmesh")


def test_n3light_and_glo():
    one = transform(b"") + light_data()
    doc = roundtrip(one, "a.n3light")
    info = doc.info()
    assert (info["type"], info["number"], info["on"]) == ("point", 2, True)
    glo = i32(1, 2) + one + transform(b"x") + light_data(3, 0)
    doc = roundtrip(glo, "zone.glo")
    assert [lt["type"] for lt in doc.info()["lights"]] == ["point", "directional"]
    with pytest.raises(CountError):
        decode(i32(1, 1 << 28) + one, "zone.glo")


def test_n3camera():
    data = (transform(b"cam", (0, 1, 0)) + f32(0, 0, 1) + f32(0, 1, 0, 0, 0, 1, 0, 1, 0)
            + f32(.96, 1.33, .1, 100) + i32(0, 0, 640, 480) + f32(0, 1) + f32(*[0] * 48)
            + f32(*[0] * 24) + i32(1) + struct.pack("<I", 0xFF808080))
    doc = roundtrip(data, "a.n3camera")
    assert doc.info()["fov"] == pytest.approx(.96) and doc.info()["fog"]


def test_older_camera_layout():
    """cameraLayout 1 (the Intro camera): a 512 x 5 table, 5 normals and 4 corners
    after the up vector, no frustum planes; picked because it ends at EOF."""
    data = (transform(b"cam", (0, 1, 0)) + f32(0, 0, 1) + f32(0, 1, 0, 0, 0, 1, 0, 1, 0)
            + f32(*range(2560)) + f32(*[0] * 15) + f32(*[1] * 12)
            + f32(.96, 1.33, .1, 100) + i32(0, 0, 640, 480) + f32(0, 1) + f32(*[0] * 48)
            + i32(0) + struct.pack("<I", 0xFFFFFFFF))
    doc = roundtrip(data, "old.n3camera")
    assert doc.params == {"cameraLayout": 1}
    assert np.asarray(doc.root["camera"]["legacyTable"])[2559] == 2559
    assert doc.info()["fov"] == pytest.approx(.96) and "frustum" not in doc.root["camera"]


def test_n3scene_keeps_skipped_names():
    data = (i32(0) + f32(0, 0, 100) + i32(1) + s(b"a.n3camera") + i32(2) + s(b"l.n3light")
            + i32(-1) + i32(0) + i32(1) + s("검.n3chr".encode("cp949")))
    doc = roundtrip(data, "x.n3scene")
    assert doc.info()["characters"] == ["검.n3chr"]
    assert doc.root["lights"][1].raw_len == -1


def test_zone_tables():
    gev = i32(2) + i32(0, 0, 10, 10) + struct.pack("<h", 3) + i32(5, 5, 6, 6) + struct.pack("<h", -1)
    doc = roundtrip(gev, "z.gev")
    assert doc.root["events"]["eventType"].tolist() == [3, -1]
    gmd = i32(21) + "이파일".encode("cp949") + b"\0" * 74
    assert roundtrip(gmd, "z.gmd").root["zoneID"] == 21
    grs = b"GrassInfoFile\0" + b"\xcc" * 66 + i32(1) + i32(4) + b"grass.dxt\0" + b"\xcd" * 250
    assert roundtrip(grs, "z.grs").root["grasses"][0]["id"] == 4
    flag = (i32(1, 1) + b"flag1".ljust(84, b"\0") + f32(1, 2, 3, 0, 0, 0, 1, 2, 4, 2.5)
            + i32(0, 0, 0) + s(b"D:\\tex.dxt") + i32(0))
    for ext in ("z.flag", "z.gfo"):
        assert roundtrip(flag, ext).format == "flag"
    assert roundtrip(i32(3, 0, 7, 0), "z.opdsub").root["values"].tolist() == [0, 7, 0]
    with pytest.raises(CountError) as e:
        decode(i32(3, 0, 7), "z.opdsub")
    assert (e.value.offset, e.value.path) == (4, "opdsub.values")


def test_opdext():
    """A 32 x 32 zone: 2 x 2 cells of 16 m; one empty, one with a shape index and
    a collision triangle in subcell 5, then the trailing word."""
    cell = i32(3) + struct.pack("<HH", 1, 7) + i32(*[0] * 5) + i32(1, 0, 1, 2) + i32(*[0] * 10)
    data = (struct.pack("<H", 1) + s(b"zone") + b"\0\0" + f32(32, 32) + i32(1)
            + f32(0, 0, 0, 1, 0, 0, 0, 0, 1) + i32(0) + cell + i32(0) + i32(1)
            + struct.pack("<H", 0) + i32(*[0] * 16) + i32(12345))
    doc = roundtrip(data, "z.opdext")
    cells = doc.root["cells"]
    assert [c["flags"] for c in cells] == [0, 3, 0, 1]
    assert cells[1]["subcells"][5]["count"] == 1 and list(cells[1]["shapes"]) == [7]
    assert doc.root["trailer"] == 12345 and doc.info()["cellsUsed"] == 2
    with pytest.raises(FormatError):
        decode(data[:-5], "z.opdext")


def ntf(name=b"lm", w=2, h=2):
    """An A4R4G4B4 (format 26) NTF record without mip maps."""
    return s(name) + b"NTF\x03" + i32(w, h, 26, 0) + bytes(range(w * h * 2))


def test_tlt_grid_from_offsets():
    # 2 x 2 patches; patches (0,0) and (1,1) have light maps
    side = 2
    head = 4 + 4 * side * side
    p0 = i32(1) + i32(3, 4) + ntf()
    p1 = i32(2) + i32(0, 0) + ntf(b"a") + i32(7, 7) + ntf(b"b")
    offsets = [head, 0, 0, head + len(p0)]
    data = i32(0) + i32(*offsets) + p0 + p1
    assert tlt_grid(data) == (2, 2)
    doc = roundtrip(data, "z.tlt")
    assert doc.params == {"patchCount": 2, "patchBlocks": 2}
    assert [t["x"] for t in doc.root["patches"][1]["tiles"]] == [0, 7]
    empty = i32(0) + i32(0, 0, 0, 0, 0, 0, 0, 0, 0)
    assert tlt_grid(empty) == (3, 0) and roundtrip(empty, "e.tlt").root["patches"] == []
    with pytest.raises(FormatError):
        decode(i32(0) + i32(99, 0, 0, 0), "bad.tlt")  # an offset past the end: no grid


def test_tct_is_an_ntf_sequence():
    data = ntf(b"a") + ntf(b"b", 4, 4)
    doc = roundtrip(data, "z.tct")
    assert doc.format == "tct" and len(doc.root["textures"]) == 2


@pytest.mark.parametrize("name", ["a.brd", "a.lst", "a.mcn"])
def test_key_value_text(name):
    data = "count = 2\r\nmisc\\bird\\검.brd\nSpeed=1.5\n\nlast".encode("cp949")
    doc = roundtrip(data, name)
    assert doc.info()["entries"] == [["count", "2"], ["Speed", "1.5"]]
    with pytest.raises(FormatError, match="NUL"):
        decode(b"a = 1\0", name)


# ----------------------------------------------------------------------------
# corpus

KINDS = {".n3vmesh", ".n3light", ".n3camera", ".n3scene", ".tct", ".tlt", ".gev", ".grs",
         ".glo", ".gfo", ".ens", ".flag", ".gmd", ".opdsub", ".opdext", ".brd", ".lst", ".mcn"}
#: files the codecs keep partly raw (none since the older camera layout is read)
KNOWN_TRAILING: dict = {}


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.suffix.lower() in KINDS)


FILES = corpus_files()
IDS = [p.relative_to(CORPUS).as_posix() for p in FILES]


@pytest.mark.corpus
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_corpus_file_round_trips(path: Path):
    data = path.read_bytes()
    doc = potsherd.read(path)
    assert doc.encode() == data
    rel = path.relative_to(CORPUS).as_posix()
    if rel in KNOWN_TRAILING:
        assert len(doc.trailing) == KNOWN_TRAILING[rel]
    else:
        assert doc.codec.opaque_bytes(doc) == 0 and not doc.warnings
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.loads(json.dumps(doc.to_json(form)))).encode() == data
    json.dumps(doc.info())


@pytest.mark.corpus
def test_corpus_kinds_counted():
    if not FILES:
        pytest.skip("KO corpus not present")
    counts = collections.Counter(potsherd.read(p).format for p in FILES)
    assert counts == {"n3vmesh": 1, "n3light": 1, "n3camera": 1, "n3scene": 1, "tct": 1,
                      "tlt": 1, "gev": 1, "grs": 1, "glo": 1, "flag": 2, "ens": 1, "gmd": 1,
                      "opdsub": 1, "opdext": 1, "brd": 1, "lst": 1, "mcn": 1}


@pytest.mark.corpus
def test_corpus_values():
    if not FILES:
        pytest.skip("KO corpus not present")
    d = CORPUS / "data"
    assert potsherd.read(d / "Zones/moradon.tlt").params == {"patchCount": 16, "patchBlocks": 162}
    cam = potsherd.read(d / "Intro/0.N3Camera")
    assert cam.params == {"cameraLayout": 1} and cam.info()["far"] == 100.0
    glo = potsherd.read(d / "Zones/moradon.glo")
    assert glo.root["version"] == 1 and len(glo.root["lights"]) == 3
    gmd = potsherd.read(d / "Zones/freezone_b.gmd")
    assert gmd.root["comment"].split(b"\0")[0].decode("cp949") == "이파일 여는 사람 바보..^^"
    scene = potsherd.read(d / "ChrSelect/upc_el_rm_rog.n3scene").info()
    assert scene["characters"] and scene["cameras"]
    assert potsherd.read(d / "Misc/bird/FreeZone_bird.lst").info()["entries"] == [["count", "8"]]


def test_tlt_grid_is_linear_in_the_file():
    """A large file that is no light map: every side is tested in O(1) (prefix
    minima), so the search is quick and finds nothing."""
    import time
    rng = np.random.default_rng(1)
    data = i32(0) + rng.integers(-2**31, 2**31 - 1, 2_000_000, dtype=np.int64).astype("<i4").tobytes()
    t = time.process_time()
    assert tlt_grid(data) is None
    assert time.process_time() - t < 5.0
    with pytest.raises(FormatError):
        decode(data, "noise.tlt")
