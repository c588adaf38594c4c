"""How each Tomb Raider engine lights a vertex: the multiplier its hardware
renderer puts on the texel, read from the public reimplementations (TRX for
TR1/TR2, tomb3, TOMB4, TOMB5).  The level export writes it as COLOR_0 and the
wad conversion of TR1-TR3 meshes turns it into TR4 shades."""
from __future__ import annotations

import numpy as np


def room_light(engine: int, verts: np.ndarray) -> tuple[np.ndarray, int]:
    """A room's vertex light as the multiplier (0..1 per channel) each engine's
    hardware renderer puts on the texel, and how many values it draws brighter
    than the texture (clipped to 1 here: glTF's COLOR_0 only multiplies).

    * TR1 (TRX's GL renderer, as the ATI port): ``(8192 - lighting) / 4096`` -
      4096 is the texture as stored, brighter values multiply it by up to 2;
    * TR2: its second lighting value, ``((8191 - light) >> 4) / 255`` saturating
      at 1 (D3D modulate: 4096 and brighter all show the texture);
    * TR3: RGB 555, ``(v << 3) / 256`` (no doubling);
    * TR4 (RGB 555, ``c = v << 3``) and TR5 (ARGB, ``c`` the byte): ``2c / 255``
      up to 1, the part of ``c`` above 128 added as a specular highlight
      (tomb4/tomb5 ``drawroom.cpp``): 128 is the texture as stored."""
    if engine in (1, 2):        # a grey light, drawn as a mesh shade is (mesh_light)
        m, brighter = mesh_light(engine, verts["lighting"] if engine == 1 else verts["colour"])
        return np.repeat(m[:, None], 3, axis=1), brighter
    c = verts["colour"].astype(np.uint32)
    if engine in (3, 4):
        c = np.stack([(c >> 10) & 31, (c >> 5) & 31, c & 31], axis=1) << 3
    else:
        c = np.stack([(c >> 16) & 255, (c >> 8) & 255, c & 255], axis=1)
    c = c.astype(np.int64)
    if engine == 3:
        return c / 256.0, 0
    return np.minimum(2 * c, 255) / 255.0, int((c > 128).any(axis=1).sum())


def mesh_light(engine: int, shades: np.ndarray) -> tuple[np.ndarray, int]:
    """A mesh's vertex shades (0 bright .. 8191 dark, meshes without normals)
    as each engine's multiplier on the texel, for a static of neutral
    intensity (a shared glTF mesh cannot carry each placement's), and how many
    the engine draws brighter than the texture:

    * TR1: ``(8192 - shade) / 4096`` (4096 neutral, up to 2; TRX);
    * TR2: ``((8191 - shade) >> 4) / 255`` saturating at 1;
    * TR3: ``((8191 - shade) >> 5) / 256``, where 0 counts as 255: the darkest
      31 shades draw at full brightness in the game (tomb3 ``litesrc.cpp``);
    * TR4/TR5: ``255 - (shade >> 5)`` halved by the neutral tint, then doubled
      (tomb4/tomb5 ``output.cpp``): the even value below it, over 255."""
    s = np.clip(np.asarray(shades, np.int64), 0, 8191)
    if engine == 1:
        m = (8192 - s) / 4096.0
        return np.minimum(m, 1.0), int((m > 1.0).sum())
    if engine == 2:
        return np.minimum(((8191 - s) >> 4) / 255.0, 1.0), 0
    if engine == 3:
        c = (8191 - s) >> 5
        return np.where(c == 0, 255, c) / 256.0, 0
    return (((255 - (s >> 5)) * 128) >> 8 << 1) / 255.0, 0


def tr4_shades(light: np.ndarray) -> np.ndarray:
    """TR4 mesh shades that draw ``light`` (a multiplier in 0..1): TR4 shows
    ``255 - (shade >> 5)`` over 255, so the shade is the rest of 255 times 32."""
    c = np.rint(np.clip(np.asarray(light, np.float64), 0.0, 1.0) * 255).astype(np.int64)
    return ((255 - c) * 32).astype(np.int16)


def brighter_warning(count: int, what: str, engine: int) -> str:
    """The warning for ``count`` ``what`` (room vertices, mesh vertices) the
    engine draws brighter than their texture, which COLOR_0 cannot hold."""
    how = ("multiplies the texture by up to 2" if engine == 1 else
           "adds the light above its neutral level as a specular highlight")
    return (f"{count} {what} are lit brighter than their texture: the engine {how}, which "
            "glTF's COLOR_0 (a multiplier up to 1) cannot hold; they show the texture at full "
            "brightness")
