"""One tree's modules and what a name resolves to there, for the re-keying comparison
(mlmlib.runs.rekey): imports and re-exports followed, the names a statement mentions read."""

from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from mlmlib.code_digest import (
    _absolute,
    is_orchestration,
    module_file,
)
from mlmlib.runs.rekey_statements import (
    DYNAMIC,
    Statement,
    is_future,
    last_name,
    reads_namespace,
    statements,
)

# Calls that load a module named at run time (importlib.util.find_spec only locates one: allowed).
DYNAMIC_IMPORTS = frozenset({"import_module", "__import__", "reload", "module_from_spec",
                             "exec_module", "load_module", "spec_from_file_location"})
# Calls that read an object's attributes by a name computed at run time: on a module, refused.
ATTRIBUTE_READERS = frozenset({"getattr", "hasattr", "setattr", "delattr", "vars", "dir"})
MAX_HOPS = 50  # re-exports followed before a chain counts as a cycle


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
        return tuple(sorted(a.name for s in self.body if is_future(s.node) for a in s.node.names))

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
    if isinstance(node, ast.ImportFrom) and not is_future(node):
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
    imports = import_targets(tree)
    found = chains(tree, _global_names(text), imports)
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


def import_targets(tree: ast.AST) -> dict[str, list[tuple]]:
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


def chains(tree: ast.AST, names: set[str], imports: dict[str, list[tuple]]) -> list[tuple]:
    """Every use of a global or an imported name, with the attributes read on it (`a.b.c`)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    dynamic = {id(c.args[0]) for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
               and last_name(c.func) in ATTRIBUTE_READERS}
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


def written(raw: tuple) -> str:
    """A raw reference as the code writes it: 'stats.mean'."""
    return ".".join([raw[1], *raw[-2]])


@cache
def dynamic_problem(text: str) -> str | None:
    """Why code reads names that cannot be listed (None: it does not)."""
    for node in ast.walk(ast.parse(text)):
        if reads_namespace(node):
            return "looks names up in a namespace (globals, eval, exec, vars, dir, sys.modules)"
        name = last_name(node.func) if isinstance(node, ast.Call) else None
        if name in DYNAMIC_IMPORTS or (isinstance(node, ast.Name) and node.id == "__import__"):
            return "imports a module named at run time"
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return "a star import binds names that cannot be listed"
    return None


def first_line(text: str) -> str:
    """A statement's first line, shortened: how a message points at it."""
    line = text.splitlines()[0]
    return line if len(line) <= 60 else line[:59] + "…"
