"""potsherd for Blender: classic game formats in File > Import and File > Export.

Thin by design: a game file is exported to glTF by potsherd and read by Blender's own
glTF importer; a collection goes out through Blender's glTF exporter and potsherd imports
that into the game format, with ``--like`` against the file it came from, so an unedited
round trip gives the original bytes back.  Every format rule lives in the potsherd library.

Installs as a Blender 4.2+ extension (``blender_manifest.toml``: Blender installs the
bundled wheels) and as a legacy add-on in Blender 3.x, where the wheels that fit this
Blender's Python are unpacked beside the add-on on first use.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import zipfile

import bpy
from bpy.props import BoolProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

bl_info = {
    "name": "potsherd: classic game formats",
    "author": "potsherd developers",
    "version": (0, 1, 0),
    "blender": (3, 0, 0),
    "location": "File > Import, File > Export",
    "description": "Knight Online, Darkstar/Tribes, Tomb Raider and FBX files through potsherd",
    "category": "Import-Export",
}

HERE = os.path.dirname(os.path.abspath(__file__))

#: the family a menu entry filters for, and its title
FAMILY_MENUS = (("ko", "Knight Online"), ("darkstar", "Darkstar / Tribes"),
                ("trle", "Tomb Raider"), ("fbx", "FBX"))

#: operator properties passed to the exporter as options of the same name, when the
#: file's codec declares them (-1 / "" mean "the format's default")
PANEL_OPTIONS = ("lod", "detail", "moveable", "palette", "data_root", "objects", "collision")

#: collection properties that remember where an import came from
SOURCE_KEY, FORMAT_KEY, OPTIONS_KEY = "potsherd_source", "potsherd_format", "potsherd_options"


# ---------------------------------------------------------------------------
# the library

def _wheel_fits(name: str) -> bool:
    """Whether a wheel file name's tags fit this Python and platform (the few rules a
    legacy install needs; Blender 4.2+ installs the wheels itself)."""
    parts = name[:-4].split("-")
    if len(parts) < 5:
        return False
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    here = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    if not any(t in ("py3", here) or (abi == "abi3" and t.startswith("cp3")
                                       and int(t[3:] or 0) <= sys.version_info[1])
               for t in py.split(".")):
        return False
    if plat == "any":
        return True
    machine = os.uname().machine if hasattr(os, "uname") else "AMD64"
    plats = plat.split(".")
    if sys.platform.startswith("linux"):
        return any("linux" in p and p.endswith(machine) for p in plats)
    if sys.platform == "darwin":
        return any(p.startswith("macosx") and (p.endswith(machine) or p.endswith("universal2"))
                   for p in plats)
    if sys.platform == "win32":
        return any(p == ("win_arm64" if machine.upper() == "ARM64" else "win_amd64")
                   for p in plats)
    return False


def _unpack_wheels(site: str) -> None:
    """Unpack the bundled wheels that fit into ``site`` (once; a marker says it is whole)."""
    folder = os.path.join(HERE, "wheels")
    os.makedirs(site, exist_ok=True)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name.endswith(".whl") and _wheel_fits(name):
            with zipfile.ZipFile(os.path.join(folder, name)) as z:
                z.extractall(site)
    with open(os.path.join(site, ".complete"), "w") as f:
        f.write("unpacked\n")


def library():
    """The potsherd package: installed by Blender (4.2+ extensions), or unpacked from the
    bundled wheels (legacy add-on)."""
    try:
        import potsherd
        return potsherd
    except ImportError:
        pass
    site = os.path.join(HERE, "_site", f"cp{sys.version_info[0]}{sys.version_info[1]}")
    if not os.path.exists(os.path.join(site, ".complete")):
        _unpack_wheels(site)
    if site not in sys.path:
        sys.path.append(site)       # after Blender's own modules: its numpy is the one used
    import potsherd
    return potsherd


def _numpy_for_old_gltf_io() -> None:
    """Blender 3.x's glTF add-on still says ``numpy.bool``, which numpy 1.24 removed."""
    import numpy
    if not hasattr(numpy, "bool"):
        numpy.bool = bool


