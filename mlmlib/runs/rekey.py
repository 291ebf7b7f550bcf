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
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import symtable
from collections import deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from mlmlib.code_digest import (
    _absolute,
    is_orchestration,
    module_file,
    notebook_cells,
    notebook_code,
    notebook_files,
    notebook_modules,
)

# Decorators and calls that only wrap or describe what they are given: a definition using them
# runs nothing else at import time.
PURE_DECORATORS = frozenset({"dataclass", "cache", "lru_cache", "cached_property", "property",
                             "staticmethod", "classmethod", "total_ordering", "abstractmethod",
                             "overload"})
PURE_CALLS = PURE_DECORATORS | {"field"}
# Base classes whose subclassing runs no code of this project (no __init_subclass__ registry).
SAFE_BASES = frozenset({n for n in dir(builtins) if isinstance(getattr(builtins, n), type)}
                       | {"Enum", "IntEnum", "StrEnum", "NamedTuple", "TypedDict", "Protocol",
                          "Generic", "ABC"})
# Calls that read a module's namespace by name: the names they read cannot be listed.
NAMESPACE_READERS = frozenset({"globals", "eval", "exec"})
# Calls that load a module named at run time (importlib.util.find_spec only locates one: allowed).
DYNAMIC_IMPORTS = frozenset({"import_module", "__import__", "reload", "module_from_spec",
                             "exec_module", "load_module", "spec_from_file_location"})
# Calls that read an object's attributes by a name computed at run time: on a module, refused.
ATTRIBUTE_READERS = frozenset({"getattr", "hasattr", "setattr", "delattr", "vars", "dir"})
DYNAMIC = "*"  # the name a star import binds: any name
MAX_NAMES = 6  # names listed in a summary before "+N more"
MAX_HOPS = 50  # re-exports followed before a chain counts as a cycle
MAX_PATH = 4  # names of a reference's path kept in a message


@dataclass(frozen=True)
class Statement:
    """One top-level statement: its exact source text and the names it binds in the module."""

    node: ast.stmt
    text: str
    binds: frozenset[str]


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


# ---------------------------------------------------------------- top-level statements
def source_text(source: str, node: ast.stmt) -> str:
    """A top-level statement's exact source, its decorators included (ast starts it at `def`)."""
    decorators = getattr(node, "decorator_list", [])
    if not decorators:
        return ast.get_source_segment(source, node)
    lines = source.splitlines(keepends=True)
    head = "".join(lines[decorators[0].lineno - 1:node.lineno - 1])  # top level: from column 0
    return head + ast.get_source_segment(source, node)


def _is_docstring(node: ast.stmt) -> bool:
    """True for a statement that is a bare string (a docstring where it comes first)."""
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def statements(source: str) -> tuple[str | None, list[Statement]]:
    """A module's docstring (None without one) and its other top-level statements."""
    body = ast.parse(source).body
    doc = None
    if body and _is_docstring(body[0]):
        doc, body = source_text(source, body[0]), body[1:]
    return doc, [Statement(n, source_text(source, n), frozenset(module_binds(n))) for n in body]


