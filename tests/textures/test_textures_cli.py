"""``potsherd textures``: folders walked, PNGs written with the right pixels."""
from __future__ import annotations

import numpy as np
from PIL import Image

from potsherd import cli

from ntf_fixtures import A8R8G8B8, DXT1, ntf_bytes, pattern

RED_BLOCK = b"\x00\xf8\x00\xf8\x00\x00\x00\x00"  # DXT1 block, both endpoints pure red


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_textures_folder(tmp_path, capsys):
    src = tmp_path / "in"
    # 8x4 DXT1, no mips: 2 red blocks + a 4x2x2 fallback
    _write(src / "red.dxt", ntf_bytes(b"red", 3, 8, 4, DXT1, 0, RED_BLOCK * 2 + bytes(32)))
    argb = bytes([255, 0, 0, 128]) * 4  # blue, half transparent
    _write(src / "sub" / "Blue.DXT", ntf_bytes(b"blue", 3, 2, 2, A8R8G8B8, 0, argb))
    _write(src / "tiles.gtt", b"".join(
        ntf_bytes(b"t", 3, 4, 4, DXT1, 1, RED_BLOCK) for _ in range(2)))
    _write(src / "notes.txt", b"not a texture")
    out = tmp_path / "out"

    assert cli.main(["textures", str(src), "-o", str(out)]) == 0
    pngs = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert pngs == ["red.png", "sub/Blue.png", "tiles_0.png", "tiles_1.png"]
    red = np.asarray(Image.open(out / "red.png"))
    assert red.shape == (4, 8, 4) and (red == [255, 0, 0, 255]).all()
    blue = np.asarray(Image.open(out / "sub" / "Blue.png"))
    assert blue.shape == (2, 2, 4) and (blue == [0, 0, 255, 128]).all()
    assert "4 PNG written from 3 files, 0 failed" in capsys.readouterr().out


def test_textures_reports_undecodable_files(tmp_path, capsys):
    odd = tmp_path / "odd.dxt"
    odd.write_bytes(ntf_bytes(b"", 3, 4, 4, 0x20202020, 0, pattern(10, 1)))
    broken = tmp_path / "broken.dxt"
    broken.write_bytes(ntf_bytes(b"", 3, 8, 8, DXT1, 0, b"\0" * 5))
    out = tmp_path / "out"
    assert cli.main(["textures", str(odd), str(broken), "-o", str(out)]) == 1
    err = capsys.readouterr()
    assert "odd.dxt: odd: no image: no main level to decode (format unknown(0x20202020))" in err.err
    assert "FAIL" in err.err and "broken.dxt" in err.err
    assert "0 PNG written from 1 file, 2 failed" in err.out
    assert not list(out.rglob("*.png"))


def test_convert_to_png_and_refuse_other_targets():
    import io

    import pytest

    import potsherd
    from potsherd.core.errors import FormatError

    doc = potsherd.read(ntf_bytes(b"r", 3, 4, 4, DXT1, 0, RED_BLOCK + bytes(8)), format="dxt")
    png = doc.codec.convert(doc, "png", {})
    im = Image.open(io.BytesIO(png))
    assert im.format == "PNG" and (np.asarray(im) == [255, 0, 0, 255]).all()
    with pytest.raises(FormatError):
        doc.codec.convert(doc, "glb", {})
