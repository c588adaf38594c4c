"""FBX 5.x trees (no Objects/Connections ids) upgraded to the 6.x/7.x node model the scene
builder reads: models, meshes, skins and layers rebuilt with ids and connections."""
from __future__ import annotations

from .model import FbxNode


def upgrade_fbx5(root: FbxNode) -> FbxNode:
    """An FBX 5.x tree (header 3000: top-level models with inline geometry,
    ``Children`` lists, transforms in ``Channel "Transform"`` defaults) in the
    6.x node model the builder reads (Objects, Connections/Connect, Properties60)."""
    models = [n for n in root.children or () if n.name == b"Model" and n.props
              and n.props[0][0] == "S"]
    parent_of: dict = {}
    for m in models:
        for ch in m.find_all(b"Children"):
            for c, v in ch.props:
                if c == "S":
                    parent_of[v] = m.props[0][1]
    takes = root.find(b"Takes")
    take = takes.find(b"Take") if takes is not None else None
    take_models = {n.props[0][1]: n for n in (take.find_all(b"Model") if take else [])
                   if n.props}
    objects = FbxNode(b"Objects", [], [])
    connections = FbxNode(b"Connections", [], [])
    for m in models:
        name = m.props[0][1]
        trs = _channel_defaults(m) or _channel_defaults(take_models.get(name))
        props60 = FbxNode(b"Properties60", [], [
            FbxNode(b"Property", [("S", key), ("S", key), ("S", b"A")] +
                    [("D", float(x)) for x in trs.get(key, default)])
            for key, default in ((b"Lcl Translation", (0, 0, 0)), (b"Lcl Rotation", (0, 0, 0)),
                                 (b"Lcl Scaling", (1, 1, 1)))])
        kids = [props60]
        verts = m.find(b"Vertices")
        pvi = m.find(b"PolygonVertexIndex")
        if verts is not None and pvi is not None:
            kids += [verts, pvi]
            normals = m.find(b"Normals")
            if normals is not None:
                mapping = b"ByVertice" if len(normals.props) == len(verts.props) else \
                    b"ByPolygonVertex"
                kids.append(_layer(b"LayerElementNormal", mapping, b"Direct", normals))
            uvinfo = m.find(b"GeometryUVInfo")
            uv = uvinfo.find(b"TextureUV") if uvinfo is not None else None
            uvi = uvinfo.find(b"TextureUVVerticeIndex") if uvinfo is not None else None
            if uv is not None and uvi is not None and len(uvi.props) == len(pvi.props):
                kids.append(_layer(b"LayerElementUV", b"ByPolygonVertex", b"IndexToDirect",
                                   FbxNode(b"UV", uv.props), FbxNode(b"UVIndex", uvi.props)))
        sub = b"Mesh" if verts is not None else b"Null"
        objects.children.append(FbxNode(b"Model", [("S", name), ("S", sub)], kids))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", name),
                                                         ("S", parent_of.get(name, b"Scene"))]))
        _fbx5_skin(m, name, objects, connections)
    out = FbxNode(b"", [], [objects, connections])
    if takes is not None:
        out.children.append(takes)  # type: ignore[union-attr]
    return out


def _fbx5_skin(model: FbxNode, name: bytes, objects: FbxNode, connections: FbxNode) -> None:
    """FBX 5.x skins: ``Link "Bone"`` children of the mesh model (Indexes,
    Weights, Transform, TransformLink as scalar lists) become a 6.x Skin
    deformer with one Cluster per bone."""
    links = [ln for ln in model.find_all(b"Link") if ln.props and ln.props[0][0] == "S"]
    if not links:
        return
    skin_id = b"Deformer::Skin " + name
    objects.children.append(FbxNode(b"Deformer", [("S", skin_id), ("S", b"Skin")], []))
    connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", skin_id),
                                                     ("S", name)]))
    for k, link in enumerate(links):
        bone = link.props[0][1]
        cluster_id = b"SubDeformer::Cluster %d " % k + name + b" " + bone
        kids = [c for c in link.children or ()
                if c.name in (b"Indexes", b"Weights", b"Transform", b"TransformLink")]
        objects.children.append(FbxNode(b"Deformer", [("S", cluster_id), ("S", b"Cluster")],
                                        kids))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", cluster_id),
                                                         ("S", skin_id)]))
        connections.children.append(FbxNode(b"Connect", [("S", b"OO"), ("S", bone),
                                                         ("S", cluster_id)]))


def _layer(name: bytes, mapping: bytes, reference: bytes, *data: FbxNode) -> FbxNode:
    return FbxNode(name, [("I", 0)], [
        FbxNode(b"MappingInformationType", [("S", mapping)]),
        FbxNode(b"ReferenceInformationType", [("S", reference)]), *data])


def _channel_defaults(model: FbxNode | None) -> dict:
    """{b"Lcl Translation": (x, y, z), ...} from a 5.x/6.x Channel "Transform"."""
    out: dict = {}
    if model is None:
        return out
    transform = next((c for c in model.find_all(b"Channel")
                      if c.props and c.props[0][1] == b"Transform"), None)
    for ch in transform.find_all(b"Channel") if transform is not None else ():
        key = {b"T": b"Lcl Translation", b"R": b"Lcl Rotation",
               b"S": b"Lcl Scaling"}.get(ch.props[0][1] if ch.props else b"")
        if key is None:
            continue
        vals = []
        for axis in (b"X", b"Y", b"Z"):
            a = next((c for c in ch.find_all(b"Channel") if c.props and c.props[0][1] == axis),
                     None)
            d = a.find(b"Default") if a is not None else None
            vals.append(float(d.props[0][1]) if d is not None and d.props and
                        d.props[0][0] in "DFIL" else (1.0 if key == b"Lcl Scaling" else 0.0))
        out[key] = vals
    return out
