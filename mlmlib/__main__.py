"""Entry point for `python -m mlmlib`."""

import sys

from mlmlib.cli import main

sys.exit(main())
