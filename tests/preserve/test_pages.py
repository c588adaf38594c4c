"""PRONOM-style format pages and their sample files, generated from the codecs'
declarations."""
from __future__ import annotations

import os

from potsherd import registry
from potsherd.preserve import pages
from potsherd.preserve.identify import identify
from potsherd.preserve.ids import codec_entries
from potsherd.preserve.signatures import collisions, pronom_pattern
from corpus_paths import ROOT

COMMITTED = ROOT / "docs" / "formats" / "pronom"


def test_every_page_carries_its_entries_and_byte_sequences():
    for c in registry.codecs():
        text = pages.page(c)
        for e in codec_entries(c):
            assert f"`{e.id}`" in text
            for s in e.signatures:
                assert f"`{pronom_pattern(s)}`" in text
        if not c.declared_signatures():
            assert "by extension only" in text


def test_committed_pages_are_what_the_declarations_generate():
    """The pages in docs/formats/pronom are regenerated, not edited: each one
    (of a codec that exists) equals its generation.  Regenerate with
    ``potsherd signatures --pages docs/formats/pronom``."""
    clashes = collisions()
    by_file = {f"{c.family}-{c.name}.md": c for c in registry.codecs()}
    seen = 0
    for name in sorted(os.listdir(COMMITTED)):
        if name in by_file:
            assert (COMMITTED / name).read_text("utf-8") == \
                pages.page(by_file[name], None, clashes), name
            seen += 1
    assert seen >= 30


def test_samples_are_made_by_the_encoders_and_identify_as_their_format(tmp_path):
    written = pages.write_pages(str(tmp_path), samples=True)
    assert str(tmp_path / "index.md") in written
    samples = pages.make_samples(str(tmp_path / "again"), registry.codecs())
    importers = [c.name for c in registry.codecs() if c.from_scene is not None]
    assert set(samples) <= set(importers)
    # every importer made a sample, or said why the cube is not enough for it
    for name in importers:
        assert name in samples or pages.SKIPPED.get(name), name
    assert len(samples) >= 10
    for name, rel in samples.items():
        (r,) = identify([str(tmp_path / "again" / rel)], members=False)
        assert (r.format, r.valid) == (name, True), (name, r)
        assert f"`{rel}`" in (tmp_path / f"{registry.get_codec(name).family}-{name}.md") \
            .read_text("utf-8")
