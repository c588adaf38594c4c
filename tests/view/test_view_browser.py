"""The viewer page in headless Chromium (Debian's ``chromium``, driven by Playwright): for a
KO character, a Darkstar shape, an FBX scene and a TRLE moveable it must draw the model, show
the file's field names, highlight the right bytes for a clicked field, select the field of a
clicked byte, and log no errors.  Screenshots go to ``build/test-artifacts/``.

Skips cleanly without Chromium, Playwright, three.js (``npm ci --prefix tools/viewer``) or the
corpus."""
from __future__ import annotations

import base64
import io
import json
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from corpus_paths import CORPUS_ROOT

ROOT = Path(__file__).resolve().parents[2]
CORPUS = CORPUS_ROOT
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.chromium, pytest.mark.slow]
if CHROMIUM is None:
    pytest.skip("chromium not installed (Debian package chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) not installed")
if not CORPUS.is_dir():
    pytest.skip("shared corpus not present", allow_module_level=True)

from potsherd.view import make_server  # noqa: E402
from potsherd.view.server import Site, vendor_dir  # noqa: E402

if vendor_dir() is None:
    pytest.skip("three.js not installed (npm ci --prefix tools/viewer)", allow_module_level=True)

BACKGROUND = np.array([0x2b, 0x2d, 0x30])
ARGS = ["--no-sandbox", "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run"]


def _glb_meshes(data: bytes) -> int:
    n = struct.unpack_from("<I", data, 12)[0]
    return len(json.loads(data[20:20 + n]).get("meshes", []))


def _ko_character() -> tuple[Path, str]:
    """The smallest corpus .n3chr whose character resolves to meshes inside ko/data."""
    root = CORPUS / "ko" / "data"
    site = Site(root)
    found = []
    for path in sorted(root.rglob("*.n3chr")):
        rel = path.relative_to(root).as_posix()
        try:
            glb = site.glb(rel, {})
        except Exception:  # noqa: BLE001 - this one does not resolve; try the next
            continue
        if _glb_meshes(glb):
            found.append((len(glb), rel))
    if not found:
        pytest.skip("no resolvable KO character in the corpus")
    return root, min(found)[1]


def _trle_moveable(tmp: Path) -> tuple[Path, str]:
    wad = CORPUS / "tr4wad" / "tut1" / "tut1.WAD"
    out = tmp / "trle"
    out.mkdir()
    run = subprocess.run([sys.executable, "-m", "potsherd", "trle", "extract", str(wad),
                          "--moveable", "0", "-o", str(out / "lara.trwad")],
                         capture_output=True, text=True)
    if run.returncode:
        pytest.skip(f"trle extract failed: {run.stderr.strip()}")
    return out, "lara.trwad"


def _serve(root: Path):
    server = make_server(root, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


CASES = {
    "ko": lambda tmp: _ko_character(),
    "darkstar": lambda tmp: (CORPUS / "dts", "kronos/Crossbow.dts"),
    "fbx": lambda tmp: (CORPUS / "fbx", "ufbx__maya_kenney_character_7700_binary.fbx"),
    "trle": _trle_moveable,
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_page_draws_shows_fields_and_links_tree_and_hex(browser, family, tmp_path):
    root, rel = CASES[family](tmp_path)
    if not (root / rel).is_file():
        pytest.skip(f"{rel} not in the corpus")
    server, url = _serve(root)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url + "#file=" + rel)
        page.wait_for_function("window.potsherdViewer && window.potsherdViewer.modelLoaded "
                               "&& window.potsherdViewer.framesDrawn > 3", timeout=90000)

        # the canvas shows a model: a share of its pixels differs from the background
        png = page.evaluate("document.getElementById('canvas').toDataURL('image/png')")
        from PIL import Image
        img = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1])))
                         .convert("RGB")).astype(int)
        drawn = np.abs(img - BACKGROUND).sum(axis=2) > 24
        assert drawn.mean() > 0.01, f"canvas nearly blank ({drawn.mean():.4f} drawn)"
        assert drawn.mean() < 0.99

        # the tree shows the document's own top-level field names
        doc = json.loads(page.evaluate(f"fetch('/api/doc?path={rel}').then(r => r.text())"))
        names = [c["name"] for c in doc["tree"]["children"]]
        labels = [c.get("label") for c in doc["tree"]["children"] if c.get("label")]
        tree_text = page.inner_text("#tree")
        for want in (labels or names)[:5]:
            assert want in tree_text

        # clicking a field highlights exactly its bytes in the hex pane
        small = next(c for c in doc["tree"]["children"]
                     if c["span"] and 0 < c["span"][1] - c["span"][0] <= 64
                     and c["span"][1] <= 4096)
        page.click(f"#tree li[data-path='{small['path']}'] > .row")
        lit = page.eval_on_selector_all("#hex .b.hl", "els => els.map(e => +e.dataset.offset)")
        assert lit == list(range(*small["span"]))

        # clicking a byte selects the field that holds it
        target = small["span"][0]
        page.click(f"#hex .b[data-offset='{target}']")
        page.wait_for_function("document.querySelector('#tree .row.selected')")
        selected = page.eval_on_selector("#tree .row.selected", "e => e.parentElement.dataset.path")
        hit = json.loads(page.evaluate(
            f"fetch('/api/field?path={rel}&offset={target}').then(r => r.text())"))
        assert selected == hit["path"]
        assert hit["path"].startswith(small["path"])

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"view-{family}.png"))
        assert errors == []
    finally:
        page.close()
        server.shutdown()
        server.server_close()
