"""``python -m potsherd.cli.render model.glb out.png``: the renderer of
:mod:`potsherd.export.render` with its extra views (``--view``, ``--camera``);
``potsherd render`` is the everyday command."""
from __future__ import annotations

import argparse
import io
import os
import sys

from PIL import Image

from ..export.render import VIEWS, render, render_camera


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description="A small headless glTF renderer (numpy + Pillow) for checking conventions.")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--time", type=float, default=0.0, help="animation time in seconds")
    ap.add_argument("--animation", type=int, default=0, help="animation index (-1: none)")
    ap.add_argument("--size", type=int, default=256, help="tile size in pixels")
    ap.add_argument("--view", action="append", choices=tuple(VIEWS),
                    help="only these orthographic views (repeatable)")
    ap.add_argument("--camera", metavar="EX,EY,EZ,TX,TY,TZ[,FOV]",
                    help="one perspective view from eye E toward target T (glTF axes)")
    a = ap.parse_args(argv)
    anim = None if a.animation < 0 else a.animation
    if a.camera:
        vals = [float(x) for x in a.camera.split(",")]
        if len(vals) not in (6, 7):
            ap.error("--camera needs 6 or 7 numbers")
        img = render_camera(a.input, vals[:3], vals[3:6], fov=vals[6] if len(vals) == 7 else 60.0,
                            size=a.size, animation=anim, time=a.time)
    else:
        img = render(a.input, animation=anim, time=a.time, size=a.size,
                     views=tuple(a.view) if a.view else tuple(VIEWS))
    for note in img.info.get("notes", []):
        print(f"potsherd: warning: {note}", file=sys.stderr)
    buf = io.BytesIO()  # written atomically, like every potsherd output
    img.save(buf, format=Image.registered_extensions().get(os.path.splitext(a.output)[1].lower(), "PNG"))
    from ..core.fileio import atomic_write
    atomic_write(a.output, buf.getvalue())
    print(a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
