"""The ``wheelgate`` command: the Rust binary's command line, run in this process.

``python -m wheelgate detect --token`` and the ``wheelgate`` console script are the same
program as the ``wheelgate`` binary built with cargo, with the same output and exit codes.
"""

import sys

from wheelgate._wheelgate import run_cli


def main() -> int:
    """Runs ``wheelgate`` with this process's arguments and returns its exit code."""
    return run_cli(["wheelgate", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
