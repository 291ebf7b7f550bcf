"""Re-tidy the executed notebooks of committed profiles for the book, without executing anything.

    python scripts/tidy_pages.py --profile cpu      # book/runs/cpu/
    python scripts/tidy_pages.py                    # every profile in book/runs/

Each run page is rewritten (atomically) from its record's `params` by the function the runner
tidies a fresh run with: the run's parameters shown, the template's defaults removed from the
page. The records themselves are only read.
"""

from __future__ import annotations

import argparse

from mlmlib.paths import project_root
from mlmlib.runs.pages import retidy
from mlmlib.runs.plans import check_name


def main(argv: list[str] | None = None) -> int:
    """Re-tidy the pages of the profiles asked for (default: all); print how many per profile."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="append", default=[],
                        help="a profile in book/runs/ (repeatable; default: every one)")
    args = parser.parse_args(argv)
    runs = project_root() / "book" / "runs"
    profiles = args.profile or sorted(p.name for p in runs.iterdir()
                                      if p.is_dir() and not p.name.startswith(("_", ".")))
    for profile in profiles:
        check_name("profile", profile)
        pages = retidy(profile)
        print(f"{profile}: {len(pages)} run pages tidied from their records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
