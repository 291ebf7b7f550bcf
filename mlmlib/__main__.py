"""Entry point for `python -m mlmlib`: the runs CLI, the training benchmark (`bench`) and the
offline commands (`mirror`; the stand-ins of `run --rehearse`), which sit above the papers and
so outside the runs package."""

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

    if sys.argv[1:2] == ["mirror"]:
        from mlmlib.offline.mirror import main as mirror

        sys.exit(mirror(sys.argv[2:]))

    from mlmlib.runs.cli import main

    def prepare_rehearsal(plan):
        from mlmlib.offline.rehearsal import prepare  # imported only when a rehearsal runs

        prepare(plan)

    sys.exit(main(prepare_rehearsal=prepare_rehearsal))
except BrokenPipeError:
    sys.exit(_quiet_broken_pipe())
