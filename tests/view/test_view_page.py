"""The viewer page's state in headless Chromium (issue 41), on small files the tests make:
the "no 3D view" message only for the file that has none, one state per opened file (a file
that fails to decode clears the previous model, header, tree and hex), record arrays as
tables of columns with a row pager.  Each fix has its negative control.  Screenshots go to
``build/test-artifacts/``.  Skips without Chromium, Playwright or three.js."""
from __future__ import annotations

import base64
import io
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.chromium]
if CHROMIUM is None:
    pytest.skip("chromium not installed (Debian package chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) not installed")

import potsherd  # noqa: E402
from potsherd.examples import write_examples  # noqa: E402
from potsherd.view import make_server  # noqa: E402
from potsherd.view.server import vendor_dir  # noqa: E402

if vendor_dir() is None:
    pytest.skip("three.js not installed (npm ci --prefix tools/viewer)", allow_module_level=True)

ARGS = ["--no-sandbox", "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run"]
BACKGROUND = np.array([0x2b, 0x2d, 0x30])
ROWS = 250


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    write_examples(str(root))
    n = 4   # a RIFF palette: a format without a 3D view
    (root / "colours.pal").write_bytes(b"RIFF" + struct.pack("<I", 4 + 8 + 4 + 4 * n) + b"PAL "
                                       + b"data" + struct.pack("<IHH", 4 + 4 * n, 0x300, n)
                                       + bytes(range(16)))
    (root / "broken.n3pmesh").write_bytes(b"\x05\x00\x00\x00abc")
    doc = potsherd.read(root / "cube.n3pmesh")   # a mesh with a long collapse table
    rows = np.zeros(ROWS, dtype=doc.root["collapses"].dtype)
    rows["indicesToLose"] = np.arange(ROWS)
    rows["collapseTo"] = 7
    doc.root["collapses"], doc.root["collapseCount"] = rows, ROWS
    (root / "table.n3pmesh").write_bytes(potsherd.write(doc))
    server = make_server(root, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, site):
    pg = browser.new_page(viewport={"width": 1300, "height": 850})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    pg.close()


def _open(page, rel: str) -> None:
    page.click(f"#file-list li[data-path='{rel}']")


def _model_drawn(page) -> None:
    page.wait_for_function("window.potsherdViewer.modelLoaded && window.potsherdViewer.framesDrawn > 3",
                           timeout=60000)


def _drawn_share(page) -> float:
    page.wait_for_timeout(300)   # a few frames after the change
    png = page.evaluate("document.getElementById('canvas').toDataURL('image/png')")
    from PIL import Image
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1])))
                     .convert("RGB")).astype(int)
    return float((np.abs(img - BACKGROUND).sum(axis=2) > 24).mean())


def _visible(page, sel: str) -> bool:
    return page.eval_on_selector(sel, "e => getComputedStyle(e).display !== 'none'")


def test_no_3d_message_only_for_the_file_without_one(page, site):
    _, url = site
    page.goto(url + "#file=colours.pal")
    page.wait_for_function("document.getElementById('no3d').textContent.includes('no 3D view')")
    assert _visible(page, "#no3d")                      # shown for the palette
    _open(page, "cube.n3pmesh")
    _model_drawn(page)
    assert not _visible(page, "#no3d")                  # and gone for the mesh
    assert _drawn_share(page) > 0.01
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "view-no3d-cleared.png"))
    assert page.errors == []


def test_a_file_that_fails_clears_the_previous_one(page, site):
    _, url = site
    page.goto(url + "#file=cube.n3pmesh")
    _model_drawn(page)
    # negative control: the mesh fills every pane
    assert _drawn_share(page) > 0.01
    assert page.inner_text("#doc-summary") and page.inner_text("#hex") and \
        "vertices" in page.inner_text("#tree")
    _open(page, "broken.n3pmesh")
    page.wait_for_function("!document.getElementById('error-panel').hidden")
    assert "broken.n3pmesh" in page.inner_text("#error-panel")
    assert page.evaluate("window.potsherdViewer.modelLoaded") is False
    assert _drawn_share(page) < 0.001                   # no model left drawing
    for sel in ("#doc-summary", "#hex", "#tree", "#hex-range", "#warnings"):
        assert page.inner_text(sel).strip() == "", sel
    page.screenshot(path=str(ARTIFACTS / "view-failed-file-cleared.png"))
    _open(page, "cube.n3pmesh")                         # and the next file opens normally
    _model_drawn(page)
    assert not _visible(page, "#error-panel")
    assert page.errors == []


