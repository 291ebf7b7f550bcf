"""Digests of the library's source: what a cached artifact or a run record was computed by.

A run's code version, and the key of every cached model, is the digest of the core, the
data package and the one paper package that does the work. Editing paper C therefore
invalidates paper C's runs and models only; editing the core invalidates everything.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from mlmlib.paths import PACKAGE_DIR

PAPERS_DIR = PACKAGE_DIR / "papers"
# Orchestration: editing it never changes what a notebook measures.
NOT_CODE = (PACKAGE_DIR / "runs", PAPERS_DIR, PACKAGE_DIR / "__main__.py")


def papers() -> list[str]:
    """Names of the paper packages (folders of mlmlib/papers)."""
    return sorted(p.name for p in PAPERS_DIR.iterdir() if (p / "__init__.py").exists())


def paper_of(module: str) -> str | None:
    """The paper package a module belongs to ('mlmlib.papers.X.y' -> 'X'), else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["mlmlib", "papers"]:
        return parts[2]
    return None


def _is_core(path: Path) -> bool:
    """True for the core's and the data package's files (papers and orchestration left out)."""
    return not any(path == top or top in path.parents for top in NOT_CODE)


def _files(paper: str | None) -> list[Path]:
    """The files whose content decides the result: core, data (with its manifest), one paper."""
    files = [p for p in PACKAGE_DIR.rglob("*.py") if _is_core(p)]
    files += list(PACKAGE_DIR.rglob("MANIFEST.json"))
    if paper is not None:
        folder = PAPERS_DIR / paper
        if not (folder / "__init__.py").exists():
            raise ValueError(f"unknown paper package {paper!r}; papers: {papers()}")
        files += list(folder.rglob("*.py")) + [PAPERS_DIR / "__init__.py"]
    return sorted(set(files))


def source_digest(paper: str | None = None) -> str:
    """Digest of the core, the data package and (optionally) one paper package's sources."""
    return _digest(paper, tuple(_stamp(p) for p in _files(paper)))


def _stamp(path: Path) -> tuple[str, int, int]:
    """Path, size and mtime: a cheap identity for memoising the digest within one process."""
    st = path.stat()
    return (str(path), st.st_size, st.st_mtime_ns)


@cache
def _digest(paper: str | None, stamps: tuple) -> str:
    """Hash the files behind `stamps` (memoised: notebooks ask for it many times)."""
    h = hashlib.sha256()
    for name, _, _ in stamps:
        path = Path(name)
        h.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(b"\x00")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
