"""``potsherd convert``: to glTF, or between encodings of one family."""
from __future__ import annotations

import os
import sys

from ..core.errors import FormatError
from ..core.fileio import atomic_write


def run(args) -> int:
    from ..cli import read_doc, UsageError
    target = (args.to or os.path.splitext(args.output)[1].lstrip(".")).lower()
    if os.path.isdir(args.input):
        raise UsageError("folder conversion is not available yet")
    _, doc = read_doc(args.input, args)
    if target in ("glb", "gltf"):
        from . import gltf
        gltf.export_document(doc, args.output, binary=(target == "glb"),
                             options=vars(args))
        print(f"{args.output}: written")
        return 0
    conv = getattr(doc.codec, "convert", None)
    if conv is None:
        raise UsageError(f"{doc.format} cannot be converted to {target!r}")
    data = conv(doc, target, options=vars(args))
    atomic_write(args.output, data)
    print(f"{args.output}: {len(data)} bytes")
    return 0
