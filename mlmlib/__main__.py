"""Entry point for `python -m mlmlib`: the runs CLI, or the training benchmark (`bench`)."""

import sys

if sys.argv[1:2] == ["bench"]:
    from mlmlib import bench

    sys.exit(bench.main(sys.argv[2:]) or 0)

from mlmlib.runs.cli import main

sys.exit(main())
