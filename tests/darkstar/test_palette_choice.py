"""Which palette draws a Darkstar bitmap (issue 43): the PL98 sub-palette its
PiDX names, from its own volume, its world's volumes, its game tree, then
--data-root; without PiDX the context's palette; an index nobody holds is one
warning and a grey ramp.  Fixture trees built here; the corpus tier checks every
real bitmap (automatic choice == the explicit palette, pixel for pixel)."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import potsherd
from potsherd import registry
from potsherd.cli import main
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.phoenix import PPL, bitmap_field
from potsherd.formats.darkstar.textures import (PaletteFinder, draw_bitmap, grey_ramp,
                                                windows_bitmap, world_volume_names)
from potsherd.formats.darkstar.volumes import build_volume, list_members, member_bytes
from corpus_paths import CORPUS_ROOT


def pl98(indices: list[int], colours: list[np.ndarray], types: list[int] | None = None,
         flags: int = 0) -> bytes:
    """A PL98 of plain (type 0, no tables) sub-palettes with these indices and colours."""
    pals = []
    for i, (index, rgb) in enumerate(zip(indices, colours)):
        rgbx = np.zeros((256, 4), np.uint8)
        rgbx[:, :3] = rgb
        rgbx[:, 3] = flags
        pal = {"colors": rgbx, "paletteIndex": index, "paletteType": 0}
        pals.append(pal)
    root = {"tag": "PL98", "numPalettes": len(pals), "shadeShift": 0, "hazeLevels": 0,
            "hazeColor": 0, "allowedColorMatches": np.zeros(32, np.uint8), "palettes": pals,
            "hasQuantization": 0, "expansion": 0}
    return PPL.encode_tree(root)


RED = np.zeros((256, 3), np.uint8)
RED[:, 0] = np.arange(256)
BLUE = np.zeros((256, 3), np.uint8)
BLUE[:, 2] = np.arange(256)


def bitmap(pidx: int) -> bytes:
    return we.bitmap_bytes(8, 4, mips=1, palette_index=pidx)


def indices_of(data: bytes) -> np.ndarray:
    doc = potsherd.read(data, format="pbmp")
    from potsherd.formats.darkstar.phoenix import mip_levels
    return mip_levels(doc.root)[0]


def draw(spec: str, **kw):
    doc = registry.decode(potsherd.api.read_input(spec), path=spec)
    warnings: list[str] = []
    finder = PaletteFinder(spec, warnings=warnings, **kw)
    rgba, choice = draw_bitmap(doc.root, finder)
    return rgba, choice, warnings


def test_world_volume_names():
    assert world_volume_names("/g/marsDML.vol") == ["marsWorld.vol", "marsDML.vol", "marsTerrain.vol"]
    assert world_volume_names("lushWorld.vol")[2] == "lushTerrain.vol"
    assert world_volume_names("Darkstar.vol") == [] and world_volume_names("DML.vol") == []


def test_pidx_found_in_the_world_volume_not_the_first_palette(tmp_path):
    # the tree's first palette (a.ppl, alphabetically first) holds other indices: the old choice
    (tmp_path / "a.ppl").write_bytes(pl98([0xFFFFFFFF, 3], [BLUE, BLUE]))
    (tmp_path / "moonWorld.vol").write_bytes(build_volume(
        [("moon.day.ppl", pl98([0xFFFFFFFF, 1071, 7], [BLUE, RED, BLUE]))]))
    (tmp_path / "moonDML.vol").write_bytes(build_volume([("tile.bmp", bitmap(1071)),
                                                         ("sky.bmp", bitmap(7))]))
    rgba, choice, warnings = draw(f"{tmp_path}/moonDML.vol::tile.bmp")
    assert choice.spec == f"{tmp_path}/moonWorld.vol::moon.day.ppl" and choice.index == 1071
    idx = indices_of(bitmap(1071))
    assert (rgba[..., 0] == idx).all() and (rgba[..., 2] == 0).all()   # RED's sub-palette
    assert not warnings
    # the same pixels as naming that file (the explicit choice)
    named, nchoice, _ = draw(f"{tmp_path}/moonDML.vol::tile.bmp", palette=choice.spec)
    assert (named == rgba).all() and nchoice.how.startswith("named")
    # the old rule's palette gives other pixels (negative control)
    old, _, _ = draw(f"{tmp_path}/moonDML.vol::tile.bmp", palette=str(tmp_path / "a.ppl"))
    assert not (old == rgba).all()


def test_own_volume_before_the_world_and_alternatives_named(tmp_path):
    (tmp_path / "moonWorld.vol").write_bytes(build_volume(
        [("w.ppl", pl98([9], [BLUE])), ("x.bmp", bitmap(9))]))
    (tmp_path / "moonDML.vol").write_bytes(build_volume([("own.ppl", pl98([9], [RED])),
                                                         ("t.bmp", bitmap(9))]))
    _, choice, _ = draw(f"{tmp_path}/moonDML.vol::t.bmp")
    assert choice.spec.endswith("moonDML.vol::own.ppl")
    assert choice.alternatives == (f"{tmp_path}/moonWorld.vol::w.ppl",)
    assert "also in" in choice.describe()


def test_unreachable_index_is_one_warning_and_a_grey_ramp(tmp_path):
    (tmp_path / "p.ppl").write_bytes(pl98([1, 2], [RED, BLUE]))
    (tmp_path / "a.bmp").write_bytes(bitmap(44))
    (tmp_path / "b.bmp").write_bytes(bitmap(44))
    warnings: list[str] = []
    finder = PaletteFinder(str(tmp_path / "a.bmp"), warnings=warnings)
    for name in ("a.bmp", "b.bmp"):
        doc = potsherd.read(tmp_path / name)
        rgba, choice = draw_bitmap(doc.root, finder)
        idx = indices_of((tmp_path / name).read_bytes())
        assert not choice.found and (rgba[..., :3] == idx[..., None]).all()   # grey i
    assert len(warnings) == 1
    assert "no palette with index 44" in warnings[0] and "grey ramp" in warnings[0]
    assert "its folder" in warnings[0] and "its game tree" in warnings[0]
    # --data-root is looked in last, and then holds it
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "z.ppl").write_bytes(pl98([44], [RED]))
    _, choice, warnings = draw(str(tmp_path / "a.bmp"), data_root=str(other))
    assert choice.spec == str(other / "z.ppl") and not warnings


def test_the_library_reports_the_palette_choice_as_an_event_and_prints_nothing(tmp_path, capsys):
    """``extract_textures`` yields the choice as an ``info`` event (the command
    line prints it); a codec whose ``textures`` takes no options gets no ``info``."""
    from potsherd.export.textures import _takes_info, extract_textures
    from potsherd.formats.darkstar.textures import bitmap_textures
    (tmp_path / "b.ppl").write_bytes(pl98([5], [RED]))
    (tmp_path / "t.bmp").write_bytes(bitmap(5))
    events = list(extract_textures([str(tmp_path / "t.bmp")], str(tmp_path / "o")))
    infos = [(p, d) for e, p, d in events if e == "info"]
    assert len(infos) == 1 and infos[0][0] == str(tmp_path / "t.bmp")
    assert infos[0][1].startswith("palette ") and "b.ppl: holds its PiDX 5" in infos[0][1]
    assert [e for e, _, _ in events] == ["info", "ok"]
    assert capsys.readouterr() == ("", "")
    assert _takes_info(bitmap_textures) and not _takes_info(lambda doc: [])


def test_textures_command_draws_by_pidx_and_names_the_choice(tmp_path, capsys):
    (tmp_path / "a.ppl").write_bytes(pl98([3], [BLUE]))
    (tmp_path / "b.ppl").write_bytes(pl98([5], [RED]))
    (tmp_path / "t.bmp").write_bytes(bitmap(5))
    out = tmp_path / "o"
    assert main(["textures", str(tmp_path / "t.bmp"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "b.ppl: holds its PiDX 5" in err
    from PIL import Image
    auto = np.asarray(Image.open(out / "t.png"))
    assert main(["textures", str(tmp_path / "t.bmp"), "-o", str(tmp_path / "n"),
                 "--option", f"palette={tmp_path / 'b.ppl'}"]) == 0
    assert (np.asarray(Image.open(tmp_path / "n" / "t.png")) == auto).all()
    # a named palette lacking the index still overrides, and says so
    assert main(["textures", str(tmp_path / "t.bmp"), "-o", str(tmp_path / "m"),
                 "--option", f"palette={tmp_path / 'a.ppl'}"]) == 0
    assert "holds no palette index 5" in capsys.readouterr().err
    assert (np.asarray(Image.open(tmp_path / "m" / "t.png"))[..., 2] == indices_of(bitmap(5))).all()


def test_no_pidx_takes_the_context_palette(tmp_path):
    (tmp_path / "x.vol").write_bytes(build_volume([("w.ppl", pl98([0xFFFFFFFF, 5], [RED, BLUE])),
                                                   ("t.bmp", bitmap(0xFFFFFFFF))]))
    rgba, choice, warnings = draw(f"{tmp_path}/x.vol::t.bmp")
    assert choice.index is None and "no PiDX" in choice.how and "its volume x.vol" in choice.how
    assert (rgba[..., 0] == indices_of(bitmap(0xFFFFFFFF))).all()      # the first sub-palette


def test_translucent_bitmap_alpha_from_a_translucent_palette(tmp_path):
    data = bytearray(pl98([6], [RED], flags=0x40))
    # make the sub-palette translucent: type 2 needs its 64 KiB table and maps
    doc = potsherd.read(bytes(data), format="pl98")
    p = doc.root["palettes"][0]
    p.update(paletteType=2, transMap=np.zeros((256, 256), np.uint8),
             identityMap=np.arange(256, dtype=np.uint8),
             **{k: np.zeros(256, "<f4") for k in ("indexToR", "indexToG", "indexToB", "indexToA")})
    (tmp_path / "t.ppl").write_bytes(PPL.encode_tree(doc.root))
    (tmp_path / "g.bmp").write_bytes(we.bitmap_bytes(8, 4, mips=1, palette_index=6, attribute=4))
    rgba, choice, _ = draw(str(tmp_path / "g.bmp"))
    assert choice.palette_type == 2 and (rgba[..., 3] == 0x40).all()


def windows_bmp(pidx: int | None) -> bytes:
    from PIL import Image
    import io
    im = Image.fromarray(np.arange(32, dtype=np.uint8).reshape(4, 8), "P")
    ramp = np.arange(256, dtype=np.uint8)
    im.putpalette(np.stack([ramp, 255 - ramp, np.zeros(256, np.uint8)], axis=1).reshape(-1).tolist())
    buf = io.BytesIO()
    im.save(buf, format="BMP")
    data = bytearray(buf.getvalue())
    if pidx is not None:
        data[6:10] = struct.pack("<2H", 0xF5F7, pidx)
    return bytes(data)


def test_windows_bitmap_with_a_palette_index_is_drawn_by_it(tmp_path):
    bm, own = windows_bitmap(windows_bmp(12))
    assert bitmap_field(bm, "paletteIndex") == 12
    (tmp_path / "p.ppl").write_bytes(pl98([12], [RED]))
    finder = PaletteFinder(str(tmp_path / "w.bmp"))
    rgba, choice = draw_bitmap(bm, finder, own=own)
    assert choice.index == 12 and (rgba[..., 0] == np.arange(32).reshape(4, 8)).all()
    # without the engine's magic, its own colour table draws it
    bm, own = windows_bitmap(windows_bmp(None))
    rgba, choice = draw_bitmap(bm, PaletteFinder(str(tmp_path / "w.bmp")), own=own)
    assert "Windows" in choice.spec and tuple(rgba[0, 1, :3]) == (1, 254, 0)
    with pytest.raises(potsherd.FormatError):
        windows_bitmap(b"BM" + bytes(40))


def test_interior_material_from_a_windows_bitmap_in_a_volume(tmp_path):
    files = dict(we.interior_files())
    files["wall.bmp"] = windows_bmp(5)        # the .dml names wall.bmp; world.ppl holds 5
    (tmp_path / "cube.vol").write_bytes(build_volume(list(files.items())))
    from potsherd.export.gltf import document_scene
    scene = document_scene(potsherd.read(f"{tmp_path}/cube.vol::cube.dis"), {})
    wall = next(i for i in scene.images if i.name == "wall.bmp")
    assert wall.extras["paletteIndex"] == 5 and wall.extras["palette"].endswith("world.ppl")


# ----------------------------------------------------------------------------
# corpus tier: every real Phoenix bitmap


TRIBES = CORPUS_ROOT / "tribes" / "base"
WORLD = CORPUS_ROOT / "darkstar-world"


def corpus_bitmaps():
    """(spec, bitmap dict) of every Phoenix bitmap of the corpus (arrays' members too)."""
    out = []
    for vol in sorted(TRIBES.glob("*.vol")) if TRIBES.is_dir() else []:
        doc = potsherd.read(vol)
        for m in list_members(doc):
            if m.name.lower().endswith((".bmp", ".pba")):
                spec = f"{vol}::{m.name}"
                out.append((spec, registry.decode(member_bytes(doc, m), path=spec)))
    for p in sorted(WORLD.rglob("*")) if WORLD.is_dir() else []:
        if p.suffix.lower() in (".bmp", ".pba"):
            out.append((str(p), potsherd.read(p)))
    flat = []
    for spec, doc in out:
        if doc.format == "pbmp":
            flat.append((spec, doc.root))
        else:
            flat.extend((f"{spec}[{i}]", c["bitmap"]) for i, c in
                        enumerate(x for x in doc.root["chunks"] if "bitmap" in x))
    return flat


@pytest.mark.skipif(not TRIBES.is_dir() or not WORLD.is_dir(), reason="corpus absent")
def test_every_corpus_bitmap_held_by_a_reachable_pl98_draws_as_naming_it():
    finders: dict[str, PaletteFinder] = {}
    held = unreachable = 0
    missing: dict[str, list] = {}
    for spec, bm in corpus_bitmaps():
        src = spec.split("[")[0]
        place = src.rsplit("::", 1)[0] if "::" in src else str(Path(src).parent)
        warnings: list[str] = []
        finder = finders.setdefault(place, PaletteFinder(src, warnings=warnings))
        pidx = bitmap_field(bm, "paletteIndex")
        if pidx is None or pidx == 0xFFFFFFFF:
            continue
        holders = finder.holding(pidx)
        rgba, choice = draw_bitmap(bm, finder)
        if holders:
            held += 1
            assert choice.spec == holders[0] and choice.index == pidx
            pal = potsherd.read(holders[0])
            assert pidx in [p["paletteIndex"] for p in pal.root["palettes"]]
            named, _ = draw_bitmap(bm, PaletteFinder(src, palette=holders[0]))
            assert (named == rgba).all(), spec
        else:
            unreachable += 1
            assert not choice.found and (rgba[..., :3] == rgba[..., :1]).all()   # grey only
            missing.setdefault(pidx, []).append(spec.rsplit("/", 1)[-1])
    assert held == 200                      # marsWorld (1071) and marsDML (519) bitmaps
    # listed: the Starsiege bitmaps whose world palettes are not in the corpus
    assert {k: sorted(v) for k, v in missing.items()} == {
        1: ["gorg_tr.bmp", "tr_cpit.bmp"], 2: ["clogo2.bmp", "cslat6.bmp", "cyspin.bmp"],
        9: ["fx_blast1.bmp", "fx_elc01.bmp", "fx_elc02.bmp", "fx_elc03.bmp", "fx_elc04.bmp",
            "fx_elc05.bmp"]}
    warned = [w for f in finders.values() for w in f.warnings]
    for index in (1, 2, 9):
        assert sum(f"no palette with index {index} " in w for w in warned) == 1
    assert all("grey ramp" in w and "its game tree" in w for w in warned)


@pytest.mark.skipif(not TRIBES.is_dir(), reason="Tribes corpus absent")
def test_mars_sky_is_drawn_with_mars_day_not_darkpal(tmp_path, capsys):
    assert main(["textures", f"{TRIBES}/marsWorld.vol", "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "mars.day.ppl: holds its PiDX 1071" in err and "darkpal" not in err
    from PIL import Image
    auto = np.asarray(Image.open(tmp_path / "marsday_01.png"))
    assert main(["textures", f"{TRIBES}/marsWorld.vol::marsday_01.bmp", "-o", str(tmp_path / "n"),
                 "--option", f"palette={TRIBES}/marsWorld.vol::mars.day.ppl"]) == 0
    assert (np.asarray(Image.open(tmp_path / "n" / "marsday_01.png")) == auto).all()
    assert main(["textures", f"{TRIBES}/marsWorld.vol::marsday_01.bmp", "-o", str(tmp_path / "d"),
                 "--option", f"palette={TRIBES}/Darkstar.vol::darkpal.pal"]) == 0
    assert not (np.asarray(Image.open(tmp_path / "d" / "marsday_01.png")) == auto).all()


def test_interior_convert_finds_bitmaps_and_world_palette_under_data_root(tmp_path):
    """--data-root reaches an interior's bitmaps (in a world's DML volume) and the
    palette their PiDX names (in that world's World volume)."""
    files = dict(we.interior_files())
    game = tmp_path / "game"
    game.mkdir()
    (game / "moonDML.vol").write_bytes(build_volume(
        [("wall.bmp", bitmap(31)), ("roof.bmp", bitmap(32))]))
    (game / "moonWorld.vol").write_bytes(build_volume(
        [("moon.ppl", pl98([0xFFFFFFFF, 31, 32], [BLUE, RED, BLUE]))]))
    mission = tmp_path / "mission"
    mission.mkdir()
    for name in ("cube.dis", "cube-0.dig", "cube-0.dil", "cube.dml"):
        (mission / name).write_bytes(files[name])
    out = tmp_path / "cube.glb"
    assert main(["convert", str(mission / "cube.dis"), str(out), "--data-root", str(game),
                 "--option", "lighting=0"]) == 0
    from potsherd.export.gltf import document_scene
    scene = document_scene(potsherd.read(mission / "cube.dis"), {"data_root": str(game)})
    got = {i.name: (i.extras["palette"], i.extras["paletteIndex"]) for i in scene.images}
    assert got == {"wall.bmp": (f"{game}/moonWorld.vol::moon.ppl", 31),
                   "roof.bmp": (f"{game}/moonWorld.vol::moon.ppl", 32)}
    import io
    from PIL import Image
    wall = np.asarray(Image.open(io.BytesIO(next(i for i in scene.images if i.name == "wall.bmp").data)))
    assert (wall[..., 0] == indices_of(bitmap(31))).all() and (wall[..., 2] == 0).all()


def test_textures_of_a_volume_draw_its_windows_bitmaps_and_mission_volumes(tmp_path, capsys):
    (tmp_path / "w.vol").write_bytes(build_volume([("p.ppl", pl98([12], [RED])),
                                                   ("win.bmp", windows_bmp(12)),
                                                   ("own.bmp", windows_bmp(None))]))
    out = tmp_path / "o"
    assert main(["textures", str(tmp_path / "w.vol"), "-o", str(out)]) == 0
    from PIL import Image
    win = np.asarray(Image.open(out / "win.png"))
    assert (win[..., 0] == np.arange(32).reshape(4, 8)).all() and (win[..., 1] == 0).all()
    own = np.asarray(Image.open(out / "own.png"))
    assert tuple(own[0, 1, :3]) == (1, 254, 0)
    assert "own colour table" in capsys.readouterr().err
    # a volume a mission lists is searched after the bitmap's own place and world
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "missionPal.vol").write_bytes(build_volume([("m.ppl", pl98([77], [BLUE]))]))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.bmp").write_bytes(bitmap(77))
    _, choice, warnings = draw(str(tmp_path / "a" / "t.bmp"),
                               volumes=[str(other / "missionPal.vol")])
    assert choice.spec == f"{other}/missionPal.vol::m.ppl" and not warnings
    _, choice, warnings = draw(str(tmp_path / "a" / "t.bmp"))
    assert not choice.found and len(warnings) == 1


def test_an_unreadable_palette_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "a.ppl").write_bytes(b"PL98" + struct.pack("<4I", 0, 0, 0, 0))   # cut short
    (tmp_path / "b.ppl").write_bytes(pl98([0xFFFFFFFF, 4], [RED, BLUE]))
    (tmp_path / "t.bmp").write_bytes(bitmap(0xFFFFFFFF))
    (tmp_path / "u.bmp").write_bytes(bitmap(4))
    rgba, choice, warnings = draw(str(tmp_path / "t.bmp"))
    assert choice.spec == str(tmp_path / "b.ppl") and (rgba[..., 0] == indices_of(bitmap(0xFFFFFFFF))).all()
    assert len(warnings) == 1 and "a.ppl skipped" in warnings[0]
    rgba, choice, warnings = draw(str(tmp_path / "u.bmp"))
    assert choice.spec == str(tmp_path / "b.ppl") and (rgba[..., 2] == indices_of(bitmap(4))).all()
    assert len(warnings) == 1 and "a.ppl skipped" in warnings[0]


def test_export_then_import_keeps_the_bitmaps_pidx(tmp_path):
    """A texture exported from a bitmap of PiDX 31 is written back with PiDX 31 and
    that sub-palette (the same indices); without the index it is the file's first."""
    files = dict(we.interior_files())
    (tmp_path / "moon.ppl").write_bytes(pl98([0xFFFFFFFF, 31], [BLUE, RED]))
    files["wall.bmp"] = bitmap(31)
    for name in ("cube.dis", "cube-0.dig", "cube-0.dil", "cube.dml", "wall.bmp"):
        (tmp_path / name).write_bytes(files[name])
    from potsherd.export.gltf import document_scene
    from potsherd.formats.darkstar.importing import texture_bitmaps
    scene = document_scene(potsherd.read(tmp_path / "cube.dis"), {"lighting": False})
    wall = next(i for i in scene.images if i.name == "wall.bmp")
    assert wall.extras["paletteIndex"] == 31
    out = tmp_path / "out"
    out.mkdir()
    written = dict(texture_bitmaps(scene, str(tmp_path / "moon.ppl"), str(out)))
    doc = next(d for n, d in written.items() if n.lower().startswith("wall"))
    assert bitmap_field(doc.root, "paletteIndex") == 31
    from potsherd.formats.darkstar.phoenix import mip_levels
    assert (mip_levels(doc.root)[0][:4, :8] == indices_of(bitmap(31))).all()
    wall.extras["paletteIndex"] = 99               # an index the palette lacks: its first
    doc = next(d for n, d in texture_bitmaps(scene, str(tmp_path / "moon.ppl"), str(out))
               if n.lower().startswith("wall"))
    assert bitmap_field(doc.root, "paletteIndex") == 0xFFFFFFFF


def test_world_volumes_are_not_looked_for_in_the_working_folder(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "moonWorld.vol").write_bytes(build_volume([("m.ppl", pl98([8], [RED]))]))
    game = tmp_path / "game"
    game.mkdir()
    (game / "moonDML.vol").write_bytes(build_volume([("t.bmp", bitmap(8))]))
    monkeypatch.chdir(cwd)
    _, choice, warnings = draw(f"{game}/moonDML.vol::t.bmp")
    assert not choice.found and "no palette with index 8" in warnings[0]
    (game / "moonWorld.vol").write_bytes((cwd / "moonWorld.vol").read_bytes())
    _, choice, _ = draw(f"{game}/moonDML.vol::t.bmp")
    assert choice.spec == f"{game}/moonWorld.vol::m.ppl"