def module_binds(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds in the module (not its functions' own locals)."""
    # Lambdas and comprehensions are scopes of their own (but a walrus in a comprehension binds
    # here). What this cannot see (`global x` in a function) binds only when that code runs: a
    # function that is reached, or code run at import; both are compared where they are.
    found: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(n.name)
            todo += n.decorator_list  # evaluated in the module's scope; the body is not
            continue
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            found |= {w.target.id for w in ast.walk(n) if isinstance(w, ast.NamedExpr)}
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            found |= {DYNAMIC if a.name == "*" else (a.asname or a.name.split(".")[0]) for a in n.names}
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            found.add(n.id)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            found.add(n.name)
        todo += ast.iter_child_nodes(n)
    return found


def _reads_namespace(node: ast.AST) -> bool:
    """True for code that looks names up in a namespace by string: globals(), eval, vars(), ..."""
    if isinstance(node, ast.Name) and node.id in NAMESPACE_READERS:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        return node.func.id in {"vars", "locals", "dir"}
    return isinstance(node, ast.Attribute) and node.attr == "modules" and _root(node) == "sys"


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from ('a' for a.b.c), None if not a plain name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _last_name(node: ast.expr) -> str | None:
    """'c' for a name or an attribute chain a.b.c; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) and _root(node) else None


# ---------------------------------------------------------------- what a definition runs
def definition_problem(node: ast.stmt, lazy_annotations: bool) -> str | None:
    """Why a top-level statement does more than define a name at import time (None: it does not)."""
    if _is_docstring(node):
        return None
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return "a __future__ import changes how the whole module compiles"
        return "a star import binds names that cannot be listed" if DYNAMIC in module_binds(node) else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _function_problem(node, lazy_annotations)
    if isinstance(node, ast.ClassDef):
        return _class_problem(node, lazy_annotations)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return _assignment_problem(node, lazy_annotations, calls=frozenset())
    return "module-level code that runs at import"


def _function_problem(node: ast.FunctionDef | ast.AsyncFunctionDef, lazy: bool) -> str | None:
    """What a def evaluates when it runs: decorators, defaults and (unless lazy) annotations."""
    if not all(_pure_decorator(d) for d in node.decorator_list):
        return f"{node.name}: a decorator that may run code"
    a = node.args
    defaults = a.defaults + [d for d in a.kw_defaults if d is not None]
    if not all(_constant(d) for d in defaults):
        return f"{node.name}: a default computed by a call"
    notes = [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
             if x is not None and x.annotation is not None] + ([node.returns] if node.returns else [])
    if not lazy and not all(_constant(n, annotation=True) for n in notes):
        return f"{node.name}: an annotation computed by a call"
    return None


def _class_problem(node: ast.ClassDef, lazy: bool) -> str | None:
    """What a class statement runs: decorators, base classes, and its body (run at import)."""
    if not all(_pure_decorator(d) for d in node.decorator_list):
        return f"{node.name}: a decorator that may run code"
    bases = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]  # Generic[T]: Generic
    bases_ok = all(_last_name(b) in SAFE_BASES for b in bases)
    if node.keywords or not bases_ok:  # a base or metaclass may register the new class somewhere
        return f"{node.name}: a base class or metaclass that may run code"
    for stmt in node.body:
        if isinstance(stmt, ast.Pass) or _is_docstring(stmt):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            problem = _function_problem(stmt, lazy)
        elif isinstance(stmt, ast.ClassDef):
            problem = _class_problem(stmt, lazy)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            problem = _assignment_problem(stmt, lazy, calls=PURE_CALLS)  # dataclass field(...)
        else:
            problem = "code in its body"
        if problem:
            return f"{node.name}: {problem}"
    return None


def _assignment_problem(node: ast.Assign | ast.AnnAssign, lazy: bool, calls: frozenset[str]) -> str | None:
    """Why an assignment is not a name bound to a constant (None: it is one)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not all(isinstance(t, ast.Name) for t in targets):  # a.b = ..., d[k] = ...: a mutation
        return "an assignment that mutates an object"
    if node.value is not None and not _constant(node.value, calls=calls):
        return f"{', '.join(t.id for t in targets)}: a value computed by a call"
    if isinstance(node, ast.AnnAssign) and not lazy and not _constant(node.annotation, annotation=True):
        return f"{node.target.id}: an annotation computed by a call"
    return None


def _constant(node: ast.expr, annotation: bool = False, calls: frozenset[str] = frozenset()) -> bool:
    """True for an expression that calls nothing: literals, names and attributes in containers."""
    with contextlib.suppress(Exception):  # what literal_eval refuses is checked node by node below
        ast.literal_eval(node)
        return True
    allowed = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict,
               ast.UnaryOp, ast.BinOp, ast.keyword, ast.expr_context, ast.operator, ast.unaryop)
    if annotation:  # list[int], int | None
        allowed += (ast.Subscript,)
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and _last_name(n.func) in calls:
            continue  # its arguments are walked too
        if not isinstance(n, allowed):
            return False
    return True


def _pure_decorator(node: ast.expr) -> bool:
    """True for a decorator from PURE_DECORATORS, bare or called with constant arguments."""
    if isinstance(node, ast.Call):
        arguments = node.args + [k.value for k in node.keywords]
        return _last_name(node.func) in PURE_DECORATORS and all(_constant(a) for a in arguments)
    return _last_name(node) in PURE_DECORATORS


# ---------------------------------------------------------------- one tree's modules
@dataclass(eq=False)
class Module:
    """One module of a tree: its statements, and the statements binding each name."""

    name: str  # dotted: mlmlib.stats
    label: str  # its file, relative to the package: stats.py
    package: str  # where its relative imports resolve
    doc: str | None = None
    body: tuple[Statement, ...] = ()
    error: str | None = None  # why it could not be read
    binds: dict[str, tuple[Statement, ...]] = field(default_factory=dict)

    @property
    def future(self) -> tuple[str, ...]:
        """Its `from __future__` features: they change how every definition in it compiles."""
        return tuple(sorted(a.name for s in self.body if _is_future(s.node) for a in s.node.names))

    @property
    def is_package(self) -> bool:
        """True for a package's __init__: its submodules are attributes too."""
        return self.label.endswith("__init__.py")


class Tree:
    """One tree's mlmlib package: its modules, each parsed once, when first asked for."""

    def __init__(self, package: Path):
        self.package = package
        self._modules: dict[str, Module | None] = {}

    def module(self, name: str) -> Module | None:
        """The module `name` (None: no such file in this tree)."""
        if name not in self._modules:
            path = module_file(name, self.package)
            self._modules[name] = None if path is None else _parse(name, path, self.package)
        return self._modules[name]

    def names(self, name: str) -> set[str]:
        """The names a module's top-level statements bind (none when it is missing)."""
        module = self.module(name)
        return set(module.binds) if module else set()


def _parse(name: str, path: Path, package: Path) -> Module:
    """Read one module's top-level statements and index them by the names they bind."""
    label = path.relative_to(package).as_posix()
    module = Module(name, label, name if path.name == "__init__.py" else name.rpartition(".")[0])
    try:
        module.doc, body = statements(path.read_text())
    except SyntaxError as exc:
        module.error = f"{label} does not parse ({exc.msg}, line {exc.lineno})"
        return module
    module.body = tuple(body)
    for s in body:
        for bound in s.binds:
            module.binds[bound] = module.binds.get(bound, ()) + (s,)
    return module


def _is_future(node: ast.stmt) -> bool:
    """True for `from __future__ import ...`."""
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _is_mlmlib(module: str) -> bool:
    """True for mlmlib and its submodules' names."""
    return module == "mlmlib" or module.startswith("mlmlib.")


# ---------------------------------------------------------------- what a name resolves to
@dataclass(frozen=True)
class Ref:
    """A name looked up in a module's namespace, then attributes: `module.name.a.b`."""

    module: str
    name: str = ""  # none: the module itself
    attrs: tuple[str, ...] = ()
    dynamic: bool = False  # read by getattr & co.: a module there is refused


@dataclass(frozen=True)
class Target:
    """What a reference resolves to in one tree; `key` is what the two trees must agree on."""

    key: tuple
    ident: tuple = ()  # a definition or module: followed once per pair of trees
    module: Module | None = None  # a definition's module
    statements: tuple[Statement, ...] = ()  # a definition: every statement binding the name
    whole: str | None = None  # a module: attributes follow into it, else all its names count
    problem: str | None = None  # it cannot be resolved for sure: refused


def resolve(tree: Tree, ref: Ref) -> Target:
    """Follow a reference to what it stands for: a definition, a module, a builtin, an import."""
    target = lookup(tree, ref.module, ref.name) if ref.name else module_target(tree, ref.module)
    for attr in ref.attrs:
        if target.whole is None:  # a definition is reached whole, its attributes with it
            break
        target = lookup(tree, target.whole, attr)
    if ref.dynamic and target.whole is not None and _is_mlmlib(target.whole):
        return Target(("dynamic",), problem=f"the module {target.whole} is read by getattr or vars")
    return target


def module_target(tree: Tree, module: str) -> Target:
    """A module as a target: followed through attributes (or, used as a value, whole)."""
    if not _is_mlmlib(module):
        return Target(("external module", module))
    if is_orchestration(module):  # never part of a code version (code_digest.ORCHESTRATION)
        return Target(("orchestration", module))
    if tree.module(module) is None:
        return Target(("missing", module), problem=f"no module {module}")
    return Target(("module", module), ident=("module", module), whole=module)


def lookup(tree: Tree, module: str, name: str, hops: int = 0) -> Target:
    """What `name` is in a module's namespace, imports and re-exports followed to their source."""
    if not _is_mlmlib(module):
        return Target(("external", module, name))
    if is_orchestration(module):
        return Target(("orchestration", module, name))
    if hops > MAX_HOPS:
        return Target(("cycle",), problem=f"{name}: imports that go round in a cycle")
    m = tree.module(module)
    if m is None or m.error:
        return Target(("missing", module), problem=m.error if m else f"no module {module}")
    if DYNAMIC in m.binds:  # a star import may bind any name, before or after the others
        return Target(("star",), problem=f"{m.label} has a star import: {name} may come from it")
    found = m.binds.get(name, ())
    submodule = f"{module}.{name}" if m.is_package and tree.module(f"{module}.{name}") else None
    if not found:
        return module_target(tree, submodule) if submodule else _unbound(m, name)
    target = _forwarded(tree, m, found[0], name, hops) if len(found) == 1 else None
    if submodule and (target is None or target.whole != submodule):  # which one wins depends
        return Target(("ambiguous",), problem=f"{m.label} binds {name}, also a submodule")
    if target is not None:
        return target
    key = ("definition", m.future, tuple(s.text for s in found))
    return Target(key, ident=("definition", module, name), module=m, statements=found)


def _unbound(m: Module, name: str) -> Target:
    """A name no statement of the module binds: a module attribute, a builtin, or nothing."""
    if "__getattr__" in m.binds:
        return Target(("getattr",), problem=f"{m.label} defines __getattr__: {name} is computed")
    if name.startswith("__") and name.endswith("__"):  # __name__, __file__, __doc__: its own
        return Target(("module attribute", name, m.name, m.doc if name == "__doc__" else None))
    return Target(("builtin" if hasattr(builtins, name) else "unbound", name))


def _forwarded(tree: Tree, m: Module, s: Statement, name: str, hops: int) -> Target | None:
    """Where a plain import binding `name` leads (None: the statement is not a plain import)."""
    node = s.node
    if isinstance(node, ast.ImportFrom) and not _is_future(node):
        for a in node.names:
            if (a.asname or a.name) != name or a.name == "*":
                continue
            source = _absolute(node.module, node.level, m.package)
            if (source, a.name) == (m.name, name):  # `from . import x` in x's package: the submodule
                return module_target(tree, f"{source}.{name}")
            return lookup(tree, source, a.name, hops + 1)
    if isinstance(node, ast.Import):
        for a in node.names:
            if (a.asname or a.name.split(".")[0]) == name:
                target = a.name if a.asname else a.name.split(".")[0]
                if not _is_mlmlib(target):  # `import numpy.linalg` is not `import numpy`
                    return Target(("external import", a.name))
                return module_target(tree, target)
    return None


# ---------------------------------------------------------------- what a statement refers to
@cache
def raw_references(text: str) -> tuple[tuple, ...]:
    """What a top-level statement's text refers to outside itself, in a fixed order."""
    # ('global', name, attrs, dynamic) or ('import', alias, module, level, name, attrs, dynamic):
    # the same text gives the same list in both trees, so the two are walked side by side.
    tree = ast.parse(text)
    imports = _import_targets(tree)
    found = _chains(tree, _global_names(text), imports)
    # imports run when the statement runs (`try: from mlmlib.a import f`, or in a class body, an
    # attribute of the class): followed even where no name reads them
    found += [("import", alias, *t, (), False) for node in _run_with_statement(tree)
              if isinstance(node, (ast.Import, ast.ImportFrom))
              for alias, t in zip(_bound_names(node), _targets(node))]
    return tuple(dict.fromkeys(found))


def _global_names(text: str) -> set[str]:
    """The module-level names a statement reads or writes, by Python's own scoping rules."""
    # A top-level statement compiled alone scopes its names as in its module: module level is
    # never a closure. Class bodies count every name they read (they fall back to globals).
    top = symtable.symtable(text, "<statement>", "exec")
    found = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    todo = list(top.get_children())
    while todo:
        table = todo.pop()
        todo += table.get_children()
        in_class = table.get_type() == "class"
        found |= {s.get_name() for s in table.get_symbols()
                  if s.is_global() or (in_class and s.is_referenced())}
    return found


def _import_targets(tree: ast.AST) -> dict[str, list[tuple]]:
    """Each name an import binds anywhere in the code -> (module, level, name: '' for a module)."""
    found: dict[str, list[tuple]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for bound, target in zip(_bound_names(node), _targets(node)):
                found.setdefault(bound, []).append(target)
    return found


def _bound_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import statement binds, one per alias (a star binds DYNAMIC)."""
    if isinstance(node, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    return [a.asname or a.name for a in node.names]


def _targets(node: ast.Import | ast.ImportFrom) -> list[tuple]:
    """What each alias of an import stands for: (module, level, name), '' naming the module."""
    if isinstance(node, ast.Import):
        return [(a.name if a.asname else a.name.split(".")[0], 0, "") for a in node.names]
    return [(node.module, node.level, a.name) for a in node.names]


def _run_with_statement(tree: ast.AST) -> list[ast.AST]:
    """The nodes of a statement run when it runs: all but function and lambda bodies."""
    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += node.decorator_list + [node.args] + ([node.returns] if node.returns else [])
        elif not isinstance(node, ast.Lambda):
            todo += ast.iter_child_nodes(node)
    return found


def _chains(tree: ast.AST, names: set[str], imports: dict[str, list[tuple]]) -> list[tuple]:
    """Every use of a global or an imported name, with the attributes read on it (`a.b.c`)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    dynamic = {id(c.args[0]) for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
               and _last_name(c.func) in ATTRIBUTE_READERS}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and (node.id in names or node.id in imports)):
            continue
        attrs, up = [], node
        while isinstance(parents.get(up), ast.Attribute):
            up = parents[up]
            attrs.append(up.attr)
        if node.id in names:
            found.append(("global", node.id, tuple(attrs), id(node) in dynamic))
        found += [("import", node.id, *t, tuple(attrs), id(node) in dynamic) for t in imports.get(node.id, [])]
    return found


def bind(raw: tuple, module: str, package: str) -> Ref:
    """A raw reference of a statement in `module` (relative imports resolved in `package`)."""
    if raw[0] == "global":
        return Ref(module, raw[1], raw[2], raw[3])
    _, _, source, level, name, attrs, dynamic = raw
    return Ref(_absolute(source, level, package), name, attrs, dynamic)


def _written(raw: tuple) -> str:
    """A raw reference as the code writes it: 'stats.mean'."""
    return ".".join([raw[1], *raw[-2]])


@cache
def dynamic_problem(text: str) -> str | None:
    """Why code reads names that cannot be listed (None: it does not)."""
    for node in ast.walk(ast.parse(text)):
        if _reads_namespace(node):
            return "looks names up in a namespace (globals, eval, exec, vars, dir, sys.modules)"
        name = _last_name(node.func) if isinstance(node, ast.Call) else None
        if name in DYNAMIC_IMPORTS or (isinstance(node, ast.Name) and node.id == "__import__"):
            return "imports a module named at run time"
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return "a star import binds names that cannot be listed"
    return None


def _first_line(text: str) -> str:
    """A statement's first line, shortened: how a message points at it."""
    line = text.splitlines()[0]
    return line if len(line) <= 60 else line[:59] + "…"


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
                self.ref(path + (_written(raw),), bind(raw, at_base.module.name,
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
    if _is_docstring(s.node) or _is_future(s.node):
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
                walk.visit((f"{label} at import ({_first_line(s.text)})",),
                           Target(key, ("import code", name, s.node.lineno), at_base, (s,)),
                           Target(key, ("import code", name, t.node.lineno), here, (t,)))


def _first_difference(at_base: list[tuple[Statement, str]], here: list[tuple[Statement, str]]) -> str:
    """The first statement run at import that differs: "'x = f()' at the base, 'x = g()' here"."""
    ran = [[c for s, c in side if c == s.text] for side in (at_base, here)]
    for a, b in zip(ran[0] + [""] * len(ran[1]), ran[1] + [""] * len(ran[0])):
        if a != b:
            left = f"{_first_line(a)!r}" if a else "nothing"
            right = f"{_first_line(b)!r}" if b else "nothing"
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
    for raw in _chains(ast.parse(code), set(), _import_targets(ast.parse(code))):
        ref = bind(raw, "", "")
        walk.ref((_written(raw),), ref, ref)
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
