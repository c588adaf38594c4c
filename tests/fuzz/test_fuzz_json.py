"""Hostile JSON: malformed or inconsistent documents are refused with a
JsonFormatError (naming the JSON path) or an EncodeError (naming the field),
never another exception, and ``potsherd build`` then writes nothing."""
import copy
import json
import os
import random

import pytest

import potsherd
from potsherd.cli import main
from potsherd.core.errors import EncodeError, FormatError, JsonFormatError

from fuzz_support import FAMILIES, RNG_SEED, describe, family_context, fuzz_core, fuzzlib, seeds

DOC = fuzz_core.document()


@pytest.fixture
def core():
    with fuzz_core.registered():
        yield


def edited(**changes):
    d = copy.deepcopy(DOC)
    for path, value in changes.items():
        node = d
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if value is KeyError:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return d


def refused(doc, cls=JsonFormatError) -> FormatError:
    with pytest.raises(FormatError) as ei:
        potsherd.from_json(doc).encode()
    assert type(ei.value) is cls, repr(ei.value)
    return ei.value


def test_valid_document_builds(core):
    data = potsherd.from_json(DOC).encode()
    assert potsherd.read(data).encode() == data


@pytest.mark.parametrize("change,path", [
    ({"root__vertexCount": "2"}, "$.root.vertexCount"),           # wrong type
    ({"root__version": 1.5}, "$.root.version"),                    # float for an integer
    ({"root__version": 70000}, "$.root.version"),                  # does not fit u16
    ({"root__flags": True}, "$.root.flags"),                       # bool is not a number
    ({"root__pos": [1.0, 2.0]}, "$.root.pos"),                     # vec3 of 2 values
    ({"root__pos": [1.0, "x", 3.0]}, "$.root.pos[1]"),
    ({"root__label": "6c616"}, "$.root.label"),                    # hex of odd length
    ({"root__stats__tag": "zz000000"}, "$.root.stats.tag"),        # not hex
    ({"root__stats__tag": "616263"}, "$.root.stats.tag"),          # 3 bytes for 4s
    ({"root__magic": "465a43"}, "$.root.magic"),                   # 3 bytes for a 4-byte field
    ({"root__stats__bogus": 1}, "$.root.stats"),                   # unknown struct key
    ({"root__vertices": [0.0, "1", 2.0]}, "$.root.vertices"),     # numeric array item
    ({"root__indices": [0, 70000]}, "$.root.indices"),            # out of u16 range
    ({"root__rows": [[1, 2], "x"]}, "$.root.rows"),
    ({"root__parts__1__title": {"hex": "4"}}, "$.root.parts[1].title.hex"),
    ({"root__parts__0__colour": 3}, "$.root.parts[0]"),           # unknown field
    ({"root__name": {"len": 3}}, "$.root.name"),                   # {"len"} only for <= 0
    ({"root__root__children__0__value": None}, "$.root.root.children[0].value"),
    ({"root": []}, "$.root"),
    ({"trailing": "abc"}, "$.trailing"),
    ({"params": 5}, "$.params"),
    ({"meta": 3}, "$.meta"),
    ({"form": "pretty"}, "$.form"),
    ({"potsherd": 2}, "$.potsherd"),
    ({"format": None}, "$.format"),
])
def test_malformed_documents_name_the_json_path(core, change, path):
    e = refused(edited(**change))
    assert e.path == path, (e.path, str(e))


def test_unknown_format_name_is_refused(core):
    with pytest.raises(FormatError) as ei:
        potsherd.from_json(edited(format="nosuchformat"))
    assert "nosuchformat" in str(ei.value)


def test_invalid_json_text_is_refused():
    for text in ('{"potsherd": 1,', "[" * 100000, "\xff", ""):
        with pytest.raises(JsonFormatError) as ei:
            potsherd.from_json(text)
        assert ei.value.path == "$"


def test_a_count_that_contradicts_its_array_follows_the_array(core):
    # editing an array is the supported way to change a count: the count follows
    d = edited(root__vertexCount=5)
    data = potsherd.from_json(d).encode()
    assert potsherd.read(data).root["vertexCount"] == 2


def test_arrays_that_disagree_on_their_shared_count_are_an_encode_error(core):
    e = refused(edited(root__indexFlags=[1, 2]), EncodeError)
    assert e.path == "file.indexCount" and "disagree" in e.message


@pytest.mark.parametrize("change,path", [
    ({"root__vertices": [0.0, 1.0, 2.0, 3.0]}, "file.vertices"),  # not a multiple of 3
    ({"root__blob": "01"}, "file.blob"),                          # count expression says 3
    ({"root__opt": KeyError}, "file.opt"),                        # condition true, field missing
    ({"root__rows": [[1, 2, 3], [4, 5, 6]]}, "file.rows"),        # rows wider than `width`
    ({"root__label": "00" * 70000}, "file.label"),                # too long for the custom storage
])
def test_inconsistent_documents_are_encode_errors_naming_the_field(core, change, path):
    e = refused(edited(**change), EncodeError)
    assert e.path == path, (e.path, str(e))


@pytest.mark.parametrize("family", FAMILIES)
def test_mutated_json_documents_never_raise_anything_else(family):
    """Hostile edits of real documents (both forms): refused cleanly or built."""
    fam_seeds = sorted(seeds(family), key=lambda s: len(s.data))
    if not fam_seeds:
        pytest.skip(f"no seed for {family} yet")
    rng = random.Random(RNG_SEED)
    # one small seed per codec
    by_codec = {}
    for s in fam_seeds:
        by_codec.setdefault(s.codec, s)
    findings, outcomes = [], {}
    with family_context(family):
        for s in by_codec.values():
            doc = fuzzlib.registry.decode(s.data, format=s.codec)
            for form in ("wire", "readable"):
                base = json.loads(json.dumps(doc.to_json(form)))
                for _ in range(60):
                    bad, what = fuzzlib.mutate_json(base, rng)
                    status, f = fuzzlib.check_json_document(bad)
                    outcomes[status] = outcomes.get(status, 0) + 1
                    if f is not None:
                        f.detail = f"{what}\n{f.detail}"
                        findings.append(f)
    assert not findings, describe(findings)
    assert outcomes.get("refused", 0) > 0


def test_build_of_a_bad_document_writes_nothing(core, tmp_path, capsys):
    src = tmp_path / "doc.json"
    out = tmp_path / "out" / "thing.fzc"
    src.write_text(json.dumps(edited(root__indices=[0, 70000])))
    assert main(["build", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "$.root.indices" in err
    assert not out.exists()
    assert not out.parent.exists() or os.listdir(out.parent) == []
    # an inconsistent one (fails while encoding) and invalid JSON text: same
    src.write_text(json.dumps(edited(root__indexFlags=[1])))
    assert main(["build", str(src), "-o", str(out)]) == 1
    src.write_text('{"potsherd": 1, "format": "fuzzcore", "root": {')
    assert main(["build", str(src), "-o", str(out)]) == 1
    assert not out.exists()
    assert not out.parent.exists() or os.listdir(out.parent) == []


def test_failed_build_keeps_the_previous_output(core, tmp_path):
    src = tmp_path / "doc.json"
    out = tmp_path / "thing.fzc"
    src.write_text(json.dumps(DOC))
    assert main(["build", str(src), "-o", str(out)]) == 0
    good = out.read_bytes()
    src.write_text(json.dumps(edited(root__version="two")))
    assert main(["build", str(src), "-o", str(out)]) == 1
    assert out.read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == ["doc.json", "thing.fzc"]
