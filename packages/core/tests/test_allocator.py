"""``keep_freed_memory``: measured in page faults of a child process, never in seconds."""

import json
import os
import platform
import subprocess
import sys

import pytest

from aworld_rl_core import allocator, cli

glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)

# Five rounds of a 64 MiB block written and freed; the faults of rounds 2-5 are counted.
CHILD = """
import json, resource, sys
from aworld_rl_core.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "tuned" else False
block = 64 << 20
faults = []
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    data = b"\\x01" * block
    del data
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"applied": applied, "faults": sum(faults[1:])}))
"""


def _child(mode: str, **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


@glibc
def test_freed_blocks_are_reused_without_faulting_pages_in_again():
    pages = 4 * (64 << 20) // os.sysconf("SC_PAGE_SIZE")  # rounds 2-5, every page written
    default = _child("default")
    tuned = _child("tuned")
    assert default == {"applied": False, "faults": pytest.approx(pages, rel=0.1)}
    assert tuned["applied"] is True
    assert tuned["faults"] < pages / 100


@glibc
def test_the_environment_variable_turns_it_off():
    pages = 4 * (64 << 20) // os.sysconf("SC_PAGE_SIZE")
    off = _child("tuned", AWORLD_RL_KEEP_FREED_MEMORY="0")
    assert off == {"applied": False, "faults": pytest.approx(pages, rel=0.1)}


def test_aworld_run_applies_it_before_the_recipe(demo_registry, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append("kept") or True)
    out_dir = tmp_path / "run"
    assert (
        cli.main(["demo.count", "--preset", "tiny-cpu", "--output-dir", str(out_dir), "--quiet"])
        == 0
    )
    assert calls == ["kept"]


RELEASE_CHILD = """
import json, sys
from aworld_rl_core import allocator

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

allocator.keep_freed_memory()
start = rss()
data = b"\\x01" * (128 << 20)
del data
kept = rss() - start
released = False
if sys.argv[1] == "release":
    released = allocator.release_freed_memory()
    allocator.trim()
print(json.dumps({"kept": kept, "after": rss() - start, "released": released}))
"""


@glibc
def test_a_server_hands_freed_memory_back_after_keep_freed_memory():
    """keep_freed_memory pins a freed 128 MiB block in the heap; release_freed_memory + trim
    (what a long-lived server does after a burst) hand it back to the OS."""

    def child(mode):
        out = subprocess.run(
            [sys.executable, "-c", RELEASE_CHILD, mode],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "AWORLD_RL_KEEP_FREED_MEMORY": "1"},
        )
        return json.loads(out.stdout)

    mib = 1 << 20
    kept, released = child("keep"), child("release")
    assert kept["kept"] > 120 * mib and kept["after"] > 120 * mib  # still resident
    assert released["released"] is True
    assert released["kept"] > 120 * mib and released["after"] < 16 * mib
