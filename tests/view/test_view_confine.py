"""Property test of the viewer's confined opener: whatever path text a client sends, the
opened descriptor is a regular file inside the served folder (checked through
/proc/self/fd, not through the opener's own logic), or the path is refused."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from potsherd.view.confine import Folder, Refused

pytestmark = pytest.mark.security

SEGMENTS = ["..", ".", "", "a", "b", "f.bin", "link", "linkdir", "fifo", "outside", "etc",
            "passwd", "%2e%2e", "C:", "\\..", "..\\", "a\\..\\..", "\x00", "dev", "null"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("confine")
    root, outside = base / "root", base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    for p in (root / "f.bin", root / "a" / "f.bin", root / "a" / "b" / "f.bin"):
        p.write_bytes(b"inside")
    (outside / "f.bin").write_bytes(b"outside")
    os.symlink(outside / "f.bin", root / "link")
    os.symlink(outside, root / "linkdir")
    os.symlink(outside, root / "a" / "linkdir")
    os.symlink("../..", root / "a" / "b" / "up")
    os.mkfifo(root / "fifo")
    return Folder(root), root


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(SEGMENTS + ["up"]), min_size=1, max_size=6),
       st.sampled_from(["/", "\\"]), st.booleans())
def test_every_open_lands_inside_or_is_refused(tree, parts, sep, absolute):
    folder, root = tree
    rel = ("/" if absolute else "") + sep.join(parts)
    try:
        fd = folder.open(rel)
    except Refused as e:
        assert e.status in (400, 403, 404)
        return
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
        assert real.is_relative_to(root.resolve()), (rel, real)
        assert os.read(fd, 16) == b"inside"
    finally:
        os.close(fd)


def test_the_legitimate_paths_open(tree):
    folder, _ = tree
    for rel in ("f.bin", "a/f.bin", "a\\b\\f.bin", "./a/./b/f.bin", "a//b/f.bin"):
        fd = folder.open(rel)
        assert os.read(fd, 16) == b"inside"
        os.close(fd)
    for rel, status in (("link", 403), ("linkdir/f.bin", 403), ("a/b/up/f.bin", 403),
                        ("fifo", 403), ("a", 403), ("../outside/f.bin", 403), ("nope", 404),
                        ("/etc/passwd", 403), ("", 400)):
        with pytest.raises(Refused) as e:
            folder.open(rel)
        assert e.value.status == status, rel
