"""Digests of the library's source: what a run record or a cached artifact was computed by.

A run's code version is the digest of the code its notebook actually runs: the mlmlib modules
its code cells import, followed through their own imports (inside functions too), the data
package's MANIFEST.json when a data module is among them, and the notebook's cells. An edit
reaches only the runs whose notebooks import the edited module, directly or not: editing a
paper's claims reruns the notebooks that use them, not the training runs that never import them.

Cached models are keyed by `source_digest`: the core, the data package and the one paper package
that builds them.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import cache
from pathlib import Path

from mlmlib.paths import PACKAGE_DIR

PAPERS_DIR = PACKAGE_DIR / "papers"
# Orchestration: editing it never changes what a notebook measures.
NOT_CODE = (PACKAGE_DIR / "runs", PAPERS_DIR, PACKAGE_DIR / "__main__.py")
# Never part of a code version, nor followed: the runs package and the entry point execute
# notebooks and write records, and this module computes the identity of results, not results
# (counting it would make every edit of the rule itself rerun every run).
ORCHESTRATION = ("mlmlib.runs", "mlmlib.__main__", "mlmlib.code_digest")
MANIFEST = "MANIFEST.json"


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
    files += list(PACKAGE_DIR.rglob(MANIFEST))
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


def is_orchestration(module: str) -> bool:
    """True for the runs package, the entry point and this module (see ORCHESTRATION)."""
    return any(module == top or module.startswith(top + ".") for top in ORCHESTRATION)


def module_file(module: str, package_dir: Path) -> Path | None:
    """The file of an mlmlib module in the tree at `package_dir`, or None (a name, not a module)."""
    base = package_dir.joinpath(*module.split(".")[1:])
    candidates = [base / "__init__.py"] + ([base.with_suffix(".py")] if module != "mlmlib" else [])
    return next((path for path in candidates if path.is_file()), None)


def _parents(module: str) -> list[str]:
    """'mlmlib.a.b' -> ['mlmlib', 'mlmlib.a', 'mlmlib.a.b']."""
    # importing a module runs the __init__ of each package on the way: they count too
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imported_names(source: str, package: str = "") -> set[str]:
    """Every mlmlib module `source` may import, at any depth (imports inside functions too)."""
    # ast.walk visits function bodies and `if TYPE_CHECKING:` blocks too: a lazy import is code
    # that runs, and an import that never runs only costs a rerun too many, never one too few.
    # `from a import b` yields 'a' and 'a.b' (b may be a submodule): a name that is not a module
    # has no file and is dropped by closure(). `package` resolves relative imports.
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names if alias.name != "*"}
    return {m for m in found if m == "mlmlib" or m.startswith("mlmlib.")}


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of `from <level dots><module> import ...` inside `package`."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)] if level - 1 < len(parts) else []
    return ".".join(base + ([module] if module else []))


@cache
def _imports_of(path: str, module: str, size: int, mtime_ns: int) -> frozenset[str]:
    """The modules a file imports (memoised by its size and mtime: parsed once per edit)."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    return frozenset(imported_names(Path(path).read_text(), package))


def closure(roots: set[str], package_dir: Path | None = None) -> dict[str, Path]:
    """The mlmlib modules `roots` import, transitively, with their files (orchestration left out)."""
    package_dir = package_dir or PACKAGE_DIR  # read at call time: tests point it at a copy
    found: dict[str, Path] = {}
    todo = [p for m in roots for p in _parents(m)]
    while todo:
        module = todo.pop()
        if module in found or is_orchestration(module):
            continue
        path = module_file(module, package_dir)
        if path is None:
            continue
        found[module] = path
        st = path.stat()
        todo += [p for m in _imports_of(str(path), module, st.st_size, st.st_mtime_ns)
                 for p in _parents(m)]
    return dict(sorted(found.items()))


def notebook_cells(notebook: Path) -> list[dict]:
    """The cells of a notebook file."""
    return json.loads(notebook.read_text())["cells"]


def notebook_code(notebook: Path) -> str:
    """The notebook's code cells as one Python source (IPython's %magic and !shell lines dropped)."""
    lines = [line for cell in notebook_cells(notebook) if cell["cell_type"] == "code"
             for line in "".join(cell["source"]).splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def notebook_modules(notebook: Path, package_dir: Path | None = None) -> dict[str, Path]:
    """The mlmlib modules a notebook runs (its imports' closure) with their files."""
    try:
        roots = imported_names(notebook_code(notebook))
    except SyntaxError as exc:  # imports unread would be edits unseen: refuse, never guess
        raise ValueError(f"{notebook}: a code cell is not Python ({exc}); cannot tell its imports") from exc
    return closure(roots, package_dir)


def _files_of(modules: dict[str, Path], package_dir: Path) -> list[Path]:
    """The modules' files, and the data manifest if one of them is a data module."""
    files = list(modules.values())
    # The shipped data files are too large to hash on every run; the manifest holds their hashes.
    if any(m == "mlmlib.data" or m.startswith("mlmlib.data.") for m in modules):
        files += list((package_dir / "data").rglob(MANIFEST))
    return sorted(set(files))


def _hash_files(h, files: list[Path], package_dir: Path) -> None:
    """Feed each file, named relative to the package, and its bytes to the hash `h`."""
    for path in files:
        h.update(path.relative_to(package_dir).as_posix().encode() + b"\x00")
        h.update(path.read_bytes() + b"\x00")


def notebook_files(notebook: Path, package_dir: Path | None = None) -> list[Path]:
    """The files a notebook's results depend on: its modules, and the data manifest if it uses data."""
    package_dir = package_dir or PACKAGE_DIR
    return _files_of(notebook_modules(notebook, package_dir), package_dir)


def module_version(module: str, package_dir: Path | None = None) -> str:
    """Digest of the files a module runs: its imports' closure (and the data manifest if it uses
    data). A notebook that imports the module has it in its own code version."""
    package_dir = package_dir or PACKAGE_DIR
    h = hashlib.sha256()
    _hash_files(h, _files_of(closure({module}, package_dir), package_dir), package_dir)
    return h.hexdigest()[:16]


def notebook_version(notebook: Path, package_dir: Path | None = None) -> str:
    """Digest of a notebook's files (named relative to the package) and its cells."""
    package_dir = package_dir or PACKAGE_DIR
    h = hashlib.sha256()
    _hash_files(h, notebook_files(notebook, package_dir), package_dir)
    for cell in notebook_cells(notebook):
        h.update(cell["cell_type"].encode())
        h.update("".join(cell["source"]).encode())
    return h.hexdigest()[:16]
