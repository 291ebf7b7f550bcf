"""A module's top-level statements, for the re-keying comparison (mlmlib.runs.rekey): their source
text, the names each binds, and whether a definition runs code at import."""

from __future__ import annotations

import ast
import builtins
import contextlib
from dataclasses import dataclass

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
DYNAMIC = "*"  # the name a star import binds: any name


@dataclass(frozen=True)
class Statement:
    """One top-level statement: its exact source text and the names it binds in the module."""

    node: ast.stmt
    text: str
    binds: frozenset[str]


# ---------------------------------------------------------------- top-level statements
def source_text(source: str, node: ast.stmt) -> str:
    """A top-level statement's exact source, its decorators included (ast starts it at `def`)."""
    decorators = getattr(node, "decorator_list", [])
    if not decorators:
        return ast.get_source_segment(source, node)
    lines = source.splitlines(keepends=True)
    head = "".join(lines[decorators[0].lineno - 1:node.lineno - 1])  # top level: from column 0
    return head + ast.get_source_segment(source, node)


def is_docstring(node: ast.stmt) -> bool:
    """True for a statement that is a bare string (a docstring where it comes first)."""
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)

def is_future(node: ast.stmt) -> bool:
    """True for `from __future__ import ...`."""
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def statements(source: str) -> tuple[str | None, list[Statement]]:
    """A module's docstring (None without one) and its other top-level statements."""
    body = ast.parse(source).body
    doc = None
    if body and is_docstring(body[0]):
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


def reads_namespace(node: ast.AST) -> bool:
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


def last_name(node: ast.expr) -> str | None:
    """'c' for a name or an attribute chain a.b.c; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) and _root(node) else None


# ---------------------------------------------------------------- what a definition runs
def definition_problem(node: ast.stmt, lazy_annotations: bool) -> str | None:
    """Why a top-level statement does more than define a name at import time (None: it does not)."""
    if is_docstring(node):
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
    bases_ok = all(last_name(b) in SAFE_BASES for b in bases)
    if node.keywords or not bases_ok:  # a base or metaclass may register the new class somewhere
        return f"{node.name}: a base class or metaclass that may run code"
    for stmt in node.body:
        if isinstance(stmt, ast.Pass) or is_docstring(stmt):
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
        if isinstance(n, ast.Call) and last_name(n.func) in calls:
            continue  # its arguments are walked too
        if not isinstance(n, allowed):
            return False
    return True


def _pure_decorator(node: ast.expr) -> bool:
    """True for a decorator from PURE_DECORATORS, bare or called with constant arguments."""
    if isinstance(node, ast.Call):
        arguments = node.args + [k.value for k in node.keywords]
        return last_name(node.func) in PURE_DECORATORS and all(_constant(a) for a in arguments)
    return last_name(node) in PURE_DECORATORS
