"""``extract``: every member lands inside the output folder under a safe,
unique name; every rename is reported; nothing stops half-way on a name; the
names printed cannot drive the terminal or forge output lines."""
from __future__ import annotations

import os

from conftest import run_potsherd

HOSTILE = ["", ".", "..", "a", "A", "a", "x/y", "x", "dir\\file.txt", "dir/FILE.TXT",
           "\x1b[31mred\nok /etc/passwd", "n" * 5000, "../../escape.txt", "/abs/path.txt",
           "sub/" + "d" * 300 + "/f.bin", "ctrl\x07z.bin"]


def test_member_paths_rules():
    from potsherd.containers import MAX_NAME_BYTES, member_paths
    out = member_paths(HOSTILE)
    paths = ["/".join(p) for p, _ in out]
    assert paths[:6] == ["member", "member~1", "member~2", "a", "A~1", "a~2"]
    assert paths[6:10] == ["x/y", "x~1", "dir/file.txt", "dir/FILE~1.TXT"]
    assert paths[10] == "_[31mred_ok /etc/passwd"
    assert paths[12] == "escape.txt" and paths[13] == "abs/path.txt"
    assert len({p.lower() for p in paths}) == len(paths)            # unique, ignoring case
    assert all(len(part.encode()) <= MAX_NAME_BYTES for p, _ in out for part in p)
    assert [w for _, w in out][:3] == ["empty name", "empty name; name already used",
                                       "'..' dropped; empty name; name already used"]
    assert out[3][1] is None and out[6][1] is None and out[7][1] == "a folder has its name"
    # a file first, then a folder of that name: the folder is renamed for every member in it
    out = member_paths(["q", "q/r", "q/s"])
    assert ["/".join(p) for p, _ in out] == ["q", "q~1/r", "q~1/s"]


def test_extract_hostile_names(tmp_path):
    from potsherd.formats.darkstar.volumes import build_volume
    files = [(n, f"<{i}>".encode()) for i, n in enumerate(HOSTILE)]
    src = tmp_path / "names.vol"
    src.write_bytes(build_volume(files, tag="PVOL"))
    out = tmp_path / "out"
    (tmp_path / "out").mkdir()
    (out / "blocker").write_bytes(b"")                 # a file where a folder must go
    # names are Latin-1 in the index: the ESC and newline reach the printer as they are
    proc = run_potsherd("extract", src, "-o", out, timeout=60)
    written = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "blocker")
    assert proc.returncode == 0, proc.stderr
    assert len(written) == len(HOSTILE)
    assert sorted(p.read_bytes() for p in written) == sorted(d for _, d in files)
    for p in written:
        assert os.path.realpath(p).startswith(os.path.realpath(out) + os.sep)
    assert not (tmp_path / "escape.txt").exists()
    text = proc.stdout + proc.stderr
    assert b"\x1b" not in text and b"\x07" not in text and b"\x00" not in text
    assert not any(line.startswith(b"ok /etc/passwd") for line in text.splitlines())
    assert b"\\x1b[31mred\\x0aok /etc/passwd" in proc.stderr      # the rename, escaped
    renames = [line for line in proc.stderr.splitlines() if line.startswith(b"renamed  ")]
    assert len(renames) == 13, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"{len(HOSTILE)} members written (13 renamed), " \
        "0 failed".encode()
    # ls escapes too
    proc = run_potsherd("ls", src)
    assert b"\x1b" not in proc.stdout and b"\\x1b[31mred\\x0aok /etc/passwd" in proc.stdout


def test_a_member_that_cannot_be_written_does_not_stop_the_others(tmp_path):
    from potsherd.formats.darkstar.volumes import build_volume
    src = tmp_path / "c.vol"
    src.write_bytes(build_volume([("blocker/a.txt", b"1"), ("ok.txt", b"2")]))
    out = tmp_path / "out"
    out.mkdir()
    (out / "blocker").write_bytes(b"a file")
    proc = run_potsherd("extract", src, "-o", out)
    assert proc.returncode == 1
    assert (out / "ok.txt").read_bytes() == b"2"
    assert b"FAIL  blocker/a.txt" in proc.stderr
    assert proc.stdout.splitlines()[-1] == b"1 members written, 1 failed"
