"""Whether a notebook runs the same code at a base tree and here, definition by definition.

The code a notebook runs is not whole modules but the top-level definitions its cells can reach.
Its code counts as unchanged when:

1. its cells and the data manifest are byte-identical;
2. every name its cells take from mlmlib (`claims.interval_text`, `from mlmlib.x import f`)
   resolves, in the base tree and here, to definitions with the same source text, and so on
   through every name those definitions mention (`Tree.lookup` follows imports and re-exports,
   so a definition moved to another module with the same text is the same code); the names they
   mention are read with `symtable`, so parameters and locals end a chain, builtins and other
   packages' imports end it too, compared as what they are ('the builtin len', 'numpy');
3. the code each module of the closure runs at import (calls, values computed by calls, `if`
   blocks, decorators that may run code: what `definition_problem` names) is the same in both
   trees, in the same order among the statements binding what it reads, and counts as reached;
   a module imported in one tree only may hold none.

Conservative where unsure: a module used as a value reaches all its names; a name read through
getattr & co. on a module, a namespace lookup (globals, eval, exec, vars, sys.modules), a dynamic
import or a star import refuses; a name bound by several statements compares all of them.
Orchestration (mlmlib.runs, code_digest) is not followed: no code version counts it.

This module compares the two trees; rekey_statements reads a module's top-level statements and
what each runs at import, rekey_names resolves a name in one tree.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from mlmlib.code_digest import (
    notebook_cells,
    notebook_code,
    notebook_files,
    notebook_modules,
)
from mlmlib.runs.rekey_names import (
    Module,
    Ref,
    Target,
    Tree,
    bind,
    chains,
    dynamic_problem,
    first_line,
    import_targets,
    raw_references,
    resolve,
    written,
)
from mlmlib.runs.rekey_statements import Statement, definition_problem, is_docstring, is_future

MAX_NAMES = 6  # names listed in a summary before "+N more"
MAX_PATH = 4  # names of a reference's path kept in a message


@dataclass(frozen=True)
class Reached:
    """A definition the notebook reaches: its name and its file at the base and here."""

    name: str
    base: str
    here: str


@dataclass
class Comparison:
    """What a notebook reaches at the base and here, and why it differs (problems)."""

    problems: list[str] = field(default_factory=list)
    reached: list[Reached] = field(default_factory=list)  # each definition once, in walk order
    differing: list[str] = field(default_factory=list)  # closure modules whose files differ
    at_import: int = 0  # statements run at import, compared (each module of the closure's)

    @property
    def accepted(self) -> bool:
        """True when everything the notebook reaches is the same code in both trees."""
        return not self.problems

    def moved(self) -> list[str]:
        """The reached definitions found in another file here: 'interval_text stats.py -> verdicts.py'."""
        return [f"{r.name} {r.base} -> {r.here}" for r in self.reached if r.base != r.here]

    def summary(self) -> str:
        """What was compared, as a rule sentence says it (after 'unchanged at base X')."""
        moved = self.moved()
        text = (f"{len(self.reached)} definitions and {self.at_import} statements run at import, "
                "source text compared")
        if moved:
            text += f", moved definitions followed: {_cut(moved)}"
        edits = f"; edits elsewhere in {_cut(self.differing)} are not reached by its code"
        return f"({text}){edits if self.differing else ''}"

    def explain(self) -> str:
        """Every problem, or the summary when there is none."""
        return "; ".join(self.problems) if self.problems else self.summary()


def _cut(items: list[str]) -> str:
    """'a, b, c' with the list cut short after MAX_NAMES: 'a, ..., f, +3 more'."""
    more = f", +{len(items) - MAX_NAMES} more" if len(items) > MAX_NAMES else ""
    return ", ".join(items[:MAX_NAMES]) + more


# ---------------------------------------------------------------- both trees at once
class _Walk:
    """Follows references in the base tree and here at once, comparing what each resolves to."""

    def __init__(self, base: Tree, here: Tree, result: Comparison):
        self.base, self.here, self.result = base, here, result
        self.todo: deque[tuple[tuple[str, ...], Target, Target]] = deque()
        self.seen: set[tuple] = set()

    def ref(self, path: tuple[str, ...], at_base: Ref, here: Ref) -> None:
        """Queue one reference, resolved in each tree."""
        self.todo.append((path, resolve(self.base, at_base), resolve(self.here, here)))

    def run(self) -> None:
        """Visit everything queued, and all it reaches."""
        while self.todo:
            self.visit(*self.todo.popleft())

    def visit(self, path: tuple[str, ...], at_base: Target, here: Target) -> None:
        """Compare one reference's targets; follow them when they agree."""
        where = " > ".join(path[-MAX_PATH:])
        if at_base.problem or here.problem:
            one = "" if at_base.problem and here.problem else " (at the base)" if at_base.problem else " (here)"
            self.result.problems.append(f"{where}: {at_base.problem or here.problem}{one}")
        elif at_base.key != here.key:
            self.result.problems.append(f"{where}: {_changed(at_base, here)}")
        elif (at_base.ident, here.ident) not in self.seen and at_base.ident:
            self.seen.add((at_base.ident, here.ident))
            self.follow(path, at_base, here)

    def follow(self, path: tuple[str, ...], at_base: Target, here: Target) -> None:
        """Queue what a definition mentions; for a module used as a value, all its names."""
        if at_base.whole is not None:
            for name in sorted(self.base.names(at_base.whole) | self.here.names(here.whole)):
                self.ref(path[:-1] + (f"{path[-1]}.{name}",), Ref(at_base.whole, name), Ref(here.whole, name))
            return
        if at_base.ident[0] == "definition":
            self.result.reached.append(Reached(at_base.ident[-1], at_base.module.label, here.module.label))
        else:
            self.result.at_import += 1
        for s, t in zip(at_base.statements, here.statements):  # the same texts, in order
            if problem := dynamic_problem(s.text):
                self.result.problems.append(f"{' > '.join(path[-MAX_PATH:])}: {problem}")
            for raw in raw_references(s.text):
                self.ref(path + (written(raw),), bind(raw, at_base.module.name,
                         at_base.module.package), bind(raw, here.module.name, here.module.package))


