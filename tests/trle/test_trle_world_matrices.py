"""``world_matrices`` of chosen nodes (the TR4 export asks per moveable for its joints
only, which keeps a whole wad linear) equals the full computation at those nodes."""
from __future__ import annotations

import numpy as np

from potsherd.formats.trle.scene import world_matrices
from potsherd.scene.model import Scene
from potsherd.scene.xform import quat_normalize


def test_chosen_nodes_match_the_full_walk():
    rng = np.random.default_rng(3)
    scene = Scene(name="t")
    nodes: list[int] = []
    for i in range(40):
        parent = None if i % 13 == 0 else nodes[int(rng.integers(0, len(nodes)))]
        nodes.append(scene.add_node(name=f"n{i}", parent=parent,
                                    translation=tuple(rng.normal(size=3)),
                                    rotation=tuple(quat_normalize(rng.normal(size=4)))))
    full = world_matrices(scene)
    wanted = [39, 5, 17, 5, 0]
    some = world_matrices(scene, wanted)
    for j in wanted:
        assert np.allclose(some[j], full[j], atol=1e-12)
    # only the chosen nodes and their ancestors are computed
    parents = scene.parents()
    needed = set()
    for j in wanted:
        while j is not None:
            needed.add(j)
            j = parents[j]
    assert {i for i, m in enumerate(some) if m is not None} == needed
    assert len(needed) < len(nodes)