def exportable_extensions(family: str | None = None) -> list[str]:
    """Extensions of the formats potsherd exports to glTF (of one family, or all)."""
    rows = library().list_formats()
    return sorted({e for r in rows if r.get("features", {}).get("export")
                   and (family is None or r["family"] == family) for e in r["extensions"]})


def parse_options(text: str) -> dict:
    """``name=value, name=value`` from the free options field."""
    out = {}
    for item in (text or "").replace(";", ",").split(","):
        if item.strip():
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"option {item.strip()!r} is not NAME=VALUE")
            out[name.strip()] = value.strip()
    return out


def declared_options(path: str, kind: str) -> set[str]:
    """Names of the options the codec of ``path`` declares (``export_options`` or
    ``import_options``), so the panel passes only what the format takes."""
    from potsherd import registry
    codec = registry.codec_before_reading(path)
    if codec is None:
        potsherd = library()
        codec = potsherd.read(path).codec
    return {o.name for o in getattr(codec, kind)}


# ---------------------------------------------------------------------------
# import

def import_file(context, path: str, options: dict, name: str | None = None):
    """Import one game file into a new collection; returns (collection, warnings)."""
    library()
    from potsherd.convert import convert_file
    _numpy_for_old_gltf_io()
    path = os.path.abspath(path)
    with tempfile.TemporaryDirectory(prefix="potsherd-") as tmp:
        glb = os.path.join(tmp, "scene.glb")
        summary = convert_file(path, glb, "glb", {"scene_options": options})
        before = set(bpy.data.objects)
        result = bpy.ops.import_scene.gltf(filepath=glb)
        if "FINISHED" not in result:
            raise RuntimeError(f"Blender's glTF importer refused the export of {path}")
        new = [o for o in bpy.data.objects if o not in before]
    collection = bpy.data.collections.new(name or os.path.basename(path))
    context.scene.collection.children.link(collection)
    for obj in new:
        for c in list(obj.users_collection):
            c.objects.unlink(obj)
        collection.objects.link(obj)
    from potsherd import registry
    codec = registry.codec_before_reading(path)
    collection[SOURCE_KEY] = path
    collection[FORMAT_KEY] = codec.name if codec is not None else ""
    collection[OPTIONS_KEY] = json.dumps(options, sort_keys=True)
    return collection, list(summary.get("warnings", ()))


def _report_failure(op, e: Exception) -> set:
    """A refusal as one report line in Blender, never a traceback."""
    potsherd = library()
    if isinstance(e, (potsherd.FormatError, OSError, ValueError)):
        op.report({'ERROR'}, f"potsherd: {e}")
    else:
        op.report({'ERROR'}, f"potsherd: internal error: {type(e).__name__}: {e}")
    return {'CANCELLED'}


