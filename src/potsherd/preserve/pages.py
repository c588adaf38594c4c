"""Format documentation pages in the shape of a PRONOM submission, generated from
the codecs' declarations: name, versions, extensions, potsherd id, byte
sequences (PRONOM syntax, with offsets), a description, the family's format
document, and sample files made by potsherd's own encoders (no game content).

``potsherd signatures --pages DIR`` writes one Markdown page per codec, an index,
and with ``samples=True`` a ``samples/`` folder: each codec that imports glTF
encodes the example cube (:mod:`potsherd.examples`) into its own format.
"""
from __future__ import annotations

import os
from typing import Iterable

from .. import families, registry
from ..core.fileio import atomic_write
from ..registry import Codec
from .ids import FormatEntry, codec_entries, format_id
from .signatures import collisions, pronom_pattern


def _family_doc(codec: Codec) -> str:
    try:
        return families.family(codec.family).docs
    except KeyError:
        return ""


def page(codec: Codec, sample: str | None = None,
         clashes: list[set[str]] | None = None) -> str:
    """The Markdown page of one codec's format (every version entry on it)."""
    ents: list[FormatEntry] = codec_entries(codec)
    lines = [f"# {codec.description or codec.name}", "",
             "| Field | Value |", "|---|---|",
             f"| potsherd id | `{format_id(codec)}` |",
             f"| Family | {codec.family} |",
             f"| Codec | `{codec.name}` ({codec.origin}) |",
             f"| Extensions | {', '.join(f'`{e}`' for e in codec.extensions) or 'none'} |",
             "| MIME type | application/octet-stream |",
             f"| Byte order | little-endian unless a signature says otherwise |"]
    versions = [e.version for e in ents if e.version]
    lines.append(f"| Versions with a layout of their own | {', '.join(versions) or 'one layout'} |")
    doc = _family_doc(codec)
    if doc:
        lines.append(f"| Format document | `{doc}` |")
    lines += ["", "## Description", "",
              f"{codec.description or codec.name}. Read and written byte for byte by potsherd "
              f"(`potsherd dump` / `build`); "
              + ("exported to glTF 2.0 by `potsherd convert`. " if codec.to_scene else "")
              + ("Textures extracted to PNG by `potsherd textures`. " if codec.textures else "")
              + ("Imported from glTF 2.0. " if codec.from_scene else ""), ""]
    lines += ["## Internal signatures", ""]
    sigs = [(e, s) for e in ents for s in e.signatures]
    if not sigs:
        lines += ["None: the format has no magic bytes or fixed version word. Identifiers "
                  "can name it by extension only; `potsherd identify` names it by decoding "
                  "its structure completely (basis `structure`).", ""]
    else:
        lines += ["Offsets count from the start of the file (PRONOM `BOFoffset`); "
                  "`{n}` skips n bytes, `{n-m}` between n and m.", "",
                  "| Entry (PUID) | Version | Byte sequence | Sequences at offsets |",
                  "|---|---|---|---|"]
        for e, s in sigs:
            at = "; ".join(f"{q.offset}" + (f"-{q.max_offset}" if q.max_offset is not None else "")
                           + f": `{q.data.hex(' ').upper()}`" for q in
                           sorted(s.sequences, key=lambda q: q.offset))
            lines.append(f"| `{e.id}` | {s.version or e.version or 'any'} | "
                         f"`{pronom_pattern(s)}` | {at} |")
        lines.append("")
        pri = [e for e in ents if e.priority_over]
        if pri:
            lines += ["Each versioned entry has priority over the format's catch-all entry "
                      "(`HasPriorityOverFileFormatID`).", ""]
    mine = {e.id for e in ents}
    shared = [g for g in (clashes or []) if g & mine]
    if shared:
        lines += ["## Shared signatures", ""]
        for g in shared:
            lines.append(f"- the same bytes identify {', '.join(f'`{x}`' for x in sorted(g))}: "
                         "only the extension (and the structure, for `potsherd identify`) "
                         "tells them apart.")
        lines.append("")
    lines += ["## Sample file", ""]
    if sample:
        lines += [f"`{sample}`: the example cube of `potsherd example`, encoded by potsherd's "
                  f"own {codec.name} writer (no game content).", ""]
    else:
        lines += ["None yet: potsherd writes this format from a decoded file or its JSON "
                  "(`potsherd build`), not from scratch.", ""]
    return "\n".join(lines)


def _cube_glb(folder: str) -> str:
    from .. import examples
    from ..registry import from_json
    from ..export import gltf
    doc = from_json(examples.n3pmesh_cube_document())
    path = os.path.join(folder, ".cube.glb")
    data = gltf.glb_bytes(*gltf.scene_to_gltf(gltf.document_scene(doc, None), True))
    atomic_write(path, data)
    return path


#: codec name -> why the example cube gave it no sample (filled by make_samples)
SKIPPED: dict[str, str] = {}


def make_samples(folder: str, codecs: Iterable[Codec]) -> dict[str, str]:
    """Encode the example cube into every codec that imports glTF; returns
    codec name -> sample path relative to ``folder``.  A format the cube cannot
    make (an animation, a terrain) is left out with the importer's reason in
    :data:`SKIPPED`."""
    from .. import importer
    from ..core.errors import FormatError
    os.makedirs(os.path.join(folder, "samples"), exist_ok=True)
    glb = _cube_glb(folder)
    out: dict[str, str] = {}
    try:
        for c in codecs:
            if c.from_scene is None or not c.extensions:
                continue
            rel = f"samples/cube-{c.name}{c.extensions[0]}"
            try:
                importer.import_gltf(glb, os.path.join(folder, rel), format=c.name)
            except (FormatError, ValueError) as e:  # a format needing more than a cube
                SKIPPED[c.name] = f"{type(e).__name__}: {e}"
                continue
            out[c.name] = rel
    finally:
        os.remove(glb)
    return out


def write_pages(folder: str, *, samples: bool = False) -> list[str]:
    """One page per registered codec plus ``index.md``; returns the files written."""
    os.makedirs(folder, exist_ok=True)
    codecs = registry.codecs()
    sample_of = make_samples(folder, codecs) if samples else {}
    clashes = collisions()
    written = []
    index = ["# potsherd formats: PRONOM-style pages", "",
             "Generated from the codecs' declarations (`potsherd signatures --pages DIR`).", "",
             "| potsherd id | Format | Extensions | Signature |", "|---|---|---|---|"]
    for c in codecs:
        name = f"{c.family}-{c.name}.md"
        atomic_write(os.path.join(folder, name),
                     page(c, sample_of.get(c.name), clashes).encode("utf-8"))
        written.append(os.path.join(folder, name))
        kind = "bytes" if c.declared_signatures() else "extension only"
        index.append(f"| [`{format_id(c)}`]({name}) | {c.description or c.name} | "
                     f"{', '.join(c.extensions)} | {kind} |")
    atomic_write(os.path.join(folder, "index.md"), ("\n".join(index) + "\n").encode("utf-8"))
    written.append(os.path.join(folder, "index.md"))
    return written
