"""The animation part of the FBX writer: stacks, layers, curve nodes and curves
(KTime keys, constant/linear flags), Euler rotations from quaternions, and Takes.
Mixed into :class:`potsherd.formats.fbx.importing._FbxWriter`, whose ids, object list,
connections and node tables it uses."""
from __future__ import annotations

from typing import Any

import numpy as np

from ....scene.ops import frame_times, sample_channel
from ..model import FbxNode
from .nodes import (FLAG_CONSTANT, FLAG_LINEAR, _arr, _d, _i, _ktime, _l, _n, _obj_name,
                           _p, _props70, _s, euler_xyz_degrees, unique_names)


class AnimationParts:
    """Animation stacks of a scene as FBX records (see the module docstring)."""

    def curve(self, times: np.ndarray, values: np.ndarray, flag: int) -> int:
        cid = self.ids.new()
        n = len(times)
        self.add("AnimationCurve", _n("AnimationCurve", _l(cid), _obj_name("", "AnimCurve"),
                                      _s(""), children=[
                                          _n("Default", _d(values[0] if n else 0)),
                                          _n("KeyVer", _i(4008)),
                                          _n("KeyTime", _arr("l", _ktime(times))),
                                          _n("KeyValueFloat", _arr("f", values)),
                                          _n("KeyAttrFlags", _arr("i", [flag])),
                                          _n("KeyAttrDataFloat", _arr("f", [0, 0, 0, 0])),
                                          _n("KeyAttrRefCount", _arr("i", [n]))]))
        return cid

    def curve_node(self, layer: int, name: str, target: int, prop: str, axes: list,
                   times: np.ndarray, values: np.ndarray, flag: int) -> None:
        nid = self.ids.new()
        defaults = [_p(f"d|{a}", "Number", "", "A", _d(values[0, k]))
                    for k, a in enumerate(axes)]
        self.add("AnimationCurveNode", _n("AnimationCurveNode", _l(nid),
                                          _obj_name(name, "AnimCurveNode"), _s(""),
                                          children=[_props70(*defaults)]))
        self.oo(nid, layer)
        self.op(nid, target, prop)
        for k, a in enumerate(axes):
            self.op(self.curve(times, values[:, k], flag), nid, f"d|{a}")

    def channel_samples(self, ch: Any, path: str) -> tuple:
        """(times, values, flag): the channel's own keys where FBX interpolates
        them the same way, else resampled at the frame rate plus its key times."""
        times = np.asarray(ch.times, np.float64).reshape(-1)
        if ch.interpolation == "STEP":
            per = 1
            vals = np.asarray(ch.values, np.float64).reshape(len(times) * per, -1)
            return times, vals, FLAG_CONSTANT
        if ch.interpolation == "LINEAR" and path != "rotation":
            return times, np.asarray(ch.values, np.float64).reshape(len(times), -1), FLAG_LINEAR
        grid = frame_times(float(times[-1] - times[0]), self.fps) + times[0]
        grid = grid[grid < times[-1] - 1e-6]
        t = np.unique(np.concatenate([times, grid]))
        return t, sample_channel(ch, t), FLAG_LINEAR

    def animations(self) -> tuple:
        sc = self.scene
        names, stop = [], 0.0
        stack_names = unique_names([a.name or f"Take {ai + 1:03d}"
                                    for ai, a in enumerate(sc.animations)])
        for ai, anim in enumerate(sc.animations):
            chans = [c for c in anim.channels if len(np.asarray(c.times).reshape(-1))]
            span = anim.extras.get("fbx_time_span")
            if not chans and not span:
                continue
            sid, lid = self.ids.new(), self.ids.new()
            name = stack_names[ai]
            if span:                    # the source's stack/take times, kept as they were
                start, end = float(span[0]), float(span[1])
            else:
                end = max(float(np.max(c.times)) for c in chans)
                start = min(float(np.min(c.times)) for c in chans)
            stop = max(stop, end)
            kt = [_l(int(_ktime(start))), _l(int(_ktime(end)))]
            self.add("AnimationStack", _n("AnimationStack", _l(sid), _obj_name(name, "AnimStack"),
                                          _s(""), children=[_props70(
                                              _p("LocalStart", "KTime", "Time", "", kt[0]),
                                              _p("LocalStop", "KTime", "Time", "", kt[1]),
                                              _p("ReferenceStart", "KTime", "Time", "", kt[0]),
                                              _p("ReferenceStop", "KTime", "Time", "", kt[1]))]))
            self.add("AnimationLayer", _n("AnimationLayer", _l(lid),
                                          _obj_name(name, "AnimLayer"), _s(""),
                                          children=[]))
            self.oo(lid, sid)
            names.append((name, start, end))
            for ch in chans:
                if ch.path == "weights":
                    rec = self.node_geometry.get(ch.node)
                    if rec is None or not rec["channels"]:
                        self.warnings.append(f"animation {name!r}: weights of node {ch.node} "
                                             "without blend shapes dropped")
                        continue
                    t, v, flag = self.channel_samples(ch, "weights")
                    v = v.reshape(len(t), -1)
                    for k, cid in enumerate(rec["channels"][:v.shape[1]]):
                        self.curve_node(lid, "DeformPercent", cid, "DeformPercent",
                                        ["DeformPercent"], t, 100.0 * v[:, k:k + 1], flag)
                    continue
                mid = self.model_id.get(ch.node)
                if ch.node in self.free_skinned:   # glTF moves its children, not its mesh
                    mid = self.xform_of.get(ch.node)
                    if mid is None:
                        continue
                if mid is None:
                    self.warnings.append(f"animation {name!r}: channel on a folded node dropped")
                    continue
                if sc.nodes[ch.node].matrix is not None:
                    self.warnings.append(f"animation {name!r}: node {ch.node} has a matrix; "
                                         "its animation is written over its TRS")
                t, v, flag = self.channel_samples(ch, ch.path)
                if ch.path == "rotation":
                    e = euler_xyz_degrees(v)
                    v = np.degrees(np.unwrap(np.radians(e), axis=0))
                    prop, short = "Lcl Rotation", "R"
                elif ch.path == "translation":
                    prop, short = "Lcl Translation", "T"
                else:
                    prop, short = "Lcl Scaling", "S"
                self.curve_node(lid, short, mid, prop, ["X", "Y", "Z"], t, v, flag)
        return names, stop

    def takes(self, names: list) -> FbxNode:
        kids = [_n("Current", _s(names[0][0] if names else ""))]
        for name, start, end in names:
            kt = (_l(int(_ktime(start))), _l(int(_ktime(end))))
            kids.append(_n("Take", _s(name), children=[
                _n("FileName", _s("".join(ch if ch.isalnum() else "_" for ch in name) + ".tak")),
                _n("LocalTime", *kt), _n("ReferenceTime", *kt)]))
        return _n("Takes", children=kids)

