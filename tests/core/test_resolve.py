"""The shared resolver of referenced files: case-insensitive paths beside the file,
in its game tree and under data_root; listings cached; sizes refused by the limits."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import potsherd
from potsherd import resolve
from potsherd.core.errors import LimitError
from potsherd.core.limits import Limits
from potsherd.examples import write_examples


def _tree(tmp_path: Path) -> Path:
    """client/Item/Sword.n3pmesh (an example cube) and client/ui/a.dxt (junk)."""
    (tmp_path / "client" / "Item").mkdir(parents=True)
    (tmp_path / "client" / "ui").mkdir()
    cube = Path(write_examples(str(tmp_path / "ex"))[0])
    os.replace(cube, tmp_path / "client" / "Item" / "Sword.n3pmesh")
    (tmp_path / "client" / "ui" / "a.dxt").write_bytes(b"not a texture")
    return tmp_path / "client"


def test_windows_reference_found_case_insensitively_in_the_game_tree(tmp_path):
    client = _tree(tmp_path)
    source = client / "ui" / "x.n3chr"
    # the parent folder is a root only because its layout says it is the client
    assert resolve.Resolver(source).find(b"item\\SWORD.N3PMESH") is None
    r = resolve.Resolver(source, game_layout=("Item", "UI"))
    assert r.roots == [client / "ui", client]
    assert r.find(b"item\\SWORD.N3PMESH") == client / "Item" / "Sword.n3pmesh"
    assert r.find("C:\\client\\item\\sword.n3pmesh") == client / "Item" / "Sword.n3pmesh"
    assert r.find("Item/../Item/Sword.n3pmesh") is None   # no climbing out
    assert r.find("Item/missing.n3pmesh") is None


def test_data_root_first_then_by_bare_name(tmp_path):
    client = _tree(tmp_path)
    other = tmp_path / "elsewhere" / "a.n3chr"
    r = resolve.Resolver(other, data_root=client)
    assert r.roots[0] == client
    # only the file name matches: found anywhere below data_root
    assert r.find("objects\\deep\\sword.n3pmesh") == client / "Item" / "Sword.n3pmesh"
    # negative control: without data_root the same reference is not found
    assert resolve.Resolver(other).find("objects\\deep\\sword.n3pmesh") is None


def test_load_decodes_within_the_limits_and_warns(tmp_path):
    client = _tree(tmp_path)
    size = (client / "Item" / "Sword.n3pmesh").stat().st_size
    warnings: list[str] = []
    doc = resolve.Resolver(client / "x.n3chr").load("item\\sword.n3pmesh", warnings, "mesh")
    assert doc.format == "n3pmesh" and warnings == []
    small = Limits().replace(max_input=size - 1)
    doc = resolve.Resolver(client / "x.n3chr", limits=small).load("item\\sword.n3pmesh",
                                                                   warnings, "mesh")
    assert doc is None
    assert len(warnings) == 1 and warnings[0].startswith(
        f"mesh Sword.n3pmesh: referenced file of {size} bytes exceeds the limit of {size - 1}")
    assert resolve.Resolver(client / "x.n3chr").load("nothing.dxt", warnings, "texture") is None
    assert warnings[-1] == "texture 'nothing.dxt' not found"


def test_read_bounded_refuses_before_reading_and_non_files(tmp_path):
    p = tmp_path / "big.bin"
    p.write_bytes(b"x" * 100)
    assert resolve.read_bounded(p, Limits().replace(max_input=100)) == b"x" * 100
    with pytest.raises(LimitError) as ei:
        resolve.read_bounded(p, Limits().replace(max_input=99))
    assert ei.value.offset == 0 and "100 bytes" in str(ei.value)
    with pytest.raises(potsherd.FormatError):
        resolve.read_bounded(tmp_path, Limits())   # a folder
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(potsherd.FormatError):
        resolve.read_bounded(tmp_path / "fifo", Limits())   # refused, not a hang
    assert resolve.Resolver(tmp_path / "a.x").find("fifo") is None   # never opened


def test_listings_are_cached_per_batch(tmp_path):
    (tmp_path / "A.TXT").write_bytes(b"")
    listings = resolve.Listings()
    assert listings.child(tmp_path, "a.txt") == tmp_path / "A.TXT"
    (tmp_path / "b.txt").write_bytes(b"")
    assert listings.child(tmp_path, "b.txt") is None          # the listing is the batch's
    assert resolve.Listings().child(tmp_path, "B.TXT") == tmp_path / "b.txt"
    assert listings.sibling(tmp_path / "a.wad", ".txt") == tmp_path / "A.TXT"


def test_decoded_document_carries_its_limits(tmp_path):
    client = _tree(tmp_path)
    small = Limits().replace(max_input=1 << 20)
    doc = potsherd.read(client / "Item" / "Sword.n3pmesh", limits=small)
    assert doc.limits is small


def test_knight_online_references_honour_the_documents_limits(tmp_path):
    from potsherd.formats.ko.scene import Resolver as KoResolver
    from potsherd.scene import Scene
    client = _tree(tmp_path)
    size = (client / "Item" / "Sword.n3pmesh").stat().st_size
    scene = Scene()
    ok = KoResolver(str(client / "x.n3cplug"), None).load(b"Item\\Sword.n3pmesh", scene, "mesh")
    assert ok is not None and scene.warnings == []
    small = Limits().replace(max_input=size - 1)
    refused = KoResolver(str(client / "x.n3cplug"), None, limits=small).load(
        b"Item\\Sword.n3pmesh", scene, "mesh")
    assert refused is None and len(scene.warnings) == 1
    assert f"{size} bytes exceeds the limit of {size - 1}" in scene.warnings[0]


def test_listings_tree_lists_container_members_after_their_container(tmp_path):
    from potsherd.resolve import Listings
    (tmp_path / "b").mkdir()
    (tmp_path / "a.vol").write_bytes(b"x")
    (tmp_path / "b" / "c.txt").write_bytes(b"y")
    members = {str(tmp_path / "a.vol"): ["Dir\\M.BMP"]}
    tree = Listings().tree(tmp_path, lambda p: members.get(p, []))
    assert tree == (("a.vol", str(tmp_path / "a.vol")),
                    ("m.bmp", f"{tmp_path / 'a.vol'}::Dir\\M.BMP"),
                    ("c.txt", str(tmp_path / "b" / "c.txt")))
    assert Listings().tree(tmp_path) == (tree[0], tree[2])  # no member lister: files only
    assert Listings(max_indexed=1).tree(tmp_path) == (tree[0],)
