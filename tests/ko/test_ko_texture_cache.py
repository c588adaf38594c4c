"""A texture used by several scenes of one batch is decoded and PNG-encoded
once; an edited texture file (new mtime or size) is read again."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image as PILImage

import potsherd
from potsherd.formats.ko import scene_materials as ko_materials
from potsherd.formats.ko.scene import Resolver
from potsherd.formats.ko.textures_encode import encode_ntf
from potsherd.scene import Image, Scene


def write_dxt(path, colour):
    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[...] = colour
    rec = encode_ntf(PILImage.fromarray(rgba, "RGBA"), "tex")
    path.write_bytes(potsherd.Document("dxt", rec, {}, b"", [], {}).encode())


def png_pixel(image: Image):
    return PILImage.open(io.BytesIO(image.data)).convert("RGBA").getpixel((0, 0))


@pytest.fixture()
def count_png_encodes(monkeypatch):
    calls = []
    original = Image.from_pil.__func__

    def counting(cls, img, name="", **kw):
        calls.append(name)
        return original(cls, img, name, **kw)

    monkeypatch.setattr(Image, "from_pil", classmethod(counting))
    monkeypatch.setattr(ko_materials, "_TEXTURE_IMAGES", {})
    return calls


def scene_image(folder, ref="tex.dxt"):
    scene = Scene()
    mats = ko_materials.Materials(scene, Resolver(str(folder / "part.n3pmesh"), None))
    index = mats.image(ref)
    assert index is not None
    return scene, scene.images[index]


def test_one_encode_per_texture_per_batch_and_again_after_an_edit(tmp_path, count_png_encodes):
    tex = tmp_path / "tex.dxt"
    write_dxt(tex, (255, 0, 0, 255))
    first_scene, first = scene_image(tmp_path)
    second_scene, second = scene_image(tmp_path, "TEX.DXT")  # any case, as N3 references are
    assert count_png_encodes == ["tex"]
    assert second.data == first.data and second.name == first.name == "tex"
    assert second is not first  # each scene owns its image
    assert png_pixel(second)[:3] == (255, 0, 0)

    write_dxt(tex, (0, 0, 255, 255))  # edited: same size, later mtime
    st = os.stat(tex)
    os.utime(tex, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    _, third = scene_image(tmp_path)
    assert count_png_encodes == ["tex", "tex"]
    assert png_pixel(third)[:3] == (0, 0, 255)


def test_cache_is_bounded_by_bytes(tmp_path, count_png_encodes, monkeypatch):
    monkeypatch.setattr(ko_materials, "TEXTURE_CACHE_BYTES", 1)  # nothing fits
    write_dxt(tmp_path / "tex.dxt", (0, 255, 0, 255))
    scene_image(tmp_path)
    scene_image(tmp_path)
    assert count_png_encodes == ["tex", "tex"]
    assert ko_materials._TEXTURE_IMAGES == {}
