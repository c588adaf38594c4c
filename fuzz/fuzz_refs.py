"""Fuzzing the rule for referenced files: random reference strings (built from
the pieces attacks are made of: ``..``, percent-encodings, either slash,
drives, schemes, NULs, links, a FIFO, devices, long names) are given to every
reader of referenced files (glTF buffers and images, the Knight Online
resolver, FBX texture lookup, Darkstar tree lookup) in a tree with a marker
file outside it.  A finding is an exception that is not a ``FormatError``, a
hang, a found path outside the allowed folders, or a marker byte in a result.

    python fuzz/fuzz_refs.py --inputs 20000 --seed 1
"""
from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys
import tempfile
from pathlib import Path

PIECES = ["..", ".", "", "%2E%2E", "%2e", "%2F", "%5C", "/", "\\", "outside", "marker.bin",
          "model", "tri.bin", "link.bin", "linkdir", "fifo.bin", "sub", "C:", "c:\\", "file:",
          "file://", "%00", "\x00", "dev", "zero", "%2Fdev%2Fzero", "proc", "self", "environ",
          "~", "..%2F", "%252F", "\u2215", "\uff0f", "a" * 300, "#frag", "?q=1", " ", "\t",
          "data:", ";base64,", "MARKER"]


def make_tree(root: Path) -> tuple[Path, bytes]:
    """root/model (tri.bin, sub/tri.bin, link.bin -> outside, linkdir -> outside,
    fifo.bin) beside root/outside/marker.bin; returns (model folder, marker)."""
    marker = b"FUZZ-OUTSIDE-MARKER-" + os.urandom(6).hex().encode()
    (root / "outside").mkdir()
    (root / "outside" / "marker.bin").write_bytes(marker * 4)
    m = root / "model"
    (m / "sub").mkdir(parents=True)
    tri = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    (m / "tri.bin").write_bytes(tri)
    (m / "sub" / "tri.bin").write_bytes(tri)
    (m / "link.bin").symlink_to(root / "outside" / "marker.bin")
    (m / "linkdir").symlink_to(root / "outside")
    os.mkfifo(m / "fifo.bin")
    return m, marker


def reference(rng: random.Random) -> str:
    n = rng.randint(1, 7)
    parts = [rng.choice(PIECES) for _ in range(n)]
    sep = rng.choice(["/", "\\", "%2F", ""])
    text = sep.join(parts)
    if rng.random() < 0.2:
        text = "/" + text
    return text


def _gltf(buffer_uri: str, image_uri: str) -> str:
    return json.dumps({"asset": {"version": "2.0"},
                       "buffers": [{"uri": buffer_uri, "byteLength": 36}],
                       "bufferViews": [{"buffer": 0, "byteLength": 36}],
                       "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3,
                                      "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]}],
                       "images": [{"uri": image_uri}],
                       "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
                       "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0})


def check_one(model: Path, marker: bytes, ref: str) -> None:
    """Every reader given ``ref``: raises AssertionError on a finding."""
    from potsherd import FormatError
    from potsherd.formats.darkstar.textures import find_in_tree
    from potsherd.formats.fbx.scene_materials import TextureFiles
    from potsherd.formats.ko.scene import Resolver
    from potsherd.scene import Scene
    from potsherd.scene.gltf_read import read_gltf
    inside = os.path.realpath(model) + os.sep
    for buffer_uri, image_uri in ((ref, "tri.bin"), ("tri.bin", ref)):
        src = model / "f.gltf"
        src.write_text(_gltf(buffer_uri, image_uri))
        try:
            scene = read_gltf(src)
        except FormatError as e:
            assert marker[:10] not in str(e).encode(), (ref, str(e))
            continue
        for img in scene.images:
            assert img.data is None or marker[:10] not in img.data, ref
        assert marker[:10] not in repr(scene.warnings).encode(), ref
    for raw in (ref.encode("utf-8", "surrogatepass"), ref):
        res = Resolver(str(model / "x.n3chr"), None)
        hit = res.find(raw)
        assert hit is None or os.path.realpath(hit).startswith(inside), (ref, hit)
        sc = Scene()
        doc = res.load(raw, sc, "part")
        assert marker[:10] not in repr(sc.warnings).encode(), ref
        assert doc is None or marker[:10] not in repr(doc.root).encode()
    files = TextureFiles(str(model / "x.fbx"), None)
    hit = files.find([ref])
    if hit is not None:
        assert os.path.realpath(hit).startswith(inside), (ref, hit)
        try:
            assert marker[:10] not in files.read(hit, ref)
        except FormatError:
            pass
    spec = find_in_tree(ref, [str(model)])
    assert spec is None or os.path.realpath(spec.split("::")[0]).startswith(inside), (ref, spec)


def campaign(inputs: int, seed: int) -> int:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        model, marker = make_tree(Path(d))
        for _ in range(inputs):
            check_one(model, marker, reference(rng))
    return inputs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=int, default=5000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    print(f"{campaign(a.inputs, a.seed)} references checked, no finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
