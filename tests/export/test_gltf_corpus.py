"""Every corpus model whose codec has ``to_scene`` converts to glTF with 0
validator errors.  Codecs are found through the registry, so family
converters are picked up as they land; formats without a converter yet are
skipped, as is the whole test when the corpus is absent.

``POTSHERD_GLTF_CORPUS_LIMIT`` caps files per family (default 400, i.e. all
of today's corpus; set 0 for no cap).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from potsherd import registry
from potsherd.core.errors import FormatError, UnknownFormatError
from potsherd.export.gltf import NoSceneError, document_scene, write_glb
from potsherd.export.validate import validate_many, validator_available
from corpus_paths import CORPUS_ROOT

CORPUS = CORPUS_ROOT
FAMILY_DIRS = ["ko", "dts", "fbx", "tr4wad"]
LIMIT = int(os.environ.get("POTSHERD_GLTF_CORPUS_LIMIT", "400"))


def _model_files(folder: Path) -> list:
    """Corpus files whose extension belongs to a codec with ``to_scene``."""
    exts = {e for c in registry.codecs() if getattr(c, "to_scene", None) is not None
            for e in c.extensions}
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in exts)
    if LIMIT and len(files) > LIMIT:                    # evenly spaced, deterministic
        step = len(files) / LIMIT
        files = [files[int(i * step)] for i in range(LIMIT)]
    return files


def convert_corpus(folder: Path, out_dir: Path) -> tuple:
    """Convert every model file; returns (converted [(src, glb)], skipped [(src, why)],
    failed [(src, error)])."""
    converted, skipped, failed = [], [], []
    for i, src in enumerate(_model_files(folder)):
        data = src.read_bytes()
        try:
            doc = registry.decode(data, path=str(src))
        except UnknownFormatError as e:
            skipped.append((src, f"undetected: {e}"))
            continue
        except FormatError as e:          # decoding is the family corpus tests' business
            skipped.append((src, f"does not decode: {e}"))
            continue
        try:
            scene = document_scene(doc, {"source_path": str(src)})
        except NoSceneError as e:
            skipped.append((src, str(e)))
            continue
        except FormatError as e:
            if getattr(e, "missing_references", False):   # e.g. an .n3chr whose parts are absent
                skipped.append((src, str(e)))
                continue
            failed.append((src, f"to_scene: {e}"))
            continue
        out = out_dir / f"{i:04d}_{src.name}.glb"
        try:
            write_glb(scene, out)
        except FormatError as e:
            failed.append((src, f"write: {e}"))
            continue
        converted.append((src, out))
    return converted, skipped, failed


@pytest.mark.parametrize("family", FAMILY_DIRS)
def test_corpus_models_export_valid_gltf(family, tmp_path):
    folder = CORPUS / family
    if not folder.is_dir():
        pytest.skip(f"corpus {folder} absent")
    if not any(getattr(c, "to_scene", None) is not None for c in registry.codecs()):
        pytest.skip("no codec has to_scene yet")
    t0 = time.monotonic()
    converted, skipped, failed = convert_corpus(folder, tmp_path)
    seconds = time.monotonic() - t0
    assert not failed, "\n".join(f"{s}: {e}" for s, e in failed[:20])
    if not converted:
        pytest.skip(f"no {family} file converts yet ({len(skipped)} skipped: "
                    f"{skipped[0][1] if skipped else 'no model files'})")
    if not validator_available():
        pytest.skip("node or the gltf-validator npm package is missing "
                    f"({len(converted)} files converted in {seconds:.1f} s, unvalidated)")
    reports = validate_many([out for _, out in converted])
    bad = [(src, r) for (src, _), r in zip(converted, reports) if r["errors"]]
    msg = []
    for src, r in bad[:10]:
        errs = [m for m in r["messages"] if m["severity"] == "error"][:3]
        msg.append(f"{src.relative_to(CORPUS)}: {r['errors']} errors: "
                   + "; ".join(f"{m['code']} {m.get('pointer')}: {m['message']}" for m in errs))
    assert not bad, f"{len(bad)} of {len(converted)} files invalid:\n" + "\n".join(msg)
    warnings = sum(r["warnings"] for r in reports)
    print(f"{family}: {len(converted)} converted, {len(skipped)} skipped, 0 errors, "
          f"{warnings} warnings, {seconds:.1f} s")


@pytest.mark.parametrize("family, sub", [("ko", "data"), ("dts", ""), ("tr4wad", ""), ("fbx", "")])
def test_an_exported_corpus_folder_comes_back_byte_exact_with_like(tmp_path, family, sub):
    """The whole-folder round trip a modder runs: export a game folder to glTF,
    import the folder back with ``--like`` the game folder.  Every glTF that has
    an importable original comes back as that original's file, byte for byte
    (a TR4 wad: every moveable of the glTF pasted back, unchanged; an FBX: the
    original, as the glTF still shows what it exports to)."""
    from potsherd.cli import main
    src = CORPUS / family / sub if sub else CORPUS / family
    if not src.is_dir():
        pytest.skip(f"{src} absent")
    glbs, back = tmp_path / "glb", tmp_path / "back"
    args = ["--data-root", str(src)] if family == "ko" else []
    main(["convert", str(src), str(glbs), "--to", "glb", "--jobs", "2", *args])
    main(["convert", str(glbs), str(back), "--like", str(src), "--jobs", "2"])
    outs = [p for p in back.rglob("*") if p.is_file()]
    paired = [p for p in outs if (src / p.relative_to(back)).is_file()]
    assert len(paired) >= {"ko": 100, "dts": 25, "tr4wad": 2, "fbx": 40}[family]
    differ = [str(p.relative_to(back)) for p in paired
              if p.read_bytes() != (src / p.relative_to(back)).read_bytes()]
    assert differ == []
    # the companions an .n3chr writes beside it are the only files without an original there
    assert all(p.suffix.lower() in (".n3cpart", ".n3cskins", ".n3cplug", ".n3pmesh", ".n3joint",
                                    ".n3anim", ".dxt") for p in outs if p not in paired)
