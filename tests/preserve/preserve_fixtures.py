"""A small game tree made by potsherd's own encoders (no game data), and control
files of other formats, for the identify / signatures / bundle tests."""
from __future__ import annotations

import io
import os
import wave
from pathlib import Path

#: file -> (family, format, version, basis) that ``identify`` must report
EXPECTED = {
    "models/cube.n3pmesh": ("ko", "n3pmesh", None, "structure"),
    "models/cube.dts": ("darkstar", "dts", "8", "version word"),
    "models/cube.fbx": ("fbx", "fbx", "7400", "version word"),
    "world/example.bmp": ("darkstar", "pbmp", None, "magic"),
    "world/example.pba": ("darkstar", "pbma", None, "magic"),
    "world/example.ppl": ("darkstar", "pl98", None, "magic"),
    "world/example.pal": ("darkstar", "riffpal", None, "magic"),
    "world/example.dis": ("darkstar", "dis", None, "magic"),
    "world/example.dig": ("darkstar", "dig", "7", "version word"),
    "world/example.dil": ("darkstar", "dil", "7", "version word"),
    "world/example.vol": ("darkstar", "vol", None, "magic"),
}


def make_game_tree(root: Path) -> Path:
    """Write the tree of :data:`EXPECTED` (plus a text file) under ``root``."""
    from potsherd import examples
    from potsherd.convert import convert_file
    from potsherd.formats.darkstar import world_examples

    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "world").mkdir(exist_ok=True)
    examples.write_examples(str(root / "models"))
    glb = str(root / "cube.glb")
    convert_file(str(root / "models" / "cube.n3pmesh"), glb, "glb", {})
    convert_file(glb, str(root / "models" / "cube.fbx"), "fbx", {})
    convert_file(glb, str(root / "models" / "cube.dts"), "dts", {})
    os.remove(glb)
    for name, data in world_examples.seed_files().items():
        (root / "world" / name).write_bytes(data)
    (root / "README.txt").write_text("A tree made by potsherd's encoders.\n")
    return root


def png_bytes() -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buf, "PNG")
    return buf.getvalue()


def windows_bmp_bytes() -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (10, 200, 10)).save(buf, "BMP")
    return buf.getvalue()


def wav_bytes() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(range(200)) * 4)
    return buf.getvalue()


def make_controls(root: Path) -> list[Path]:
    """Files of other formats, some under the extensions game formats also use
    (Windows ``.bmp``, a RIFF WAVE as ``.pal``/``.sfx``, text as ``.dts``)."""
    root.mkdir(parents=True, exist_ok=True)
    files = {
        "picture.png": png_bytes(), "picture.bmp": windows_bmp_bytes(),
        "sound.wav": wav_bytes(), "sound.sfx": wav_bytes(), "sound.pal": wav_bytes(),
        "notes.txt": b"Knight Online n3pmesh PERS PVOL notes\n" * 20,
        "audio-notes.dts": b"DTS audio track list, not a Darkstar shape\n",
        "empty.dat": b"",
    }
    out = []
    for name, data in files.items():
        (root / name).write_bytes(data)
        out.append(root / name)
    return out
