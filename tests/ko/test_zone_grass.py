"""Grass of a zone (.gtd grass bytes + misc/grass/*.grs) as glTF points.

A 9 x 9 zone whose heights are a plane (so every spot's height is exact on
either triangle split), two grass tiles and a grass byte on the last sample row
(a sample with no tile: never planted)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd.export import gltf
from potsherd.formats.ko.zone_grass import _surface_height
from test_zone import f32, i32, name260, s   # the zone fixtures' byte helpers

MAP = 9



def height(x, z):
    return 0.5 * x + z


GRASS = {(2, 3): 0b101, (5, 5): 0b10, (8, 0): 0b1}


def gtd_bytes(grass_name: bytes = b"meadow") -> bytes:
    word = 1 | 1023 << 11 | 1023 << 21
    pts = b"".join(f32(height(x, z)) + struct.pack("<I", word)
                   for x in range(MAP) for z in range(MAP))
    grass = bytes(GRASS.get((x, z), 0) for x in range(MAP) for z in range(MAP))
    return (i32(2) + s(b"g") + i32(MAP) + pts + f32(0, 10) + grass + name260(grass_name)
            + i32(0) + i32(0) + i32(0) + i32(0))


def grs_bytes(ids=(1, 2)) -> bytes:
    head = b"GrassInfoFile" + b"\0" * (80 - 13)
    return head + i32(len(ids)) + b"".join(
        i32(g) + name260(f"Gr{g}.dxt".encode()) for g in ids)


@pytest.fixture()
def zone(tmp_path: Path) -> Path:
    root = tmp_path / "client"
    (root / "Zones").mkdir(parents=True)
    (root / "Misc" / "grass").mkdir(parents=True)
    (root / "Zones" / "g.gtd").write_bytes(gtd_bytes())
    (root / "Misc" / "grass" / "elmorad_start.grs").write_bytes(grs_bytes())
    for p in ((root / "Zones" / "g.gtd"), (root / "Misc" / "grass" / "elmorad_start.grs")):
        assert potsherd.write(potsherd.read(p)) == p.read_bytes()
    return root / "Zones" / "g.gtd"


def grass_node(scene):
    hits = [n for n in scene.nodes if n.name == "grass"]
    return hits[0] if hits else None


def test_grass_points_where_the_gtd_says(zone):
    sc = gltf.document_scene(potsherd.read(zone), {"objects": False})
    node = grass_node(sc)
    assert node is not None and node.extras["tiles"] == 2 and node.extras["points"] == 10
    assert node.extras["source"] == "misc\\grass\\elmorad_start.grs"
    prims = sc.meshes[node.mesh].primitives
    mats = [sc.materials[p.material] for p in prims]
    assert [m.extras["grassId"] for m in mats] == [1, 2, 4]
    assert [m.extras["texture"] for m in mats] == ["misc\\grass\\Gr1.dxt", "misc\\grass\\Gr2.dxt", ""]
    assert all(p.mode == 0 for p in prims)
    # tile (2, 3) grows kinds 1 and 4: boards alternate 1, 4, 1, 4, 1 over the 5 spots
    assert [len(p.positions) for p in prims] == [3, 5, 2]
    centre = prims[0].positions[0]
    assert centre.tolist() == pytest.approx([-10.0, height(2.5, 3.5), 14.0])
    assert prims[1].positions[:, 0].min() >= -24 and prims[1].positions[:, 0].max() <= -20
    # every point lies on the terrain plane
    for p in prims:
        x, z = -p.positions[:, 0] / 4, p.positions[:, 2] / 4
        assert np.allclose(p.positions[:, 1], height(x, z))
    assert "grass: kinds [4] not in the .grs; placed without a texture name" in sc.warnings


def test_the_named_grs_is_taken_first_and_grass_can_be_turned_off(zone):
    (zone.parent.parent / "Misc" / "grass" / "meadow.grs").write_bytes(grs_bytes((1, 2, 4)))
    sc = gltf.document_scene(potsherd.read(zone), {"objects": False})
    node = grass_node(sc)
    assert node.extras["source"] == "misc\\grass\\meadow.grs"
    assert not any(w.startswith("grass:") for w in sc.warnings)
    off = gltf.document_scene(potsherd.read(zone), {"objects": False, "grass": "0"})
    assert grass_node(off) is None


def test_no_grs_still_places_and_says_so(zone):
    (zone.parent.parent / "Misc" / "grass" / "elmorad_start.grs").unlink()
    sc = gltf.document_scene(potsherd.read(zone), {"objects": False})
    assert grass_node(sc).extras["points"] == 10
    assert any(w.startswith("grass: misc\\grass\\meadow.grs / misc\\grass\\elmorad_start.grs "
                            "not found") for w in sc.warnings)


def test_a_zone_without_grass_has_no_grass_node(tmp_path):
    data = bytearray(gtd_bytes())
    start = 4 + 4 + 1 + 4 + MAP * MAP * 8 + 8
    data[start:start + MAP * MAP] = bytes(MAP * MAP)
    p = tmp_path / "bare.gtd"
    p.write_bytes(bytes(data))
    assert grass_node(gltf.document_scene(potsherd.read(p), {"objects": False})) is None


def test_surface_height_follows_the_triangle_split():
    h = np.zeros((3, 3))
    h[1, 1] = 4.0                        # one raised sample
    # tile (0, 0) is even: diagonal (0,0)-(1,1); at (0.5, 0.5) on it: 2
    # tile (1, 0) is odd: diagonal (1,1)-(2,0); at (1.25, 0.25) below it: from 00/10/01
    got = _surface_height(h, np.array([0.5, 0.75, 1.25]), np.array([0.5, 0.25, 0.25]))
    assert got.tolist() == pytest.approx([2.0, 1.0, 1.0])


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for the glTF validator")
def test_grass_zone_passes_the_validator(zone, tmp_path):
    from potsherd.export.validate import validate_gltf, validator_available
    if not validator_available():
        pytest.skip("tools/gltf-validator not installed")
    out = tmp_path / "g.glb"
    gltf.export_document(potsherd.read(zone), out, options={"objects": False})
    report = validate_gltf(out)
    assert report["errors"] == 0 and report["warnings"] == 0, report["messages"][:5]
