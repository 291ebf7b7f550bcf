"""Entry point for `python -m mlmlib`: the runs CLI, or the training benchmark (`bench`)."""

import os
import sys


def _quiet_broken_pipe() -> int:
    """A reader that stopped early (`... --dry-run | head`) is no error worth a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: let that go nowhere
    return 1


try:
    if sys.argv[1:2] == ["bench"]:
        from mlmlib import bench

        sys.exit(bench.main(sys.argv[2:]) or 0)

    from mlmlib.runs.cli import main

    sys.exit(main())
except BrokenPipeError:
    sys.exit(_quiet_broken_pipe())
