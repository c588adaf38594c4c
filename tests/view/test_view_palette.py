"""The viewer's palette picker (issues 41, 43): for a Darkstar model whose bitmaps carry a
``PiDX``, ``/api/palettes`` names the palette each bitmap was drawn with and the other served
palettes holding that index (as ``palette=`` values relative to the served folder); the page
shows them, and choosing one re-asks ``/api/glb`` with ``palette=`` and redraws.  Fixture:
an interior whose wall bitmap has PiDX 31; ``a.ppl`` holds 31 as a red ramp, ``b.ppl`` as a
blue ramp, ``c.ppl`` only index 7 (never offered).  Screenshots go to
``build/test-artifacts/``."""
from __future__ import annotations

import base64
import io
import json
import shutil
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from potsherd.examples import write_examples
from potsherd.formats.darkstar import world_examples as we
from potsherd.view import make_server
from potsherd.view.server import vendor_dir

from darkstar.test_palette_choice import BLUE, RED, bitmap, pl98   # tests/ is on pythonpath

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run"]
BACKGROUND = np.array([0x2b, 0x2d, 0x30])
GREEN = np.zeros((256, 3), np.uint8)
GREEN[:, 1] = np.arange(256)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    top = tmp_path_factory.mktemp("pal")
    root = top / "game"
    root.mkdir()
    write_examples(str(root))                      # cube.n3pmesh: a model without bitmaps
    files = dict(we.interior_files())
    files["wall.bmp"] = bitmap(31)
    for name in ("cube.dis", "cube-0.dig", "cube-0.dil", "cube.dml", "wall.bmp"):
        (root / name).write_bytes(files[name])
    (root / "a.ppl").write_bytes(pl98([0xFFFFFFFF, 31], [GREEN, RED]))
    (root / "b.ppl").write_bytes(pl98([31], [BLUE]))
    (root / "c.ppl").write_bytes(pl98([7], [GREEN]))
    (top / "outside.ppl").write_bytes(pl98([31], [GREEN]))
    server = make_server(root, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_api_names_the_palette_used_and_the_others_holding_the_index(served):
    root, url = served
    status, body = get_json(url + "api/palettes?path=cube.dis")
    assert status == 200
    assert body == {"palette": "", "images": [{"image": "wall.bmp", "palette": "a.ppl",
                                               "paletteIndex": 31, "alternatives": ["b.ppl"]}],
                    "choices": ["a.ppl", "b.ppl"]}         # c.ppl lacks index 31: not offered
    assert str(root) not in json.dumps(body)               # no absolute path leaves
    status, body = get_json(url + "api/palettes?path=cube.dis&palette=b.ppl")
    assert status == 200 and body["palette"] == "b.ppl"
    assert body["images"][0]["palette"] == "b.ppl" and body["images"][0]["paletteIndex"] == 31
    # the model itself names the palettes relative to the served folder, never absolute
    with urllib.request.urlopen(url + "api/glb?path=cube.dis", timeout=60) as r:
        glb = r.read()
    n = int.from_bytes(glb[12:16], "little")
    extras = json.loads(glb[20:20 + n])["images"][0]["extras"]
    assert extras["palette"] == "a.ppl" and extras["paletteAlternatives"] == ["b.ppl"]
    assert str(root).encode() not in glb
    # a model without bitmaps: nothing to pick
    status, body = get_json(url + "api/palettes?path=cube.n3pmesh")
    assert status == 200 and body["images"] == [] and body["choices"] == []


def test_api_palette_option_is_confined_and_declared(served):
    _, url = served
    status, body = get_json(url + "api/palettes?path=cube.dis&palette=" + quote("../outside.ppl"))
    assert status == 403 and body["error"] == "Forbidden"
    status, body = get_json(url + "api/palettes?path=cube.dis&palett=b.ppl")
    assert status == 400 and "valid options" in body["message"]


def _colour(page) -> np.ndarray:
    """Mean RGB of the canvas pixels that are not background."""
    page.wait_for_timeout(300)
    png = page.evaluate("document.getElementById('canvas').toDataURL('image/png')")
    from PIL import Image
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1])))
                     .convert("RGB")).astype(int)
    drawn = np.abs(img - BACKGROUND).sum(axis=2) > 24
    assert drawn.mean() > 0.01, "nothing drawn"
    return img[drawn].mean(axis=0)


