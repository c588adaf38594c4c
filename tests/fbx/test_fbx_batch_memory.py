"""A converted FBX file leaves no reference cycle behind: its node tree and
scene are freed by reference counting as soon as they are dropped, so a
batch does not pile up every file's tree for the cyclic collector."""
from __future__ import annotations

import gc

from potsherd import registry
from potsherd.export import gltf
from potsherd.formats.fbx import scene as fbx_scene

from test_fbx_scene import QUAD


def _cyclic_garbage_after(convert) -> int:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        convert()
        return gc.collect()
    finally:
        if enabled:
            gc.enable()


def _convert(data: bytes, fmt: str) -> None:
    doc = registry.decode(data, format=fmt)
    gl, _ = gltf.scene_to_gltf(gltf.document_scene(doc, {}), True)
    assert gl["meshes"]


def test_a_converted_file_leaves_no_cyclic_garbage(monkeypatch):
    binary = registry.get_codec("fbx-ascii").convert(
        registry.decode(QUAD.encode(), format="fbx-ascii"), "binary")
    for data, fmt in ((QUAD.encode(), "fbx-ascii"), (binary, "fbx")):
        _convert(data, fmt)  # first calls import and cache what they need
        assert _cyclic_garbage_after(lambda: _convert(data, fmt)) == 0
    # negative control: keeping the builder's material builder (its callbacks
    # point back at the builder) leaves the whole tree in a cycle
    builders = []
    real = fbx_scene._Builder.build

    def keep(self):
        builders.append(self.materials)
        return real(self)
    monkeypatch.setattr(fbx_scene._Builder, "build", keep)

    def convert_and_restore():
        _convert(binary, "fbx")
        builders[0].textures_of.__self__.materials = builders[0]
        builders.clear()
    assert _cyclic_garbage_after(convert_and_restore) > 50
