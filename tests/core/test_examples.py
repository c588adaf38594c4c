"""The bundled examples: valid by construction, byte-exact, and well formed in glTF."""
import numpy as np

import potsherd
from potsherd.examples import EXAMPLES, write_examples


def test_examples_decode_and_round_trip(tmp_path):
    paths = write_examples(str(tmp_path))
    assert len(paths) == len(EXAMPLES)
    for p in paths:
        data = open(p, "rb").read()
        doc = potsherd.read(p)
        assert potsherd.write(doc) == data and not doc.warnings


def test_example_cube_faces_all_point_outward_after_conversion(tmp_path):
    (path,) = [p for p in write_examples(str(tmp_path)) if p.endswith("cube.n3pmesh")]
    doc = potsherd.read(path)
    assert doc.root["vertexCount"] == 24 and doc.root["indexCount"] == 36
    scene = doc.codec.to_scene(doc)
    (prim,) = [p for m in scene.meshes for p in m.primitives]
    tri = prim.positions[prim.indices.reshape(-1, 3)]
    geometric = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])  # CCW front in glTF
    centre = tri.mean(axis=1)
    assert (np.einsum("ij,ij->i", geometric, centre) > 0).all()  # outward, all 12 triangles
    assert np.allclose(np.abs(prim.positions).max(axis=0), 0.5)