def test_record_arrays_are_tables_with_a_row_pager(page, site):
    root, url = site
    page.goto(url + "#file=table.n3pmesh")
    page.wait_for_selector("#tree li[data-path='/root/collapses']")
    row = page.inner_text("#tree li[data-path='/root/collapses'] > .row")
    assert "table[250]" in row and "indicesToLose" in row
    assert "('" not in page.inner_text("#tree") and "<i4" not in page.inner_text("#tree")
    page.click("#tree li[data-path='/root/collapses'] > .row")
    page.wait_for_selector("#tree table.records")
    heads = page.eval_on_selector_all("#tree table.records th", "els => els.map(e => e.textContent)")
    assert heads == ["#", "indicesToLose", "indicesToChange", "verticesToLose",
                     "indexChangesOffset", "collapseTo", "shouldCollapse", "padding"]
    cells = page.eval_on_selector_all("#tree table.records tbody tr",
                                      "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert len(cells) == 100 and cells[0][:2] == ["0", "0"] and cells[99][:2] == ["99", "99"]
    assert cells[5][5] == "7" and cells[5][7] == "000000"
    # the row pager: the next page, then back
    page.click("#tree .pager button:last-child")
    page.wait_for_function("document.querySelector('#tree table.records tbody tr').dataset.index === '100'")
    assert "rows 100–200 of 250" in page.inner_text("#tree .pager")
    page.click("#tree .pager button:last-child")
    page.wait_for_function("document.querySelector('#tree table.records tbody tr').dataset.index === '200'")
    assert page.eval_on_selector("#tree .pager button:last-child", "b => b.disabled")
    # a row click lights exactly that record's bytes
    data = (root / "table.n3pmesh").read_bytes()
    page.click("#tree table.records tbody tr[data-index='203']")
    page.wait_for_function("document.querySelectorAll('#hex .b.hl').length === 24")
    lit = page.eval_on_selector_all("#hex .b.hl", "els => els.map(e => +e.dataset.offset)")
    assert len(lit) == 24 and lit == list(range(lit[0], lit[0] + 24))
    assert struct.unpack_from("<i", data, lit[0])[0] == 203
    page.screenshot(path=str(ARTIFACTS / "view-table.png"))
    page.click("#tree .pager button:first-child")
    page.wait_for_function("document.querySelector('#tree table.records tbody tr').dataset.index === '100'")
    assert page.errors == []


def test_tree_opens_first_and_the_model_after_with_progress(page, site):
    """A big file's tree and hex show while its model is still being built (issue 41: a
    whole TR4 wad), with the seconds so far; the model replaces the message when it comes.
    The conversion is held back here by intercepting ``/api/glb``."""
    _, url = site
    held: list = []
    page.route("**/api/glb*", lambda route: held.append(route))
    page.goto(url + "#file=cube.n3pmesh")
    page.wait_for_function("document.querySelector('#tree li') && "
                           "document.getElementById('hex').textContent.length > 0")
    page.wait_for_function("/building the 3D view… [1-9][0-9]* s/"
                           ".test(document.getElementById('status').textContent)", timeout=10000)
    assert len(held) == 1
    assert "vertices" in page.inner_text("#tree")           # the tree is there ...
    assert page.evaluate("window.potsherdViewer.modelLoaded") is False   # ... the model not yet
    assert _drawn_share(page) < 0.001
    page.screenshot(path=str((ARTIFACTS.mkdir(parents=True, exist_ok=True), ARTIFACTS)[1]
                             / "view-tree-first.png"))
    held[0].continue_()
    _model_drawn(page)
    assert page.inner_text("#status").strip() == ""
    assert _drawn_share(page) > 0.01
    page.unroute("**/api/glb*")
    assert page.errors == []


def test_a_remote_server_works_with_the_printed_token_only(browser, site):
    """--allow-remote: the printed URL (with the token) opens the page, the model and its
    modules load through the cookie it sets; the same URL without the token is refused."""
    root, _ = site
    server = make_server(root, host="0.0.0.0", port=0, allow_remote=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pg = browser.new_page(viewport={"width": 1000, "height": 700})
    errors: list = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        base = f"http://127.0.0.1:{server.port}/"
        assert pg.goto(base).status == 403                       # negative control
        pg.goto(base + "?token=" + server.token + "#file=cube.n3pmesh")
        _model_drawn(pg)
        assert errors == []
    finally:
        pg.close()
        server.shutdown()
        server.server_close()
