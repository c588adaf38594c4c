"""Import speed rows of issue 44, as ratios measured in one run.

* a static model of about 100k triangles (a UV-mapped sphere with seams) into
  .n3pmesh / .n3shape / .dts, against the compiled simplifier
  (``fast_simplification``) collapsing the same triangles to nothing: goal <= 10x;
* a 60-joint skinned character with a 2 s clip into .n3chr / .trwad / .dts,
  against reading the same glb with the project's glTF reader: goal <= 5x.

``python benchmarks/import44.py [--runs N] [--rows static,skinned] [--tris N]``;
CPU seconds of this process, medians of ``--runs``.  Each import row is
measured twice: as the library runs it (the cyclic collector as the caller has
it, here on) and as ``potsherd convert`` runs it, with the collector paused
(``core.gcpolicy``); the references run with the collector on.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from potsherd.export.gltf import write_glb  # noqa: E402
from potsherd.importer import import_gltf  # noqa: E402
from potsherd.scene import (Animation, Channel, Image, Material, Mesh, Primitive,  # noqa: E402
                            Scene, Skin, TextureRef)
from potsherd.scene.gltf_read import read_gltf  # noqa: E402


def _png() -> bytes:
    import io
    from PIL import Image as PILImage
    buf = io.BytesIO()
    PILImage.fromarray((np.indices((64, 64)).sum(0) % 2 * 255).astype(np.uint8)).convert(
        "RGB").save(buf, "PNG")
    return buf.getvalue()


def sphere(rings: int, segments: int) -> tuple:
    """Positions, normals, UVs, triangles of a UV sphere; the UV seam and the
    poles' corners are vertices apart (as exporters write them)."""
    th = np.linspace(0, np.pi, rings + 1)
    ph = np.linspace(0, 2 * np.pi, segments + 1)
    t, p = np.meshgrid(th, ph, indexing="ij")
    pos = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    uv = np.stack([p / (2 * np.pi), t / np.pi], -1).reshape(-1, 2)
    r, s = np.meshgrid(np.arange(rings), np.arange(segments), indexing="ij")
    a = (r * (segments + 1) + s).ravel()
    b, c, d = a + segments + 1, a + 1, a + segments + 2
    tris = np.concatenate([np.stack([a, c, b], 1), np.stack([c, d, b], 1)])
    tris = tris[np.abs(np.cross(pos[tris[:, 1]] - pos[tris[:, 0]],
                                pos[tris[:, 2]] - pos[tris[:, 0]])).sum(1) > 1e-12]
    return pos.astype(np.float32), pos.astype(np.float32), uv.astype(np.float32), tris


def static_scene(triangles: int) -> Scene:
    rings = int(np.sqrt(triangles / 4))
    pos, nrm, uv, tris = sphere(rings, 2 * rings)
    s = Scene(name="sphere")
    s.add_image(Image(name="checker", data=_png()))
    s.add_material(Material(name="m", base_color_texture=TextureRef(image=0)))
    m = s.add_mesh(Mesh(name="sphere", primitives=[Primitive(
        positions=pos, normals=nrm, uvs=[uv], indices=tris.reshape(-1).astype(np.uint32),
        material=0)]))
    s.add_node(name="sphere", mesh=m)
    return s


