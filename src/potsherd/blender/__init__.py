"""The Blender extension: its source (``addon/``, imported only inside Blender) and the
builder of its installable zip (:mod:`potsherd.blender.build`).

The add-on holds UI only: every format rule stays in the library it calls through the
public API (``convert.convert_file`` one way, :func:`potsherd.import_gltf` the other),
with Blender's own glTF importer and exporter in between.
"""
