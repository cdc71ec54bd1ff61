"""Install bfcl-eval the light way: ``python -m aworld_rl_core.tooluse.bfcl.install``.

A plain ``pip install bfcl-eval`` pulls every vendor SDK and a multi-GB CUDA torch; this installs
the pinned release with ``--no-deps`` plus the few pure-Python packages its checkers need.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from aworld_rl_core.tooluse.bfcl._install import BFCL_EVAL_VERSION, LIGHT_DEPENDENCIES


def pip_commands(version: str = BFCL_EVAL_VERSION) -> list[list[str]]:
    """The two pip invocations, for the running interpreter."""
    pip = [sys.executable, "-m", "pip", "install"]
    return [[*pip, "--no-deps", f"bfcl-eval=={version}"], [*pip, *LIGHT_DEPENDENCIES]]


def main(argv: list[str] | None = None) -> int:
    """Run (or with ``--dry-run`` print) the install commands; returns pip's exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=BFCL_EVAL_VERSION, help="bfcl-eval release")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    for command in pip_commands(args.version):
        print(shlex.join(command))
        if not args.dry_run:
            status = subprocess.call(command)
            if status:
                return status
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