class IMPORT_SCENE_OT_potsherd(bpy.types.Operator, ImportHelper):
    """Import a game file through potsherd (glTF in between)"""
    bl_idname = "import_scene.potsherd"
    bl_label = "Import with potsherd"
    bl_options = {'REGISTER', 'UNDO'}

    filter_glob: StringProperty(default="*", options={'HIDDEN'})
    family: StringProperty(default="", options={'HIDDEN'})
    lod: IntProperty(name="LOD", default=-1, min=-1,
                     description="level of detail (-1: the format's default)")
    detail: IntProperty(name="Detail level", default=-1, min=-1,
                        description="Darkstar detail level (-1: the format's default)")
    moveable: StringProperty(name="Moveable",
                             description="Tomb Raider: object id or slot name (empty: all)")
    palette: StringProperty(name="Palette", subtype='FILE_PATH',
                            description="Darkstar palette (.ppl/.pal); empty: the rule's choice")
    data_root: StringProperty(name="Data root", subtype='DIR_PATH',
                              description="game data folder for referenced files")
    objects: BoolProperty(name="Zone objects", default=True,
                          description="Knight Online zones: place the objects")
    collision: BoolProperty(name="Collision", default=False,
                            description="Knight Online zones: add the collision mesh")
    options: StringProperty(name="More options", description="NAME=VALUE, comma-separated")

    def invoke(self, context, event):
        try:
            self.filter_glob = ";".join("*" + e for e in exportable_extensions(self.family or None))
        except Exception as e:  # noqa: BLE001 - the file browser still opens
            self.report({'WARNING'}, f"potsherd: {e}")
        return ImportHelper.invoke(self, context, event)

    def scene_options(self, path: str) -> dict:
        declared = declared_options(path, "export_options")
        given = {"lod": self.lod if self.lod >= 0 else None,
                 "detail": self.detail if self.detail >= 0 else None,
                 "moveable": self.moveable or None, "palette": self.palette or None,
                 "data_root": bpy.path.abspath(self.data_root) if self.data_root else None,
                 "objects": self.objects, "collision": self.collision}
        out = {k: v for k, v in given.items()
               if v is not None and k in declared and k in PANEL_OPTIONS}
        out.update(parse_options(self.options))
        return out

    def execute(self, context):
        try:
            collection, warnings = import_file(context, self.filepath,
                                               self.scene_options(self.filepath))
        except Exception as e:  # noqa: BLE001
            return _report_failure(self, e)
        for w in warnings:
            self.report({'WARNING'}, f"potsherd: {w}")
        self.report({'INFO'}, f"potsherd: imported {collection.name}")
        return {'FINISHED'}


class IMPORT_SCENE_OT_potsherd_folder(bpy.types.Operator):
    """Import every game file of a folder through potsherd, one collection each"""
    bl_idname = "import_scene.potsherd_folder"
    bl_label = "Import folder with potsherd"
    bl_options = {'REGISTER', 'UNDO'}

    directory: StringProperty(subtype='DIR_PATH')
    options: StringProperty(name="Options", description="NAME=VALUE, comma-separated")

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    def execute(self, context):
        library()
        from potsherd import api, registry
        wanted = set(exportable_extensions())
        parent = bpy.data.collections.new(os.path.basename(os.path.normpath(self.directory)))
        context.scene.collection.children.link(parent)
        given = parse_options(self.options)
        done = failed = 0
        for entry in api.walk_inputs([self.directory], registry.known_extension):
            if not entry.ok or os.path.splitext(entry.path)[1].lower() not in wanted:
                continue
            try:
                opts = {k: v for k, v in given.items()
                        if k in declared_options(entry.path, "export_options")}
                collection, warnings = import_file(context, entry.path, opts,
                                                   os.path.relpath(entry.path, self.directory))
            except Exception as e:  # noqa: BLE001 - one bad file does not stop the folder
                self.report({'WARNING'}, f"potsherd: {entry.path}: {e}")
                failed += 1
                continue
            context.scene.collection.children.unlink(collection)
            parent.children.link(collection)
            done += 1
        self.report({'INFO'}, f"potsherd: {done} imported, {failed} failed")
        return {'FINISHED'} if done or not failed else {'CANCELLED'}


# ---------------------------------------------------------------------------
# export

def _layer_collection(layer, collection):
    if layer.collection == collection:
        return layer
    for child in layer.children:
        found = _layer_collection(child, collection)
        if found is not None:
            return found
    return None


def export_collection(context, collection, path: str, *, like: bool = True,
                      options: dict | None = None) -> dict:
    """Write ``collection`` as the game file ``path``: Blender's glTF exporter, then
    potsherd's import, with ``like`` = the file the collection was imported from when it
    has the same extension (so an unedited collection gives the original bytes)."""
    potsherd = library()
    _numpy_for_old_gltf_io()
    layer = _layer_collection(context.view_layer.layer_collection, collection)
    if layer is None:
        raise ValueError(f"collection {collection.name!r} is not in this view layer")
    source = collection.get(SOURCE_KEY)
    original = None
    if like and source and os.path.isfile(source) and \
            os.path.splitext(source)[1].lower() == os.path.splitext(path)[1].lower():
        original = source
    active = context.view_layer.active_layer_collection
    with tempfile.TemporaryDirectory(prefix="potsherd-") as tmp:
        glb = os.path.join(tmp, "scene.glb")
        context.view_layer.active_layer_collection = layer
        try:
            result = bpy.ops.export_scene.gltf(filepath=glb, export_format='GLB',
                                               use_active_collection=True)
        finally:
            context.view_layer.active_layer_collection = active
        if "FINISHED" not in result:
            raise RuntimeError("Blender's glTF exporter failed")
        return potsherd.import_gltf(glb, path, like=original, options=options or {})


