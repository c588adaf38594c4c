"""The DROID and FIDO signature files generated from the codecs' declarations,
checked by FIDO itself (PyPI ``opf-fido``) on the corpus and on control files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest

from potsherd import registry
from potsherd.cli import main
from potsherd.preserve import signatures
from potsherd.preserve.identify import by_extension, identify
from potsherd.preserve.ids import entries
from potsherd.registry import ByteSequence, Signature
from corpus_paths import CORPUS_ROOT
from preserve_fixtures import make_controls, make_game_tree

NS = {"d": signatures.DROID_NS}


def test_regex_and_pronom_pattern_say_what_the_signature_says():
    sig = Signature("7", (ByteSequence(0, b"PERS"), ByteSequence(8, b"\x09\x00TS"),
                          ByteSequence(20, b"\x07\x00\x00\x00")))
    assert signatures.pronom_pattern(sig) == "50455253{4}09005453{8}07000000"
    rx = re.compile(signatures.regex(sig).encode("latin-1"))
    good = bytearray(40)
    good[0:4], good[8:12], good[20:24] = b"PERS", b"\x09\x00TS", b"\x07\x00\x00\x00"
    assert rx.match(bytes(good)) and sig.matches(bytes(good))
    bad = bytes(good[:20]) + b"\x08\x00\x00\x00" + bytes(good[24:])
    assert not rx.match(bad) and not sig.matches(bad)
    # a sequence anywhere in a range
    ranged = Signature("", (ByteSequence(0, b"; FBX", 3),))
    assert signatures.pronom_pattern(ranged) == "{0-3}3B20464258"
    rx = re.compile(signatures.regex(ranged).encode("latin-1"))
    for data, hit in ((b"; FBX 7.4", True), (b"\xef\xbb\xbf; FBX", True), (b"    ; FBX", False)):
        assert bool(rx.match(data)) is hit is ranged.matches(data), data


def test_droid_file_holds_every_entry_with_its_sequences(tmp_path):
    out = tmp_path / "potsherd-droid.xml"
    assert main(["signatures", "--droid", str(out)]) == 0
    root = ET.parse(out).getroot()
    sigs = {s.get("ID"): s for s in root.iterfind("d:InternalSignatureCollection/"
                                                   "d:InternalSignature", NS)}
    fmts = root.findall("d:FileFormatCollection/d:FileFormat", NS)
    ents = entries()
    assert [f.get("PUID") for f in fmts] == [e.id for e in ents]
    assert len({e.id for e in ents}) == len(ents)          # ids are unique
    ids = {f.get("ID"): f.get("PUID") for f in fmts}
    for f, e in zip(fmts, ents):
        refs = [x.text for x in f.findall("d:InternalSignatureID", NS)]
        assert len(refs) == len(e.signatures)
        for ref, sig in zip(refs, e.signatures):
            seqs = [bytes.fromhex(s.text) for s in
                    sigs[ref].findall("d:ByteSequence/d:SubSequence/d:Sequence", NS)]
            assert seqs == [s.data for s in sorted(sig.sequences, key=lambda s: s.offset)]
        assert [x.text for x in f.findall("d:Extension", NS)] == \
            [x.lstrip(".") for x in e.codec.extensions]
        assert [ids[x.text] for x in f.findall("d:HasPriorityOverFileFormatID", NS)] == \
            list(e.priority_over)
    # one entry per version group where layouts differ: FBX binary by record width
    by_id = {e.id: e for e in ents}
    assert by_id["potsherd/fbx/fbx/v7500-7700"].versions == ("7500", "7600", "7700")
    assert "7400" in by_id["potsherd/fbx/fbx/v3000-7400"].versions
    assert {f"potsherd/darkstar/dts/v{v}" for v in range(2, 9)} <= set(by_id)
    assert {"potsherd/trle/tr4wad/v129", "potsherd/trle/tr4wad/v130"} <= set(by_id)
    # formats without magic are extension-only entries (no signature)
    assert by_id["potsherd/ko/n3pmesh"].signatures == ()


def _fido(files: list[str], fido_xml: str) -> dict[str, list[tuple[str, str]]]:
    """FIDO's matches per file: [(match type, PUID)] (PRONOM's formats + ours)."""
    exe = shutil.which("fido")
    cmd = [exe] if exe else [sys.executable, "-m", "fido.fido"]
    listing = os.path.join(os.path.dirname(fido_xml), "files.txt")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(files) + "\n")
    proc = subprocess.run(cmd + ["-q", "-nocontainer", "-loadformats", fido_xml,
                                 "-matchprintf", "%(info.matchtype)s\t%(info.puid)s\t"
                                 "%(info.filename)s\n",
                                 "-nomatchprintf", "fail\t-\t%(info.filename)s\n",
                                 "-input", listing],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, list] = {}
    for line in proc.stdout.splitlines():
        kind, puid, name = line.split("\t", 2)
        out.setdefault(name, [])
        if kind != "fail":
            out[name].append((kind, puid))
    return out


@pytest.fixture(scope="module")
def fido_xml(tmp_path_factory):
    pytest.importorskip("fido", reason="opf-fido is not installed (pip install opf-fido)")
    path = tmp_path_factory.mktemp("sigs") / "potsherd-fido.xml"
    assert main(["signatures", "--fido", str(path)]) == 0
    return str(path)


def _check_agreement(files: list[str], fido_xml: str) -> int:
    """FIDO names each file potsherd names with potsherd's id (or, for formats
    whose signatures are the same bytes, a set including it) and names no file
    potsherd leaves unknown as a potsherd format.  Returns the files named."""
    collide = signatures.collisions()
    results = {r.path: r for r in identify(files, members=False)}
    fido = _fido(files, fido_xml)
    agreed = 0
    for path in files:
        ours = {p for _, p in fido.get(path, []) if p.startswith("potsherd/")}
        r = results[path]
        if r.format is None:
            if r.size == 0:  # FIDO names an empty file by its extension; potsherd does not
                assert all(k == "extension" for k, _ in fido.get(path, [])), fido[path]
                continue
            assert not ours, (path, ours, r.error)
            continue
        codec = registry.get_codec(r.format)
        if r.basis == "structure" and r.opaque_bytes == r.size and not ours:
            # kept whole, not understood (a Targa image named .dxt): FIDO's
            # PRONOM signature for what it really is wins over the extension
            assert any(k == "signature" for k, _ in fido[path]), (path, fido[path])
            agreed += 1
            continue
        if ours == {r.id}:
            agreed += 1
            continue
        # the same bytes for two formats: FIDO names both; potsherd's is among them
        group = next((g for g in collide if r.id in g), None)
        assert group is not None and r.id in ours and ours <= group, \
            (path, r.id, r.basis, sorted(ours), by_extension(codec))
        agreed += 1
    return agreed


def test_fido_names_the_fixture_tree_as_potsherd_does_and_no_control(fido_xml, tmp_path):
    tree = make_game_tree(tmp_path / "game")
    files = sorted(str(p) for p in tree.rglob("*") if p.is_file())
    assert _check_agreement(files, fido_xml) == len(files) - 1   # README.txt is unknown
    controls = [str(p) for p in make_controls(tmp_path / "controls")]
    fido = _fido(controls, fido_xml)
    for path in controls:
        ours = [p for _, p in fido.get(path, []) if p.startswith("potsherd/")]
        assert not ours, (path, ours)
    # FIDO still knows them: PRONOM's PNG, WAVE and Windows bitmap records match
    assert any(k == "signature" for k, _ in fido[str(tmp_path / "controls" / "picture.bmp")])
    assert any(k == "signature" for k, _ in fido[str(tmp_path / "controls" / "sound.sfx")])


@pytest.mark.corpus
@pytest.mark.slow
def test_fido_names_every_corpus_file_as_potsherd_does(fido_xml):
    if not CORPUS_ROOT.is_dir():
        pytest.skip("corpus not present")
    files = sorted(str(p) for p in CORPUS_ROOT.rglob("*") if p.is_file())
    named = _check_agreement(files, fido_xml)
    assert named > 400
