"""Volume archives: the layout the engine writes, exact round trips, member
paths (ARCHIVE::member) seen through by every command, ls/extract, refusals."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import potsherd
from potsherd.cli import main
from potsherd.core.errors import FormatError
from potsherd.formats.darkstar import world_examples as we
from potsherd.formats.darkstar.volumes import build_volume, list_members

P = struct.pack


def packed_volume(files: list[tuple[bytes, bytes]]) -> bytes:
    """An independent packing of a PVOL (engine layout: dword-aligned VBLKs)."""
    body, offsets = b"", []
    for _, data in files:
        offsets.append(8 + len(body))
        body += b"VBLK" + P("<I", 0x80000000 | len(data)) + data + bytes((-len(data)) % 4)
    names = b"".join(n + b"\0" for n, _ in files)
    index, off = b"", 0
    for (n, data), bo in zip(files, offsets):
        index += P("<IiIIB", 0, off, bo, len(data), 0)
        off += len(n) + 1
    footer = (b"vols" + P("<I", len(names)) + names + bytes(len(names) % 2)
              + b"voli" + P("<I", len(index)) + index + bytes(len(index) % 2))
    return b"PVOL" + P("<I", 8 + len(body)) + body + footer


FILES = [(b"a.txt", b"hello"), (b"Sub\\B.DTS", b"12345678"), (b"c", b"")]


def test_builder_matches_the_engine_layout_and_round_trips():
    data = build_volume([(n.decode(), d) for n, d in FILES])
    assert data == packed_volume(FILES)
    doc = potsherd._registry.decode(data, path="x.vol")
    assert doc.format == "vol" and doc.encode() == data and doc.codec.opaque_bytes(doc) == 0
    for form in ("wire", "readable"):
        assert potsherd.from_json(json.dumps(doc.to_json(form))).encode() == data
    ms = list_members(doc)
    assert [(m.name, m.size, m.compression) for m in ms] == [
        ("a.txt", 5, "none"), ("Sub\\B.DTS", 8, "none"), ("c", 0, "none")]
    assert doc.codec.read_member(doc, "sub/b.dts") == b"12345678"     # case and slash blind


def test_odd_gaps_and_foreign_blocks_are_kept():
    data = bytearray(packed_volume(FILES))
    # replace the first block's pad with junk, and put raw bytes before the footer
    junk = b"\x01\x02\x03"
    footer = struct.unpack_from("<I", data, 4)[0]
    data = bytes(data[:footer]) + b"??" + junk + bytes(data[footer:])
    data = data[:4] + P("<I", footer + 5) + data[8:]
    doc = potsherd._registry.decode(data, path="x.vol")
    assert doc.encode() == data
    assert doc.codec.opaque_bytes(doc) == 5
    assert doc.codec.read_member(doc, "a.txt") == b"hello"


def test_member_paths_in_read_info_and_convert(tmp_path, capsys):
    vol = tmp_path / "game.vol"
    vol.write_bytes(we.volume_bytes())
    doc = potsherd.read(f"{vol}::CUBE.DIS")
    assert doc.format == "dis" and doc.encode() == we.dis_bytes()
    assert main(["info", f"{vol}::cube-0.dig"]) == 0
    assert "format: dig" in capsys.readouterr().out
    assert main(["convert", f"{vol}::cube.dis", str(tmp_path / "c.glb")]) == 0
    assert (tmp_path / "c.glb").read_bytes()[:4] == b"glTF"
    assert main(["info", f"{vol}::nope.dts"]) == 1
    assert "no member 'nope.dts'" in capsys.readouterr().err


def test_ls_and_extract(tmp_path, capsys):
    vol = tmp_path / "game.vol"
    vol.write_bytes(build_volume([("a.txt", b"hello"), ("..\\..\\evil.txt", b"x"), ("c", b"")]))
    assert main(["ls", str(vol)]) == 0
    out = capsys.readouterr().out
    assert "         5  none   a.txt" in out and "3 members, 6 bytes" in out
    dest = tmp_path / "out"
    assert main(["extract", str(vol), "-o", str(dest), "-q"]) == 0
    assert (dest / "a.txt").read_bytes() == b"hello"
    assert (dest / "evil.txt").read_bytes() == b"x"                # kept inside the folder
    assert not (tmp_path.parent / "evil.txt").exists()
    assert main(["extract", str(vol), "missing", "-o", str(dest)]) == 1


def test_compressed_members_list_but_lz_and_bad_lzh_do_not_extract():
    data = bytearray(packed_volume(FILES))
    footer = struct.unpack_from("<I", data, 4)[0]
    idx = data.index(b"voli", footer) + 8
    data[idx + 16] = 2                                            # a.txt: LZ
    doc = potsherd._registry.decode(bytes(data), path="x.vol")
    assert list_members(doc)[0].compression == "lz"
    with pytest.raises(FormatError, match="lz-compressed"):
        doc.codec.read_member(doc, "a.txt")
    data[idx + 16] = 3               # LZH, but "hello" is no LZH stream of 5 bytes
    doc = potsherd._registry.decode(bytes(data), path="x.vol")
    assert list_members(doc)[0].compression == "lzh"
    with pytest.raises(FormatError, match="LZH stream ends"):
        doc.codec.read_member(doc, "a.txt")


def test_hostile_volumes():
    with pytest.raises(FormatError) as e:
        potsherd._registry.decode(b"PVOL" + P("<I", 10 ** 6), path="x.vol")
    assert e.value.offset == 4 and e.value.path == "footerOffset"
    # an index pointing at a block that is not there
    data = bytearray(packed_volume(FILES))
    footer = struct.unpack_from("<I", data, 4)[0]
    idx = data.index(b"voli", footer) + 8
    data[idx + 8:idx + 12] = P("<I", 9999)
    doc = potsherd._registry.decode(bytes(data), path="x.vol")
    with pytest.raises(FormatError, match="no block at offset 9999"):
        doc.codec.read_member(doc, "a.txt")
    # edited index column lengths disagree
    doc = potsherd._registry.decode(packed_volume(FILES), path="x.vol")
    doc.root["footer"][1]["items"]["size"] = np.zeros(1, "<u4")
    with pytest.raises(FormatError, match="differ in length"):
        doc.encode()


def test_rle_members_expand():
    from potsherd.formats.darkstar.volumes import rle_decode, rle_encode
    raw = b"abc" + b"\0" * 300 + bytes(range(200)) + b"zz"
    packed = rle_encode(raw)
    assert len(packed) < len(raw) and rle_decode(packed, len(raw)) == raw
    assert rle_decode(bytes([0x83, 7, 2, 1, 2]), 5) == b"\x07\x07\x07\x01\x02"
    data = bytearray(packed_volume([(b"a.txt", packed)]))
    footer = struct.unpack_from("<I", data, 4)[0]
    idx = data.index(b"voli", footer) + 8
    data[idx + 12:idx + 17] = P("<IB", len(raw), 1)                # size uncompressed, RLE
    doc = potsherd._registry.decode(bytes(data), path="x.vol")
    assert doc.encode() == bytes(data)
    assert doc.codec.read_member(doc, "a.txt") == raw
    with pytest.raises(FormatError, match="ends after"):
        rle_decode(packed[:10], len(raw))


def test_tree_lookup_finds_volume_members_within_the_callers_limits(tmp_path):
    """Bare names are found inside the volumes of a game tree (through the shared
    resolver's walker); the volume is read within the caller's limits, so a volume
    over them lists nothing (the control: default limits find the member)."""
    from potsherd.core.limits import Limits
    from potsherd.formats.darkstar.textures import find_in_tree
    vol = tmp_path / "art.vol"
    vol.write_bytes(build_volume([("Skin.BMP", we.bitmap_bytes(4, 4, mips=1))]))
    (tmp_path / "loose.bmp").write_bytes(we.bitmap_bytes(2, 2, mips=1))
    assert find_in_tree("skin.bmp", [str(tmp_path)]) == f"{vol}::Skin.BMP"
    assert find_in_tree("LOOSE.bmp", [str(tmp_path)]) == str(tmp_path / "loose.bmp")
    small = Limits(max_input=vol.stat().st_size - 1)
    assert find_in_tree("skin.bmp", [str(tmp_path)], small) is None
    assert find_in_tree("loose.bmp", [str(tmp_path)], small) == str(tmp_path / "loose.bmp")


def test_textures_of_a_volume_loaded_from_json(tmp_path):
    """A document from JSON has no read limits: the volume's members are then
    decoded within the defaults (this raised NameError)."""
    doc = potsherd.from_json(potsherd.read(we.volume_bytes(), format="vol").to_json("wire"))
    assert doc.limits is None
    pal = tmp_path / "world.ppl"
    pal.write_bytes(we.pl98_bytes())
    pics = doc.codec.textures(doc, palette=str(pal))
    assert [(n, p.size) for n, p in pics] == [("wall", (16, 16)), ("roof", (8, 8))]