class EXPORT_SCENE_OT_potsherd(bpy.types.Operator, ExportHelper):
    """Export a collection to a game format through potsherd"""
    bl_idname = "export_scene.potsherd"
    bl_label = "Export with potsherd"
    filename_ext = ""
    filter_glob: StringProperty(default="*", options={'HIDDEN'})
    collection: StringProperty(name="Collection",
                               description="collection to export (empty: the active one)")
    use_like: BoolProperty(name="Keep the original", default=True,
                           description="import with --like against the file the collection "
                                       "came from: unedited parts keep their bytes")
    options: StringProperty(name="Options", description="NAME=VALUE, comma-separated")

    def target(self, context):
        if self.collection:
            return bpy.data.collections.get(self.collection)
        return context.view_layer.active_layer_collection.collection

    def invoke(self, context, event):
        coll = self.target(context)
        source = coll.get(SOURCE_KEY) if coll is not None else None
        if source:
            stem, ext = os.path.splitext(source)
            self.filepath = f"{stem}_edited{ext}"
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    def check(self, context):
        return False            # keep the extension the user typed: it picks the format

    def execute(self, context):
        coll = self.target(context)
        if coll is None:
            self.report({'ERROR'}, f"potsherd: no collection {self.collection!r}")
            return {'CANCELLED'}
        try:
            summary = export_collection(context, coll, self.filepath, like=self.use_like,
                                        options=parse_options(self.options))
        except Exception as e:  # noqa: BLE001
            return _report_failure(self, e)
        for w in summary.get("warnings", ()):
            self.report({'WARNING'}, f"potsherd: {w}")
        self.report({'INFO'}, f"potsherd: wrote {self.filepath}")
        return {'FINISHED'}


# ---------------------------------------------------------------------------
# menus and registration

def _import_menu(self, context):
    for family, title in FAMILY_MENUS:
        op = self.layout.operator(IMPORT_SCENE_OT_potsherd.bl_idname, text=f"{title} (potsherd)")
        op.family = family
    self.layout.operator(IMPORT_SCENE_OT_potsherd_folder.bl_idname,
                         text="Game folder (potsherd)")


def _export_menu(self, context):
    self.layout.operator(EXPORT_SCENE_OT_potsherd.bl_idname, text="Game format (potsherd)")


CLASSES = [IMPORT_SCENE_OT_potsherd, IMPORT_SCENE_OT_potsherd_folder, EXPORT_SCENE_OT_potsherd]


def _file_handler():
    """Drag and drop (Blender 4.1+): a file handler for every exportable extension."""
    if not hasattr(bpy.types, "FileHandler"):
        return None

    class IO_FH_potsherd(bpy.types.FileHandler):
        bl_idname = "IO_FH_potsherd"
        bl_label = "potsherd"
        bl_import_operator = IMPORT_SCENE_OT_potsherd.bl_idname
        bl_file_extensions = ";".join(exportable_extensions())

        @classmethod
        def poll_drop(cls, context):
            return context.area is not None and context.area.type == 'VIEW_3D'

    return IO_FH_potsherd


def register():
    library()
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    handler = _file_handler()
    if handler is not None:
        bpy.utils.register_class(handler)
        CLASSES.append(handler)
    bpy.types.TOPBAR_MT_file_import.append(_import_menu)
    bpy.types.TOPBAR_MT_file_export.append(_export_menu)


def unregister():
    bpy.types.TOPBAR_MT_file_import.remove(_import_menu)
    bpy.types.TOPBAR_MT_file_export.remove(_export_menu)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    del CLASSES[3:]
