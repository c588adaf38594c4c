"""FBX textures into glTF: external files found (relative path with backslashes,
beside the FBX, under data_root, case-insensitively), embedded content found
even when it hangs on another clip, every glTF slot filled where the FBX has
it (opacity packed into base colour alpha, metallic + roughness into one
image), and a warning naming each file not found."""
from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import potsherd
from potsherd.export.gltf import export_document
from potsherd.formats.fbx.model import FbxNode
from potsherd.scene.gltf_read import read_gltf
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT / "fbx"
MAX_PBR = "assimp__maxPbrMaterial_metalRough.fbx"
EMBEDDED = "ufbx__blender_293_embedded_textures_7400_binary.fbx"


def _corpus(name: str) -> Path:
    p = CORPUS / name
    if not p.is_file():
        pytest.skip(f"{name} not in the FBX corpus")
    return p


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(PILImage.open(io.BytesIO(data)))


def _png(path: Path, seed: int, mode: str = "RGB", size=(8, 4)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (size[1], size[0]) + ((3,) if mode == "RGB" else ())
    px = rng.integers(0, 256, shape, dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    PILImage.fromarray(px, mode).save(path)
    return px


def _glb(fbx: Path, tmp: Path, **options):
    doc = potsherd.read(fbx)
    out = tmp / (fbx.stem + ".glb")
    export_document(doc, out, options=options) if options else export_document(doc, out)
    return read_gltf(out), doc.codec.to_scene(doc, source_path=str(fbx), **options).warnings


def _texture_names(fbx: Path) -> list[str]:
    """The external file names of every Texture without embedded content."""
    from potsherd.formats.fbx.transcode import ascii_tree_to_binary
    doc = potsherd.read(fbx)
    root = doc.root if doc.format != "fbx-ascii" else ascii_tree_to_binary(doc.root, "none")
    names = []
    for n in root.find(b"Objects").children or ():
        if n.name == b"Texture":
            rel = n.find(b"RelativeFilename")
            if rel is not None and rel.props:
                names.append(rel.props[0][1].decode("utf-8", "replace"))
    return names


def test_corpus_external_textures_reach_the_glb(tmp_path):
    """Every FBX of the corpus tree whose texture files exist beside it carries
    each of them (bytes, or as a channel of a packed image) in its glb."""
    tree = CORPUS / "tree"
    if not tree.is_dir():
        pytest.skip("FBX corpus tree not present")
    files = {p.name.lower(): p for p in tree.rglob("*") if p.is_file()}
    checked = 0
    for fbx in sorted(tree.glob("*.fbx")):
        present = []
        for name in _texture_names(fbx):
            base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
            if base in files and files[base] not in present:
                present.append(files[base])
        if not present:
            continue
        sc, warnings = _glb(fbx, tmp_path)
        assert not [w for w in warnings if "not found" in w], fbx.name
        images = [_pixels(im.data) for im in sc.images]
        for tex in present:
            want = _pixels(tex.read_bytes())
            grey = np.asarray(PILImage.open(tex).convert("L"))
            hit = any(im.data == tex.read_bytes() for im in sc.images) or any(
                (im.shape[:2] == want.shape[:2] and im.ndim == 3 and (
                    (want.ndim == 3 and np.array_equal(im[..., :3], want[..., :3]))
                    or any(np.array_equal(im[..., c], grey) for c in range(im.shape[2]))))
                for im in images)
            assert hit, f"{fbx.name}: {tex.name} not in the glb"
            checked += 1
    assert checked >= 7  # blender_293_textures: 5 maps; marvelous_quad: diffuse + normal


def test_blender_slots(tmp_path):
    fbx = CORPUS / "tree" / "blender_293_textures_7400_binary.fbx"
    if not fbx.is_file():
        pytest.skip("FBX corpus tree not present")
    sc, _ = _glb(fbx, tmp_path)
    (m,) = sc.materials
    tex = CORPUS / "tree" / "textures"
    base = _pixels(sc.images[m.base_color_texture.image].data)
    assert base.shape[2] == 4 and m.alpha_mode == "BLEND"
    assert np.array_equal(base[..., :3], _pixels((tex / "checkerboard_diffuse.png").read_bytes())[..., :3])
    assert np.array_equal(base[..., 3], np.asarray(PILImage.open(tex / "checkerboard_weight.png").convert("L")))
    mr = _pixels(sc.images[m.metallic_roughness_texture.image].data)
    assert np.array_equal(mr[..., 1], np.asarray(PILImage.open(tex / "checkerboard_roughness.png").convert("L")))
    assert np.array_equal(mr[..., 2], np.asarray(PILImage.open(tex / "checkerboard_metallic.png").convert("L")))
    assert sc.images[m.emissive_texture.image].data == (tex / "checkerboard_emissive.png").read_bytes()
    assert m.normal_texture is None and m.occlusion_texture is None  # the file has none
    assert (m.metallic, m.roughness) == (1.0, 1.0)  # the packed image carries the values


def _max_pbr_textures(folder: Path, upper: bool = True) -> dict:
    names = ["albedo", "metalness", "roughness", "occlusion", "normal", "emission", "opacity"]
    out = {}
    for k, n in enumerate(names):
        rel = ("TEXTURES/" + n.capitalize() + ".PNG") if upper else ("Textures/" + n + ".png")
        out[n] = _png(folder / rel, k, "RGB" if n in ("albedo", "normal", "emission") else "L")
    return out


def test_max_physical_material_every_slot_case_insensitive(tmp_path):
    src = _corpus(MAX_PBR)
    work = tmp_path / "model"
    work.mkdir()
    fbx = work / src.name
    shutil.copyfile(src, fbx)
    px = _max_pbr_textures(work)  # the file says Textures\albedo.png: other case, other slash
    sc, warnings = _glb(fbx, tmp_path)
    assert warnings == []
    (m,) = sc.materials
    base = _pixels(sc.images[m.base_color_texture.image].data)
    assert np.array_equal(base[..., :3], px["albedo"]) and np.array_equal(base[..., 3], px["opacity"])
    mr = _pixels(sc.images[m.metallic_roughness_texture.image].data)
    assert np.array_equal(mr[..., 2], px["metalness"]) and np.array_equal(mr[..., 1], px["roughness"])
    assert np.array_equal(_pixels(sc.images[m.normal_texture.image].data), px["normal"])
    assert np.array_equal(_pixels(sc.images[m.occlusion_texture.image].data), px["occlusion"])
    assert np.array_equal(_pixels(sc.images[m.emissive_texture.image].data), px["emission"])
    assert len(sc.images) == 5


def test_data_root_and_missing_files_warn(tmp_path):
    src = _corpus(MAX_PBR)
    (tmp_path / "fbx").mkdir()
    fbx = tmp_path / "fbx" / src.name
    shutil.copyfile(src, fbx)
    doc = potsherd.read(fbx)
    sc = doc.codec.to_scene(doc, source_path=str(fbx))
    missing = sorted(w for w in sc.warnings if "not found" in w)
    assert len(missing) == 7 and all("Textures\\\\" in w for w in missing)  # each path named
    assert sc.images == []
    px = _max_pbr_textures(tmp_path / "game" / "data" / "deep", upper=False)
    sc = doc.codec.to_scene(doc, source_path=str(fbx), data_root=str(tmp_path / "game"))
    assert sc.warnings == [] and len(sc.images) == 5
    only_root = doc.codec.to_scene(doc, data_root=str(tmp_path / "game"))  # no source path
    assert only_root.warnings == [] and len(only_root.images) == 5
    m = sc.materials[0]
    assert np.array_equal(_pixels(sc.images[m.normal_texture.image].data), px["normal"])
    # the CLI's --data-root reaches the converter (declared option)
    from potsherd.cli import main
    out = tmp_path / "out.glb"
    assert main(["convert", str(fbx), str(out), "--data-root", str(tmp_path / "game")]) == 0
    assert len(read_gltf(out).images) == 5


def test_texture_outside_the_roots_or_not_a_file_is_not_read(tmp_path):
    src = _corpus(MAX_PBR)
    inside = tmp_path / "inside"
    inside.mkdir()
    fbx = inside / src.name
    text = src.read_bytes().replace(b"Textures\\\\albedo.png", b"..\\\\outside\\\\albedo.png")
    fbx.write_bytes(text)
    _png(tmp_path / "outside" / "albedo.png", 1)
    if hasattr(os, "mkfifo"):
        (inside / "Textures").mkdir()
        os.mkfifo(inside / "Textures" / "normal.png")  # must not hang the conversion
    doc = potsherd.read(fbx)
    sc = doc.codec.to_scene(doc, source_path=str(fbx))
    assert sc.images == [] and len([w for w in sc.warnings if "not found" in w]) == 7


def test_embedded_content_on_an_unlinked_clip_is_found(tmp_path):
    doc = potsherd.read(_corpus(EMBEDDED))
    sc = doc.codec.to_scene(doc)
    assert len(sc.images) == 3 and sc.warnings == []
    ids = {n.props[0][1] for n in doc.root.find(b"Objects").children if n.name == b"Video"}
    conns = doc.root.find(b"Connections")
    # cut every clip from its texture: the content is still matched by file name
    conns.children = [c for c in conns.children if c.props[1][1] not in ids]
    sc = doc.codec.to_scene(doc)
    assert len(sc.images) == 3 and sc.warnings == []
    # negative control: without the content the files are looked for, and missed
    for n in doc.root.find(b"Objects").children:
        if n.name == b"Video":
            n.children = [c for c in n.children if c.name != b"Content"]
    sc = doc.codec.to_scene(doc, source_path=str(tmp_path / "x.fbx"))
    assert sc.images == [] and len([w for w in sc.warnings if "not found" in w]) == 5
    assert isinstance(doc.root.find(b"Objects"), FbxNode)


def test_fbx_codec_declares_its_export_options():
    from potsherd.registry import coerce_options
    codec = potsherd.read(_corpus(EMBEDDED)).codec
    names = {o.name for o in codec.export_options}
    assert {"data_root", "keep_units"} <= names
    assert coerce_options(codec.export_options, {"keep_units": "1"}) == {"keep_units": True}
    with pytest.raises(ValueError):
        coerce_options(codec.export_options, {"no_such_option": "1"})