def _changed(at_base: Target, here: Target) -> str:
    """Why two targets differ, in words: 'changed: its source text differs (defined in ...)'."""
    where = f"{_describe(at_base)} at the base, {_describe(here)} here"
    if at_base.key[0] == here.key[0] == "definition":
        what = "source text" if at_base.key[1] == here.key[1] else "module's __future__ imports"
        return f"changed: its {what} differs ({where})"
    return where


def _describe(t: Target) -> str:
    """A target in a few words: 'defined in stats.py, line 252', 'the builtin', 'not defined'."""
    kind = t.key[0]
    if kind == "definition":
        lines = ", ".join(str(s.node.lineno) for s in t.statements)
        return f"defined in {t.module.label}, line{'s' if len(t.statements) > 1 else ''} {lines}"
    words = {"builtin": "the builtin", "unbound": "not defined", "module": "the module {}",
             "external": "{1} from {0}", "external module": "the module {}",
             "external import": "the module {}", "orchestration": "{1} from {0} (orchestration)",
             "module attribute": "the {} of {}"}
    return words.get(kind, kind).format(*t.key[1:])


# ---------------------------------------------------------------- code run at import
def runs_at_import(s: Statement, module: Module) -> bool:
    """True for a top-level statement that runs code at import, beyond binding a name."""
    if is_docstring(s.node) or is_future(s.node):
        return False
    return definition_problem(s.node, lazy_annotations="annotations" in module.future) is not None


def import_code(module: Module | None) -> list[tuple[Statement, str]]:
    """What a module runs at import, in order among the statements binding the names it reads."""
    # Each with what both trees must agree on: its text; for a binding, the names it binds (its
    # text is compared where the walk from the code run at import reaches it).
    # A module missing from a tree, or one that does not parse (refused elsewhere), runs nothing here.
    if module is None or module.error:
        return []
    code = [s for s in module.body if runs_at_import(s, module)]
    read = {r[1] for s in code for r in raw_references(s.text) if r[0] == "global"}
    return [(s, s.text if s in code else f"binds {', '.join(sorted(s.binds))}")
            for s in module.body if s in code or s.binds & read]


