"""Fixed-seed mutation tier: every family's decoders answer hostile bytes with
a FormatError carrying an offset, quickly; whatever decodes re-encodes (and
passes through both JSON forms) to the same bytes.

Runs over the registry, so a codec that lands is covered without changes here.
``POTSHERD_FUZZ_INPUTS`` / ``POTSHERD_FUZZ_SECONDS`` scale the run.
"""
import pytest

from fuzz_support import (FAMILIES, INPUTS, RNG_SEED, SECONDS, TIME_LIMIT, describe,
                          family_context, fuzzlib, seeds)


@pytest.mark.parametrize("family", FAMILIES)
def test_mutated_inputs_raise_only_format_errors(family):
    fam_seeds = list(seeds(family))
    if not fam_seeds:
        pytest.skip(f"no codec or seed for {family} yet")
    with family_context(family):
        # every 10th decode runs under tracemalloc: its allocation peak must stay
        # below ALLOC_PER_BYTE x input size + ALLOC_CONSTANT (else a "memory" finding)
        camp = fuzzlib.Campaign(family, fam_seeds, rng_seed=RNG_SEED, time_limit=TIME_LIMIT,
                                json_every=3, trace_every=10)
        stats = camp.run(inputs=INPUTS, seconds=SECONDS)
    assert not stats.findings, describe(stats.findings)
    # the run really exercised both paths, and every refusal says where
    assert stats.inputs >= min(INPUTS, 200)
    assert stats.decoded > 0 and stats.refused > 0
    assert stats.errors_without_offset == 0, stats.errors
    assert "InternalDecodeError" not in stats.errors
    assert stats.slowest <= TIME_LIMIT, stats.slowest_input
    assert stats.max_alloc_mb * 2 ** 20 < fuzzlib.ALLOC_CONSTANT + fuzzlib.ALLOC_PER_BYTE * (8 << 10) * 4


def test_seeds_cover_every_codec_with_corpus_files():
    """Each codec that decodes some small corpus file contributes seeds."""
    missing = []
    for family in fuzzlib.FAMILIES:
        have = {s.codec for s in seeds(family)}
        for p in fuzzlib.corpus_files(family, 8 << 10)[:400]:
            try:
                doc = fuzzlib.registry.decode(p.read_bytes(), path=str(p))
            except fuzzlib.FormatError:
                continue
            if doc.format not in have and doc.codec.family == family:
                missing.append((family, doc.format, p.name))
    assert not missing


def test_core_campaign_is_deterministic():
    fam_seeds = list(seeds("core"))
    with family_context("core"):
        runs = []
        for _ in range(2):
            camp = fuzzlib.Campaign("core", fam_seeds, rng_seed=7, json_every=1000)
            st = camp.run(inputs=150)
            runs.append((st.inputs, st.decoded, st.refused, dict(st.errors)))
    assert runs[0] == runs[1]
    assert runs[0][0] == 150


def test_mutator_operators_change_inputs_as_documented():
    import random
    m = fuzzlib.Mutator(random.Random(1))
    data = bytes(range(64)) + (5).to_bytes(4, "little") + bytes(60)
    # count32 only ever touches 4 bytes, and forces a count-like value
    out = m.count32(bytearray(data), [])
    diff = [i for i in range(len(data)) if out[i] != data[i]]
    assert len(out) == len(data) and diff and max(diff) - min(diff) < 4
    assert len(m.truncate(bytearray(data), [])) < len(data)
    assert len(m.insert(bytearray(data), [])) > len(data)
    assert len(m.delete(bytearray(data), [])) < len(data)
    assert list(fuzzlib.truncations(b"abc")) == [b"", b"a", b"ab"]


class _Broken(fuzzlib.registry.Codec):
    """A deliberately faulty codec: shows each kind of finding is caught."""
    family = "test"
    extensions = (".broken",)

    def __init__(self, name, fault):
        self.name, self.fault = name, fault

    def decode(self, data, *, limits=None, **params):
        if self.fault == "keyerror":
            return {}["missing"]
        if self.fault == "greedy":  # 64 MiB for a tiny input, as an unchecked count would
            blob = bytearray(64 << 20)
            del blob
            raise fuzzlib.FormatError("refused after allocating", offset=0)
        if self.fault == "spin":
            while True:
                pass
        if self.fault == "no-offset":
            raise fuzzlib.FormatError("no offset here")
        return fuzzlib.Document(self.name, {"data": data})

    def encode(self, doc):
        return doc.root["data"] + (b"!" if self.fault == "lossy" else b"")

    def to_json(self, doc, form="wire"):
        return self.json_envelope(doc, form, doc.root["data"].hex())

    def from_json(self, obj):
        return fuzzlib.Document(self.name, {"data": bytes.fromhex(obj["root"])})


@pytest.mark.parametrize("fault,kind", [("keyerror", "internal-decode"), ("greedy", "memory"),
                                        ("spin", "timeout"), ("lossy", "roundtrip")])
def test_the_harness_catches_each_kind_of_fault(fault, kind):
    codec = _Broken(f"broken-{fault}", fault)
    fuzzlib.registry.register(codec)
    try:
        seed = fuzzlib.Seed(codec.name, b"\xff\xff\xff\x03" + bytes(12), "test")
        camp = fuzzlib.Campaign("test", [seed], time_limit=0.5 if fault == "spin" else 2.0,
                                trace_every=1)
        stats = camp.run(inputs=3)
    finally:
        fuzzlib.registry._CODECS.pop(codec.name, None)
    assert kind in {f.kind for f in stats.findings}, [f.kind for f in stats.findings]


def test_the_harness_counts_errors_without_offset():
    codec = _Broken("broken-no-offset", "no-offset")
    fuzzlib.registry.register(codec)
    try:
        camp = fuzzlib.Campaign("test", [fuzzlib.Seed(codec.name, b"abcd", "test", ".broken")])
        stats = camp.run(inputs=5)
    finally:
        fuzzlib.registry._CODECS.pop(codec.name, None)
    assert stats.errors_without_offset == 5 and not stats.findings
