"""glTF buffers and images are read by the one rule for referenced files: inside
the glTF's folder tree after percent-decoding, regular files only, within the
input limits; an image is embedded only when it decodes as one.  Each hostile
reference is tried through ``convert`` (import to FBX) and ``render`` in a
subprocess under a 2 GB address-space limit and a timeout; no byte of the
marker file outside the model folder may come back."""
from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path

import pytest

from conftest import assert_clean, run_potsherd

TRI = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0) + struct.pack("<6f", 0, 0, 1, 0, 0, 1)


def png(text: bytes) -> bytes:
    from PIL import Image, PngImagePlugin
    info = PngImagePlugin.PngInfo()
    info.add_text("k", text.decode())
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 10, 10)).save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def gltf(buffer_uri: str = "tri.bin", image_uri: str | None = None, length: int = 60) -> str:
    g = {"asset": {"version": "2.0"},
         "buffers": [{"uri": buffer_uri, "byteLength": length}],
         "bufferViews": [{"buffer": 0, "byteLength": 36},
                         {"buffer": 0, "byteOffset": 36, "byteLength": 24}],
         "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                        "min": [0, 0, 0], "max": [1, 1, 0]},
                       {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"}],
         "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}}]}],
         "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0}
    if image_uri is not None:
        g["images"] = [{"uri": image_uri}]
        g["textures"] = [{"source": 0}]
        g["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
        g["meshes"][0]["primitives"][0]["material"] = 0
    return json.dumps(g)


@pytest.fixture
def model(tmp_path, marker) -> Path:
    """tmp/model/ (tri.bin, tex.png, links) beside tmp/outside/ (marker.bin, marker.png)."""
    m = tmp_path / "model"
    m.mkdir()
    (m / "tri.bin").write_bytes(TRI)
    (m / "sub").mkdir()
    (m / "sub" / "tri.bin").write_bytes(TRI)
    (m / "tex.png").write_bytes(png(b"INSIDE-PNG-OK"))
    (tmp_path / "outside" / "marker.png").write_bytes(png(marker))
    (m / "link.bin").symlink_to(tmp_path / "outside" / "marker.bin")
    (m / "linkdir").symlink_to(tmp_path / "outside")
    (m / "alias.bin").symlink_to(m / "tri.bin")          # a link that stays inside: read
    os.mkfifo(m / "fifo.bin")
    (tmp_path / "out").mkdir()
    return m


def hostile_uris(tmp_path: Path, name: str) -> list[str]:
    outside = str(tmp_path / "outside" / name)
    enc = outside.replace("/", "%2F")
    return [f"../outside/{name}", f"%2E%2E%2Foutside%2F{name}", f"..%2Foutside%2F{name}",
            f"..%5Coutside%5C{name}", "sub/../../outside/" + name, outside, enc,
            "file://" + outside, f"linkdir/{name}"]


DEVICES = ["../../../../../../../../../../dev/zero", "%2Fdev%2Fzero", "/dev/zero",
           "..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2Fdev%2Furandom"]


#: the ones also driven through the command line in a subprocess (all go through the API)
CLI_CASES = (0, 6, 9, 11)


def test_hostile_buffer_uris_are_refused_by_name(tmp_path, model, marker):
    from potsherd import FormatError
    from potsherd.export.render import Gltf
    from potsherd.scene.gltf_read import read_gltf
    uris = hostile_uris(tmp_path, "marker.bin") + DEVICES + ["link.bin", "fifo.bin"]
    for k, uri in enumerate(uris):
        src = model / f"h{k}.gltf"
        src.write_text(gltf(uri))
        for reader in (read_gltf, lambda p: Gltf(str(p))):      # importer and renderer
            with pytest.raises(FormatError) as e:
                reader(src)
            assert e.value.path.endswith("uri") and marker[:12] not in str(e.value).encode()
        if k not in CLI_CASES and uri != "fifo.bin":
            continue
        out = tmp_path / "out" / f"h{k}.fbx"
        proc = run_potsherd("convert", src, out, timeout=60)
        assert proc.returncode == 1, (uri, proc.stderr)
        err = proc.stderr.decode()
        assert err.startswith("potsherd: error: ") and "$.buffers[0].uri" in err, (uri, err)
        assert not out.exists()
        assert_clean(proc, marker, tmp_path / "out")
        proc = run_potsherd("render", src, tmp_path / "out" / f"h{k}.png", timeout=60)
        assert proc.returncode == 1 and proc.stderr.startswith(b"potsherd: error: "), \
            (uri, proc.stderr)
        assert_clean(proc, marker, tmp_path / "out")


def test_errors_name_the_reference_not_the_target(tmp_path, model, marker):
    src = model / "e.gltf"
    src.write_text(gltf("link.bin"))
    proc = run_potsherd("convert", src, tmp_path / "out" / "e.fbx")
    err = proc.stderr.decode()
    assert "'link.bin'" in err and str(tmp_path / "outside") not in err
    src.write_text(gltf("missing.bin"))
    err = run_potsherd("convert", src, tmp_path / "out" / "e.fbx").stderr.decode()
    assert "'missing.bin': not found" in err and "No such file" not in err


def test_legitimate_references_inside_the_tree_still_resolve(tmp_path, model, marker):
    from potsherd.export.render import render
    from potsherd.scene.gltf_read import read_gltf
    for k, uri in enumerate(["tri.bin", "sub/tri.bin", "sub%2Ftri.bin", "./sub/../tri.bin",
                             "alias.bin"]):
        src = model / f"ok{k}.gltf"
        src.write_text(gltf(uri, "tex.png"))
        scene = read_gltf(src)
        assert scene.meshes[0].primitives[0].positions.tolist()[1] == [1, 0, 0]
        assert b"INSIDE-PNG-OK" in scene.images[0].data and scene.warnings == []
        assert not render(str(src), size=32).info.get("notes")
    out = tmp_path / "out" / "ok.fbx"
    proc = run_potsherd("convert", src, out)
    assert proc.returncode == 0, proc.stderr
    assert b"INSIDE-PNG-OK" in out.read_bytes()       # the inside image is embedded
    proc = run_potsherd("render", src, tmp_path / "out" / "ok.png")
    assert proc.returncode == 0, proc.stderr


def test_hostile_image_uris_are_warnings_and_never_embedded(tmp_path, model, marker):
    from potsherd.export.render import render
    from potsherd.scene.gltf_read import read_gltf
    uris = hostile_uris(tmp_path, "marker.png") + DEVICES + ["fifo.bin"]
    for k, uri in enumerate(uris):
        src = model / f"i{k}.gltf"
        src.write_text(gltf("tri.bin", uri))
        scene = read_gltf(src)
        assert scene.images[0].data is None and scene.images[0].uri == uri
        assert any(w.startswith("images[0]: ") for w in scene.warnings)
        img = render(str(src), size=32)
        assert any("image 0" in n for n in img.info.get("notes", [])), uri
        if k not in CLI_CASES and uri != "fifo.bin":
            continue
        out = tmp_path / "out" / f"i{k}.fbx"
        proc = run_potsherd("convert", src, out, timeout=60)
        assert proc.returncode == 0, (uri, proc.stderr)
        assert b"potsherd: warning: images[0]: " in proc.stderr, (uri, proc.stderr)
        assert_clean(proc, marker, tmp_path / "out")


def test_a_file_that_is_not_an_image_is_not_embedded(tmp_path, model):
    secret = b"INSIDE-NOT-AN-IMAGE-" + os.urandom(6).hex().encode()
    (model / "notes.png").write_bytes(secret)
    (model / "fake.png").write_bytes(b"\x89PNG\r\n\x1a\n" + secret)   # the magic alone
    for name in ("notes.png", "fake.png"):
        src = model / "n.gltf"
        src.write_text(gltf("tri.bin", name))
        out = tmp_path / "out" / "n.fbx"
        proc = run_potsherd("convert", src, out)
        assert proc.returncode == 0, proc.stderr
        assert f"'{name}' does not decode as an image".encode() in proc.stderr
        assert secret not in out.read_bytes()
    data_uri = "data:image/png;base64," + __import__("base64").b64encode(secret).decode()
    src.write_text(gltf("tri.bin", data_uri))
    proc = run_potsherd("convert", src, out)
    assert proc.returncode == 0 and b"does not decode as an image" in proc.stderr
    assert secret not in out.read_bytes()


def test_data_uri_claims_are_checked_against_what_they_hold(tmp_path, model):
    import base64
    src = model / "d.gltf"
    src.write_text(gltf("data:application/octet-stream;base64," + base64.b64encode(TRI).decode(),
                        length=1 << 40))
    proc = run_potsherd("convert", src, tmp_path / "out" / "d.fbx", timeout=30)
    assert proc.returncode == 1 and b"byteLength" in proc.stderr
    # a data URI as long as the file allows: read, within the input size
    big = base64.b64encode(TRI + bytes(8 << 20)).decode()
    src.write_text(gltf("data:application/octet-stream;base64," + big))
    proc = run_potsherd("convert", src, tmp_path / "out" / "d.fbx", timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = run_potsherd("convert", src, tmp_path / "out" / "d2.fbx", "--max-input", 1 << 20,
                        timeout=60)
    assert proc.returncode == 1 and b"limit" in proc.stderr


def test_reader_api_refuses_with_format_errors(tmp_path, model, marker):
    """The library, not only the command line: ReferenceRefused is a FormatError."""
    import potsherd
    from potsherd.resolve import ReferenceRefused
    from potsherd.scene.gltf_read import read_gltf
    for uri in hostile_uris(tmp_path, "marker.bin") + ["link.bin", "fifo.bin"]:
        src = model / "api.gltf"
        src.write_text(gltf(uri))
        with pytest.raises(potsherd.FormatError) as e:
            read_gltf(src)
        assert isinstance(e.value, ReferenceRefused) or "only relative" in str(e.value), uri
        assert marker[:12] not in str(e.value).encode()