def _import_problems(walk: _Walk, modules: list[str]) -> None:
    """Every module imported in either tree runs the same code at import; it is reached."""
    for name in modules:
        at_base, here = walk.base.module(name), walk.here.module(name)
        for m in (at_base, here):
            if m is not None and m.error:
                walk.result.problems.append(m.error)
        code = import_code(at_base), import_code(here)
        label = (here or at_base).label
        if [c for _, c in code[0]] != [c for _, c in code[1]]:
            walk.result.problems.append(f"code run at import changed in {label}: {_first_difference(*code)}")
            continue
        if code[0] and at_base.future != here.future:
            walk.result.problems.append(f"code run at import in {label}: its __future__ imports changed")
        for (s, _), (t, _) in zip(*code):
            if runs_at_import(s, at_base):
                key = ("definition", at_base.future, (s.text,))
                walk.visit((f"{label} at import ({first_line(s.text)})",),
                           Target(key, ("import code", name, s.node.lineno), at_base, (s,)),
                           Target(key, ("import code", name, t.node.lineno), here, (t,)))


def _first_difference(at_base: list[tuple[Statement, str]], here: list[tuple[Statement, str]]) -> str:
    """The first statement run at import that differs: "'x = f()' at the base, 'x = g()' here"."""
    ran = [[c for s, c in side if c == s.text] for side in (at_base, here)]
    for a, b in zip(ran[0] + [""] * len(ran[1]), ran[1] + [""] * len(ran[0])):
        if a != b:
            left = f"{first_line(a)!r}" if a else "nothing"
            right = f"{first_line(b)!r}" if b else "nothing"
            return f"{left} at the base, {right} here"
    return "the same statements, in another order among those binding the names they read"


# ---------------------------------------------------------------- a notebook: base against here
def compare_notebook(base_notebook: Path, base_package: Path, notebook: Path, package: Path) -> Comparison:
    """Whether a notebook runs the same code at the base (its notebook and package) and here."""
    result = Comparison()
    if _cells(base_notebook) != _cells(notebook):
        result.problems.append(f"its cells changed ({notebook.name})")
        return result
    if _manifests(base_notebook, base_package) != _manifests(notebook, package):
        result.problems.append("the data manifest changed")
    base_modules = notebook_modules(base_notebook, base_package)
    modules = notebook_modules(notebook, package)
    result.differing = _differing(base_modules, base_package, modules, package)
    walk = _Walk(Tree(base_package), Tree(package), result)
    code = notebook_code(notebook)
    if problem := dynamic_problem(code):
        result.problems.append(f"its cells: {problem}")
    for raw in chains(ast.parse(code), set(), import_targets(ast.parse(code))):
        ref = bind(raw, "", "")
        walk.ref((written(raw),), ref, ref)
    _import_problems(walk, sorted(set(base_modules) | set(modules)))
    walk.run()
    result.problems = list(dict.fromkeys(result.problems))
    return result


def _differing(base_modules: dict[str, Path], base_package: Path, modules: dict[str, Path],
               package: Path) -> list[str]:
    """The closure's modules whose files differ: 'stats.py', 'verdicts.py (new)', 'x.py (gone)'."""
    found = []
    for name in sorted(set(base_modules) | set(modules)):
        before, after = base_modules.get(name), modules.get(name)
        if after is None:
            found.append(f"{before.relative_to(base_package).as_posix()} (gone)")
        elif before is None or before.read_bytes() != after.read_bytes():
            found.append(after.relative_to(package).as_posix() + (" (new)" if before is None else ""))
    return found


def _cells(notebook: Path) -> list[tuple[str, str]]:
    """A notebook's cells as the code version hashes them: type and source."""
    return [(c["cell_type"], "".join(c["source"])) for c in notebook_cells(notebook)]


def _manifests(notebook: Path, package: Path) -> dict[str, bytes]:
    """The data files (not modules) a notebook's version covers, with their bytes."""
    return {p.relative_to(package).as_posix(): p.read_bytes()
            for p in notebook_files(notebook, package) if p.suffix != ".py"}
