"""The command line on hostile files: every command that reads a file answers
a damaged one with exit status 1 and a one-line error, never a traceback, and
writes no output for it."""
import os
import random

import pytest

from potsherd.cli import main

from fuzz_support import FAMILIES, RNG_SEED, family_context, fuzzlib, seeds

PER_FAMILY = 24


@pytest.mark.parametrize("family", FAMILIES)
def test_cli_commands_on_mutated_files(family, tmp_path, capsys):
    fam_seeds = [s for s in seeds(family) if len(s.data) <= 4096]
    if not fam_seeds:
        pytest.skip(f"no small seed for {family} yet")
    rng = random.Random(RNG_SEED)
    mut = fuzzlib.Mutator(rng)
    statuses = {0: 0, 1: 0}
    with family_context(family):
        for i in range(PER_FAMILY):
            seed = rng.choice(fam_seeds)
            path = tmp_path / f"in{i}{seed.ext or '.bin'}"
            path.write_bytes(mut.mutate(seed.data, []))
            out = tmp_path / "out" / f"out{i}.json"
            for argv in (["info", "--format", seed.codec, str(path)],
                         ["validate", "--format", seed.codec, str(path)],
                         ["roundtrip", "--format", seed.codec, "--via-json", "readable", str(path)],
                         ["dump", "--format", seed.codec, str(path), "-o", str(out)]):
                status = main(argv)
                assert status in (0, 1), (argv, status)
                statuses[status] += 1
                err = capsys.readouterr().err
                assert "Traceback" not in err
                if argv[0] == "dump" and status == 1:
                    assert not out.exists()
    assert statuses[1] > 0  # the mutations really produced damaged files
    leftovers = [n for n in os.listdir(tmp_path / "out") if n.startswith(".potsherd-")] \
        if (tmp_path / "out").exists() else []
    assert not leftovers