@pytest.mark.chromium
def test_page_picker_redraws_with_the_chosen_palette(served):
    if CHROMIUM is None:
        pytest.skip("chromium not installed (Debian package chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    if vendor_dir() is None:
        pytest.skip("three.js not installed (npm ci --prefix tools/viewer)")
    _, url = served
    asked: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 850})
        errors: list = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: asked.append(r.url)
                    if "/api/glb" in r.url or "/api/texture" in r.url else None)
        try:
            # negative control: a model without bitmaps shows no picker
            page.goto(url + "#file=cube.n3pmesh")
            page.wait_for_function("window.potsherdViewer.modelLoaded && "
                                   "window.potsherdViewer.palettes === null")
            page.wait_for_timeout(300)
            assert page.eval_on_selector("#palette-box", "e => e.hidden")
            assert page.inner_text("#palette-used") == ""

            page.click("#file-list li[data-path='cube.dis']")
            page.wait_for_function("window.potsherdViewer.modelLoaded && "
                                   "window.potsherdViewer.palettes && "
                                   "window.potsherdViewer.framesDrawn > 3", timeout=60000)
            assert not page.eval_on_selector("#palette-box", "e => e.hidden")
            assert "wall.bmp: a.ppl (PiDX 31)" in page.inner_text("#palette-used")
            offered = page.eval_on_selector_all("#palette option", "os => os.map(o => o.value)")
            assert offered == ["", "a.ppl", "b.ppl"]                 # not c.ppl
            red = _colour(page)
            assert red[0] > red[2] + 20, red                        # drawn red by a.ppl
            page.screenshot(path=str((ARTIFACTS.mkdir(parents=True, exist_ok=True), ARTIFACTS)[1]
                                     / "view-palette-auto.png"))

            page.select_option("#palette", "b.ppl")
            page.wait_for_function("window.potsherdViewer.modelLoaded && "
                                   "window.potsherdViewer.palettes && "
                                   "window.potsherdViewer.palettes.palette === 'b.ppl' && "
                                   "window.potsherdViewer.framesDrawn > 3", timeout=60000)
            assert any("palette=b.ppl" in u for u in asked)
            assert "wall.bmp: b.ppl (PiDX 31)" in page.inner_text("#palette-used")
            blue = _colour(page)
            assert blue[2] > blue[0] + 20, blue                     # redrawn blue by b.ppl
            # the picker keeps the automatic choices to go back to
            assert page.eval_on_selector_all("#palette option", "os => os.map(o => o.value)") \
                == ["", "a.ppl", "b.ppl"]
            page.screenshot(path=str(ARTIFACTS / "view-palette-chosen.png"))

            page.select_option("#palette", "")
            page.wait_for_function("window.potsherdViewer.modelLoaded && "
                                   "window.potsherdViewer.palettes && "
                                   "window.potsherdViewer.palettes.palette === '' && "
                                   "window.potsherdViewer.framesDrawn > 3", timeout=60000)
            again = _colour(page)
            assert again[0] > again[2] + 20, again
            # a bitmap alone: drawn flat, with the same picker
            page.click("#file-list li[data-path='wall.bmp']")
            page.wait_for_function("window.potsherdViewer.textureLoaded && "
                                   "window.potsherdViewer.palettes", timeout=60000)
            assert not page.eval_on_selector("#texture", "e => e.hidden")
            assert not page.eval_on_selector("#palette-box", "e => e.hidden")
            assert "wall.bmp: a.ppl (PiDX 31)" in page.inner_text("#palette-used")
            page.select_option("#palette", "b.ppl")
            page.wait_for_function("window.potsherdViewer.textureLoaded && "
                                   "window.potsherdViewer.palettes && "
                                   "window.potsherdViewer.palettes.palette === 'b.ppl'")
            assert any("/api/texture?path=wall.bmp&palette=b.ppl" in u for u in asked)
            assert "wall.bmp: b.ppl (PiDX 31)" in page.inner_text("#palette-used")
            page.screenshot(path=str(ARTIFACTS / "view-palette-bitmap.png"))
            # another file: the picker state goes with the old one
            page.click("#file-list li[data-path='cube.n3pmesh']")
            page.wait_for_function("window.potsherdViewer.modelLoaded && "
                                   "window.potsherdViewer.file === 'cube.n3pmesh'")
            assert page.eval_on_selector("#palette-box", "e => e.hidden")
            assert errors == []
        finally:
            page.close()
            browser.close()


def test_api_texture_draws_a_bitmap_with_the_chosen_palette(served):
    _, url = served
    from PIL import Image

    def drawn(query: str) -> np.ndarray:
        with urllib.request.urlopen(url + "api/texture?path=wall.bmp" + query, timeout=60) as r:
            assert r.headers["Content-Type"] == "image/png"
            return np.asarray(Image.open(io.BytesIO(r.read())).convert("RGB")).astype(int)

    auto, blue = drawn(""), drawn("&palette=b.ppl")
    assert auto.shape == blue.shape == (4, 8, 3)
    assert auto[..., 1:].max() == 0 and auto[..., 0].max() > 0      # a.ppl: the red ramp
    assert blue[..., :2].max() == 0 and (blue[..., 2] == auto[..., 0]).all()  # same indices
    status, body = get_json(url + "api/palettes?path=wall.bmp")
    assert status == 200 and body["choices"] == ["a.ppl", "b.ppl"]
    assert body["images"][0]["paletteIndex"] == 31
    status, _ = get_json(url + "api/texture?path=wall.bmp&palette=" + quote("../outside.ppl"))
    assert status == 403
    status, body = get_json(url + "api/texture?path=cube.dis")
    assert status == 400 and "not a Phoenix bitmap" in body["message"]
    status, _ = get_json(url + "api/texture?path=wall.bmp&lod=1")
    assert status == 400
