"""The scene tests reuse the glTF writer tests' small scenes (tests/export/export_scenes.py)."""
import sys
from pathlib import Path

_EXPORT_TESTS = str(Path(__file__).resolve().parents[1] / "export")
if _EXPORT_TESTS not in sys.path:
    sys.path.insert(0, _EXPORT_TESTS)
