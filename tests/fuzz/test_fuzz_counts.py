"""Count bombs, systematically: every 4-byte field in the first 256 bytes of
one seed per codec is set to 2^31-1, 2^32-1 (-1) and 2^30 in turn.  Each
decode must be refused with a FormatError or decode, and must allocate at most
a small multiple of the input size plus a constant, whatever the count says."""
import struct
import time
import tracemalloc

import pytest

from fuzz_support import FAMILIES, describe, family_context, fuzzlib, seeds

BOMBS = (0x7FFFFFFF, 0xFFFFFFFF, 0x40000000)
#: allowed decode allocation: this many bytes per input byte, plus 16 MiB
PER_BYTE = 64
CONSTANT = 16 << 20


def one_seed_per_codec(family):
    by_codec = {}
    for s in sorted(seeds(family), key=lambda s: len(s.data)):
        if len(s.data) >= 8:
            by_codec.setdefault(s.codec, s)
    return list(by_codec.values())


@pytest.mark.parametrize("family", FAMILIES)
def test_count_bombs_allocate_in_proportion_to_the_input(family):
    todo = one_seed_per_codec(family)
    if not todo:
        pytest.skip(f"no seed for {family} yet")
    worst = (0, None)
    findings = []
    slow = []
    with family_context(family):
        for seed in todo:  # warm up (layout compilation) outside the measurement
            fuzzlib.check_input(seed.codec, seed.data, json_check=False)
        tracemalloc.start()
        try:
            for seed in todo:
                for off in range(0, min(len(seed.data) - 3, 256)):
                    for bomb in BOMBS:
                        data = bytearray(seed.data)
                        struct.pack_into("<I", data, off, bomb)
                        data = bytes(data)
                        tracemalloc.reset_peak()
                        base = tracemalloc.get_traced_memory()[0]
                        t0 = time.process_time()
                        try:
                            fuzzlib.registry.decode(data, format=seed.codec, limits=fuzzlib.FUZZ_LIMITS)
                        except fuzzlib.FormatError as e:
                            if fuzzlib._is_internal(e):
                                findings.append(fuzzlib.Finding("internal-decode", seed.codec, data,
                                                                fuzzlib._format_exc(e)))
                        dt = time.process_time() - t0
                        peak = tracemalloc.get_traced_memory()[1] - base
                        if dt > 2.0:
                            slow.append((seed.origin, off, hex(bomb), round(dt, 2)))
                        if peak > CONSTANT + PER_BYTE * len(data):
                            findings.append(fuzzlib.Finding(
                                "memory", seed.codec, data,
                                f"{peak} bytes allocated for {len(data)} bytes "
                                f"(count {bomb:#x} at offset {off} of {seed.origin})"))
                        if peak > worst[0]:
                            worst = (peak, f"{seed.codec} offset {off} = {bomb:#x}")
        finally:
            tracemalloc.stop()
    assert not findings, describe(findings)
    assert not slow, slow