def character(joints: int = 60, rings_per_joint: int = 8, segments: int = 48, *,
              uvs: bool = False, mirror: int | None = None) -> Scene:
    """A tube of ``joints`` segments on a joint chain, each ring blended
    between two joints, a clip bending every joint; ``uvs``: around and along
    the tube (a seam where the angle wraps); ``mirror``: that joint's bind
    matrix mirrors x (the tests' variants of the benchmark's character)."""
    rings = joints * rings_per_joint
    y = np.linspace(0, joints * 0.1, rings + 1)
    ang = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    pos = np.stack([np.tile(0.05 * np.cos(ang), rings + 1), np.repeat(y, segments),
                    np.tile(0.05 * np.sin(ang), rings + 1)], 1)
    nrm = np.stack([np.cos(np.tile(ang, rings + 1)), np.zeros(len(pos)),
                    np.sin(np.tile(ang, rings + 1))], 1)
    a = (np.arange(rings)[:, None] * segments + np.arange(segments)[None]).ravel()
    b = (np.arange(rings)[:, None] * segments + (np.arange(segments)[None] + 1) % segments).ravel()
    tris = np.concatenate([np.stack([a, b + segments, b], 1),
                           np.stack([a, a + segments, b + segments], 1)])
    seg = np.minimum(pos[:, 1] / 0.1, joints - 1e-6)
    j0 = np.floor(seg).astype(int)
    f = seg - j0
    j1 = np.minimum(j0 + 1, joints - 1)
    jw = np.zeros((len(pos), 4), np.uint16)
    ww = np.zeros((len(pos), 4), np.float32)
    jw[:, 0], jw[:, 1] = j0, j1
    ww[:, 0], ww[:, 1] = 1 - 0.5 * f, 0.5 * f
    uv = None if not uvs else [np.stack([np.tile(ang / (2 * np.pi), rings + 1),
                                         np.repeat(y, segments)], 1).astype(np.float32)]
    s = Scene(name="tube")
    s.add_material(Material(name="m"))
    m = s.add_mesh(Mesh(name="tube", primitives=[Primitive(
        positions=pos.astype(np.float32), normals=nrm.astype(np.float32), uvs=uv or [],
        indices=tris.reshape(-1).astype(np.uint32), joints=jw, weights=ww, material=0)]))
    chain, parent = [], None
    for k in range(joints):
        parent = s.add_node(name=f"bone{k}", translation=(0.0, 0.1 if k else 0.0, 0.0),
                            parent=parent)
        chain.append(parent)
    ibm = np.tile(np.eye(4), (joints, 1, 1))
    ibm[:, 1, 3] = -0.1 * np.arange(joints)
    if mirror is not None:
        ibm[mirror, 0, 0] = -1.0
    sk = s.add_skin(Skin(joints=chain, inverse_bind_matrices=ibm))
    s.add_node(name="tube", mesh=m, skin=sk)
    t = np.linspace(0, 2, 61).astype(np.float32)
    chans = []
    for k, j in enumerate(chain):
        a = 0.05 * np.sin(2 * np.pi * t / 2 + k * 0.1)
        chans.append(Channel(j, "rotation", t, np.stack(
            [np.zeros_like(a), np.zeros_like(a), np.sin(a / 2), np.cos(a / 2)], 1).astype(np.float32)))
    s.add_animation(Animation(name="wave", channels=chans))
    return s


def cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def median(fn, runs: int) -> float:
    return float(np.median([cpu(fn) for _ in range(runs)]))


def paused(fn):
    """``fn`` with the collector paused, as the command line runs an import."""
    from potsherd.core.gcpolicy import collector_paused

    def run():
        with collector_paused():
            fn()
    return run


def simplifier_time(scene: Scene, runs: int) -> float:
    import fast_simplification
    p = scene.meshes[0].primitives[0]
    pos = np.asarray(p.positions, np.float64)
    tris = np.asarray(p.indices, np.int64).reshape(-1, 3)
    return median(lambda: fast_simplification.simplify(pos, tris, 0.999, return_collapses=True),
                  runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", default="static,skinned")
    ap.add_argument("--tris", type=int, default=100_000)
    ap.add_argument("--targets", default="")
    args = ap.parse_args(argv)
    rows = args.rows.split(",")
    tmp = Path(tempfile.mkdtemp())
    out = []
    if "static" in rows:
        sc = static_scene(args.tris)
        src = tmp / "static.glb"
        write_glb(sc, src)
        ntri = len(sc.meshes[0].primitives[0].indices) // 3
        ref = simplifier_time(sc, args.runs)
        out.append(("fast_simplification, %d triangles" % ntri, ref, None, None))
        for t in (args.targets.split(",") if args.targets else ("n3pmesh", "n3shape", "dts")):
            d = tmp / f"s_{t}"
            d.mkdir()
            job = (lambda d=d, t=t: import_gltf(src, d / f"out.{t}"))
            sec = median(job, args.runs)
            out.append((f"import {ntri} triangles to .{t}", sec, sec / ref, 10.0))
            sec = median(paused(job), args.runs)
            out.append((f"  the same, collector paused (potsherd convert)", sec, sec / ref, 10.0))
    if "skinned" in rows:
        sc = character()
        src = tmp / "character.glb"
        write_glb(sc, src)
        ref = median(lambda: read_gltf(src), args.runs)
        out.append(("read_gltf, 60-joint character", ref, None, None))
        for t in (args.targets.split(",") if args.targets else ("n3chr", "trwad", "dts")):
            d = tmp / f"c_{t}"
            d.mkdir()
            job = (lambda d=d, t=t: import_gltf(src, d / f"out.{t}"))
            sec = median(job, args.runs)
            out.append((f"import 60-joint character to .{t}", sec, sec / ref, 5.0))
            sec = median(paused(job), args.runs)
            out.append((f"  the same, collector paused (potsherd convert)", sec, sec / ref, 5.0))
    print(f"{'row':55s} {'CPU s':>8s} {'ratio':>8s} {'goal':>6s}")
    for name, sec, ratio, goal in out:
        r = "" if ratio is None else f"{ratio:.1f}x"
        g = "" if goal is None else (f"<={goal:g}x " + ("met" if ratio <= goal else "not met"))
        print(f"{name:55s} {sec:8.3f} {r:>8s} {g}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
