"""The registry is filled on first use; threads that all use it first at once (as the
viewer's pools do) must each see the whole table, never a half-filled one."""
import subprocess
import sys

SCRIPT = r"""
import threading, sys
from potsherd import registry
from potsherd.examples import EXAMPLES
from potsherd import from_json
data = {name: from_json(make()).encode() for name, make in EXAMPLES.items()}
import importlib
# a fresh table: what the examples' encoding loaded is forgotten
registry._CODECS.clear(); registry._LOADED = registry._COMPLETE = False
registry._FAMILIES_LOADED.clear(); registry._FAMILIES_DONE.clear(); registry._DETECT_INDEX.clear()
importlib.invalidate_caches()
errors = []
barrier = threading.Barrier(8)
def work(name, blob):
    barrier.wait()
    try:
        assert registry.decode(blob, path=name).encode() == blob
        assert len(registry.codecs()) == total
    except Exception as e:  # noqa: BLE001
        errors.append(f"{name}: {type(e).__name__}: {e}")
total = None
"""


def test_concurrent_first_use_sees_the_whole_table():
    code = SCRIPT + r"""
import potsherd.families as fams, time
total = sum(len(f.codecs()) for f in fams.FAMILIES)
plain = fams.Family.codecs
def slow(self):                 # a family import takes its time, as a first one does
    time.sleep(0.05)
    return plain(self)
fams.Family.codecs = slow
registry._CODECS.clear(); registry._DETECT_INDEX.clear()
items = list(data.items())
threads = [threading.Thread(target=work, args=items[i % len(items)]) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("ERRORS", errors)
assert not errors, errors
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
