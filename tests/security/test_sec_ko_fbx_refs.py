"""Knight Online and FBX references follow the one rule: a character naming
``..\\..\\outside\\x`` or ``outside\\x`` (which the old resolver found by
climbing six parent folders) finds nothing outside the client root, which is
found by its layout; an FBX naming a texture outside its folder gets a warning
and no bytes of it.  Negative controls: the same references inside resolve."""
from __future__ import annotations

import struct
from pathlib import Path

from conftest import assert_clean, run_potsherd
from ko_bytes import f32, i32, s


def joint(name: bytes) -> bytes:
    """An .n3joint with one joint named ``name`` (no keys)."""
    empty = i32(0) * 4
    return s(name) + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1) + empty + i32(0)


def character(joint_ref: bytes, part_ref: bytes = b"") -> bytes:
    transform = (s(b"chr") + f32(0, 0, 0) + f32(0, 0, 0, 1) + f32(1, 1, 1) + i32(0) * 3
                 + s(b"") + s(b""))
    return (transform + s(joint_ref) + i32(1) + s(part_ref) + i32(0) + s(b"")
            + i32(-1, -1) + i32(-1, -1))


def client(tmp_path: Path, marker: bytes) -> Path:
    """tmp/game/data/{Chr,Item}/ (a client root by its layout) and, outside it,
    tmp/outside/x.n3joint whose joint name is the marker."""
    data = tmp_path / "game" / "data"
    (data / "Chr").mkdir(parents=True)
    (data / "Item").mkdir()
    (tmp_path / "outside" / "x.n3joint").write_bytes(joint(marker))
    (tmp_path / "outside" / "passwd").write_bytes(joint(marker))
    (tmp_path / "out").mkdir()
    return data


def test_character_references_outside_the_client_are_not_read(tmp_path, marker):
    import potsherd
    data = client(tmp_path, marker)
    hostile = [b"..\\..\\..\\outside\\x.n3joint", b"outside\\x.n3joint", b"..\\outside\\x.n3joint",
               b"C:\\..\\..\\outside\\x.n3joint", b"..\\..\\..\\outside\\passwd",
               str(tmp_path / "outside" / "x.n3joint").encode()]
    for k, ref in enumerate(hostile):
        src = data / "Chr" / f"h{k}.n3chr"
        src.write_bytes(character(ref, ref))
        doc = potsherd.read(src)
        try:
            scene = doc.codec.to_scene(doc)
            text = repr([n.name for n in scene.nodes]) + repr(scene.warnings)
        except potsherd.FormatError as e:      # nothing resolved: said so
            text = str(e)
        assert marker.decode() not in text, ref
        from potsherd.formats.ko.scene import Resolver
        assert Resolver(str(src), None).find(ref) is None, ref
        out = tmp_path / "out" / f"h{k}.glb"
        proc = run_potsherd("convert", src, out, timeout=60)
        assert proc.returncode in (0, 1) and b"Traceback" not in proc.stderr
        assert_clean(proc, marker, tmp_path / "out")


def test_the_client_root_is_found_by_its_layout(tmp_path, marker):
    """Negative control: a skeleton in Item/ resolves from Chr/ (the reference is
    relative to the client root, one folder up, which has the layout); the same
    tree without the layout's folder names finds nothing above the file's folder."""
    from potsherd.formats.ko.scene import Resolver
    from potsherd.scene import Scene
    data = client(tmp_path, marker)
    (data / "Item" / "j.n3joint").write_bytes(joint(b"INSIDE-JOINT"))
    src = data / "Chr" / "ok.n3chr"
    src.write_bytes(character(b"item\\J.N3JOINT"))
    scene = Scene()
    doc = Resolver(str(src), None).load(b"item\\J.N3JOINT", scene, "skeleton")
    assert doc is not None and doc.root["name"] == b"INSIDE-JOINT", scene.warnings
    plain = tmp_path / "plain"
    (plain / "a").mkdir(parents=True)
    (plain / "b").mkdir()
    (plain / "b" / "j.n3joint").write_bytes(joint(b"INSIDE-JOINT"))
    assert Resolver(str(plain / "a" / "x.n3chr"), None).find(b"b\\j.n3joint") is None
    # --data-root names the root explicitly
    assert Resolver(str(plain / "a" / "x.n3chr"), str(plain)).find(b"b\\j.n3joint") == \
        plain / "b" / "j.n3joint"


def test_fbx_texture_outside_its_folder_is_a_warning_not_bytes(tmp_path, marker):
    """An FBX (written by potsherd from a glTF whose image names a path) whose
    texture file is outside its folder: a warning, no bytes; inside: embedded."""
    import json
    import io
    from PIL import Image, PngImagePlugin
    model = tmp_path / "model"
    model.mkdir()
    info = PngImagePlugin.PngInfo()
    info.add_text("k", marker.decode())
    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, format="PNG", pnginfo=info)
    (tmp_path / "outside" / "tex.png").write_bytes(buf.getvalue())
    inside = io.BytesIO()
    info = PngImagePlugin.PngInfo()
    info.add_text("k", "INSIDE-TEXTURE")
    Image.new("RGB", (4, 4)).save(inside, format="PNG", pnginfo=info)
    (model / "good.png").write_bytes(inside.getvalue())
    (model / "tri.bin").write_bytes(struct.pack("<15f", 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1))
    (tmp_path / "out").mkdir()
    for name, uri, inside_ok in (("bad", "../outside/tex.png", False),
                                 ("good", "good.png", True)):
        g = {"asset": {"version": "2.0"}, "buffers": [{"uri": "tri.bin", "byteLength": 60}],
             "bufferViews": [{"buffer": 0, "byteLength": 36},
                             {"buffer": 0, "byteOffset": 36, "byteLength": 24}],
             "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                            "min": [0, 0, 0], "max": [1, 1, 0]},
                           {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"}],
             "images": [{"uri": uri}], "textures": [{"source": 0}],
             "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
             "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1},
                                         "material": 0}]}],
             "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0}
        (model / f"{name}.gltf").write_text(json.dumps(g))
        fbx = model / f"{name}.fbx"
        proc = run_potsherd("convert", model / f"{name}.gltf", fbx, "--option",
                            "embed_textures=false")
        if proc.returncode != 0:      # (no such option: the default writer)
            proc = run_potsherd("convert", model / f"{name}.gltf", fbx)
        assert proc.returncode == 0, proc.stderr
        assert marker[:12] not in fbx.read_bytes()
        out = tmp_path / "out" / f"{name}.glb"
        proc = run_potsherd("convert", fbx, out)
        assert proc.returncode == 0, proc.stderr
        assert_clean(proc, marker, tmp_path / "out")
        if inside_ok:
            assert b"INSIDE-TEXTURE" in out.read_bytes()
        else:
            assert b"tex.png" in proc.stderr and b"warning" in proc.stderr
