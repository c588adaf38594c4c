"""The Khronos validator wrapper: it reports real errors, and says clearly when it is missing."""
from __future__ import annotations

import json

import pytest

from export_scenes import skinned_cube_scene
from potsherd.export import validate as v
from potsherd.export.gltf import write_gltf


def test_missing_node_is_reported(monkeypatch):
    monkeypatch.setattr(v.shutil, "which", lambda name: None)
    with pytest.raises(v.ValidatorUnavailable, match="node is not installed"):
        v.validate_gltf("x.glb")
    assert v.validator_available() is False


def test_missing_wrapper_is_reported(monkeypatch, tmp_path):
    if v.shutil.which("node") is None:
        pytest.skip("node is not installed")
    monkeypatch.setenv("POTSHERD_GLTF_VALIDATOR", str(tmp_path / "validate.js"))
    with pytest.raises(v.ValidatorUnavailable, match="not found"):
        v.validator_command()
    (tmp_path / "validate.js").write_text("")
    with pytest.raises(v.ValidatorUnavailable, match=r"npm ci --prefix"):
        v.validator_command()


def test_an_installed_package_without_the_validator_says_so(monkeypatch, tmp_path):
    """Outside a checkout the message names no path inside site-packages (issue 41)."""
    monkeypatch.setattr(v.shutil, "which", lambda name: "/usr/bin/node")
    monkeypatch.delenv("POTSHERD_GLTF_VALIDATOR", raising=False)
    monkeypatch.setattr(v, "_packaged_dir", lambda: tmp_path / "pkg" / "_vendor" / "gltf-validator")
    monkeypatch.setattr(v, "_repo_tool_dir", lambda: tmp_path / "tools" / "gltf-validator")
    with pytest.raises(v.ValidatorUnavailable, match="built without the glTF validator") as e:
        v.validator_command()
    assert str(tmp_path) not in str(e.value)
    packaged = tmp_path / "pkg" / "_vendor" / "gltf-validator"     # negative control
    (packaged / "node_modules" / "gltf-validator").mkdir(parents=True)
    (packaged / "validate.js").write_text("")
    assert v.validator_command() == ["/usr/bin/node", str(packaged / "validate.js")]


@pytest.mark.skipif(not v.validator_available(), reason="gltf-validator not installed")
def test_validator_reports_a_wrong_bounding_box(tmp_path):
    path = tmp_path / "cube.gltf"
    write_gltf(skinned_cube_scene(), path)
    gl = json.loads(path.read_text())
    gl["accessors"][0]["max"][1] = 5.0            # POSITION max y is really 2.0
    path.write_text(json.dumps(gl))
    r = v.validate_gltf(path)
    assert r["errors"] == 1
    m = r["messages"][0]
    assert (m["code"], m["severity"], m["pointer"]) == ("ACCESSOR_MAX_MISMATCH", "error",
                                                       "/accessors/0/max/1")
    assert "ACCESSOR_MAX_MISMATCH /accessors/0/max/1" in v.format_report(r)
    assert r["validator_version"].startswith("2.")
