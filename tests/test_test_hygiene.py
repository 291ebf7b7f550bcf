"""Tests that cannot pass vacuously: no test's every assertion sits inside a loop.

A test whose assertions all run inside a loop passes when the loop runs zero times: a test
asserting over the paper plan's B1 entries passes if the plan drops B1. The rule, read from
each test's syntax tree (exact, no judgement of how likely a collection is to be empty):

* An *assertion* is an `assert` statement, a `with pytest.raises / pytest.warns /
  pytest.deprecated_call` block, a call of `pytest.fail`, a call of a function whose name
  starts with `assert` that is not one of the tests' own helpers (numpy's, torch's, pandas'
  `assert_*`), or a call of one of the tests' own helpers (a function of the same module, a
  method of the same class, a function nested in the test, or a function imported from a
  module in tests/) that itself has an assertion outside every loop, by the same rule.
* It is *inside a loop* when a `for` loop, a `while` loop other than `while True`, or a
  comprehension encloses it, unless the loop iterates over a display with at least one
  element (a tuple, list, set or dict written out, possibly through `enumerate`) or a
  `range` of constants with at least one step: those provably run. A `for` loop's `else`
  runs whatever the loop did, so it is outside. `assert all(...)` and `assert not any(...)`
  hold for an empty collection, so they count as inside a loop unless their argument is
  such a display.
* A test passes the rule when it has no assertion at all (it checks that its code runs) or
  at least one assertion outside every loop (for example `assert items` before the loop,
  or a count of iterations after it). Branches (`if`, `try`) are not loops: the rule is about
  loops that may run zero times, not about every path.

Bodies of nested functions and lambdas run only when called: they count through the calls.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Tests in files being edited elsewhere that still assert only inside loops; each entry is
# fixed in its own file and then removed from here. A test here that no longer breaks the rule,
# or that no longer exists, fails `test_pending_list_is_current`, so the list only shrinks.
PENDING: dict[str, str] = {}

RAISES = {"raises", "warns", "deprecated_call"}


@dataclass
class Module:
    """A test module's top-level functions and classes, and the helpers it imports from tests/."""

    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, dict[str, ast.FunctionDef]] = field(default_factory=dict)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, name)
    modules: dict[str, str] = field(default_factory=dict)  # alias -> a tests/ module


def _tests_module(dotted: str | None) -> str | None:
    """The tests/ module an import names ('scorecards', 'tests.scorecards'), else None."""
    if not dotted:
        return None
    name = dotted.removeprefix("tests.")
    return name if "." not in name and (TESTS / f"{name}.py").exists() else None


_MODULES: dict[str, Module] = {}


def load(name: str) -> Module:
    """The tests/ module `name` (file stem), parsed once."""
    if name not in _MODULES:
        path = TESTS / f"{name}.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        module = Module(path, tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                module.classes[node.name] = {
                    n.name: n for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                source = _tests_module(node.module)
                for alias in node.names:
                    if source is not None:
                        module.imported[alias.asname or alias.name] = (source, alias.name)
                    elif _tests_module(f"{node.module}.{alias.name}") and node.module == "tests":
                        module.modules[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    source = _tests_module(alias.name)
                    if source is not None:
                        module.modules[alias.asname or alias.name.split(".")[0]] = source
        _MODULES[name] = module
    return _MODULES[name]


def _is_pytest(node: ast.expr, names: set[str]) -> bool:
    """`pytest.<one of names>`."""
    return (isinstance(node, ast.Attribute) and node.attr in names
            and isinstance(node.value, ast.Name) and node.value.id == "pytest")


def _provably_runs(iterable: ast.expr) -> bool:
    """True when iterating over `iterable` yields at least one item, read from its syntax."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
        return any(not isinstance(e, ast.Starred) for e in iterable.elts)
    if isinstance(iterable, ast.Dict):
        return any(k is not None for k in iterable.keys)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        if iterable.func.id == "enumerate" and iterable.args and not iterable.keywords:
            return _provably_runs(iterable.args[0])
        if iterable.func.id == "range" and not iterable.keywords:
            args = iterable.args
            if 1 <= len(args) <= 2 and all(isinstance(a, ast.Constant)
                                           and type(a.value) is int for a in args):
                start, stop = (0, args[0].value) if len(args) == 1 else (args[0].value,
                                                                         args[1].value)
                return stop > start
    return False


def _vacuous_on_empty(test: ast.expr) -> bool:
    """An assert condition that holds for an empty collection: all(...), not any(...)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_vacuous_on_empty(v) for v in test.values)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if negated else test
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == ("any" if negated else "all") and len(call.args) == 1):
        return False
    arg = call.args[0]
    if isinstance(arg, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        return not all(_provably_runs(g.iter) for g in arg.generators)
    return not _provably_runs(arg)


@dataclass
class Scope:
    """Where a function's calls resolve: its module, its class, the functions nested in it."""

    module: Module
    cls: str | None
    nested: dict[str, ast.FunctionDef]


class Asserts:
    """Which functions assert outside every loop, resolved through the tests' own helpers."""

    def __init__(self) -> None:
        self._memo: dict[tuple, bool] = {}

    def outside_and_inside(self, fn: ast.FunctionDef, scope: Scope) -> tuple[bool, bool]:
        """(has an assertion outside every loop, has one inside a loop) for `fn`'s body."""
        nested = dict(scope.nested)
        for node in ast.walk(fn):
            if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nested.setdefault(node.name, node)
        scope = Scope(scope.module, scope.cls, nested)
        found = {True: False, False: False}  # in a loop -> seen

        def visit(node: ast.AST, in_loop: bool) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
                return  # runs when called: counted through the call
            if isinstance(node, ast.Assert):
                found[in_loop or _vacuous_on_empty(node.test)] = True
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                if any(isinstance(i.context_expr, ast.Call)
                       and _is_pytest(i.context_expr.func, RAISES) for i in node.items):
                    found[in_loop] = True
            elif isinstance(node, ast.Call) and self._asserts(node.func, scope):
                found[in_loop] = True
            if isinstance(node, (ast.For, ast.AsyncFor)):
                visit(node.iter, in_loop)
                visit(node.target, in_loop)
                body_loop = in_loop or not _provably_runs(node.iter)
                for child in node.body:
                    visit(child, body_loop)
                for child in node.orelse:
                    visit(child, in_loop)
                return
            if isinstance(node, ast.While):
                visit(node.test, in_loop)
                always = isinstance(node.test, ast.Constant) and node.test.value is True
                for child in node.body:
                    visit(child, in_loop or not always)
                for child in node.orelse:
                    visit(child, in_loop)
                return
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                runs = all(_provably_runs(g.iter) for g in node.generators)
                for i, gen in enumerate(node.generators):
                    visit(gen.iter, in_loop if i == 0 else in_loop or not runs)
                    for cond in gen.ifs:
                        visit(cond, in_loop or not runs)
                parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                for part in parts:
                    visit(part, in_loop or not runs)
                return
            for child in ast.iter_child_nodes(node):
                visit(child, in_loop)

        for stmt in fn.body:
            visit(stmt, False)
        return found[False], found[True]

    def _asserts(self, func: ast.expr, scope: Scope) -> bool:
        """True when calling `func` asserts: pytest.fail, an outside assert_*, or a helper of
        the tests that asserts outside every loop."""
        if _is_pytest(func, {"fail"}):
            return True
        target = self._resolve(func, scope)
        if target is None:
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return name.startswith("assert")
        key, fn, fn_scope = target
        if key not in self._memo:
            self._memo[key] = False  # a recursive helper counts only through its other paths
            self._memo[key] = self.outside_and_inside(fn, fn_scope)[0]
        return self._memo[key]

    def _resolve(self, func: ast.expr, scope: Scope):
        """(memo key, definition, its scope) of a call of the tests' own code, else None."""
        module = scope.module
        if isinstance(func, ast.Name):
            if func.id in scope.nested:
                fn = scope.nested[func.id]
                return (module.path.name, scope.cls, "nested", id(fn)), fn, scope
            if func.id in module.functions:
                return (module.path.name, func.id), module.functions[func.id], \
                    Scope(module, None, {})
            if func.id in module.imported:
                source, name = module.imported[func.id]
                other = load(source)
                if name in other.functions:
                    return (other.path.name, name), other.functions[name], Scope(other, None, {})
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if owner == "self" and scope.cls is not None:
                methods = module.classes[scope.cls]
                if func.attr in methods:
                    return (module.path.name, scope.cls, func.attr), methods[func.attr], \
                        Scope(module, scope.cls, {})
            if owner in module.modules:
                other = load(module.modules[owner])
                if func.attr in other.functions:
                    return (other.path.name, func.attr), other.functions[func.attr], \
                        Scope(other, None, {})
        return None


def module_tests(module: Module):
    """(test id, definition, scope) of every test function and test method of `module`."""
    rel = module.path.relative_to(TESTS.parent).as_posix()
    for name, fn in module.functions.items():
        if name.startswith("test"):
            yield f"{rel}::{name}", fn, Scope(module, None, {})
    for cls, methods in module.classes.items():
        if cls.startswith("Test"):
            for name, fn in methods.items():
                if name.startswith("test"):
                    yield f"{rel}::{cls}::{name}", fn, Scope(module, cls, {})


def scan() -> tuple[int, dict[str, int]]:
    """How many tests were read, and every test whose assertions all sit inside loops (test id
    -> its first line)."""
    asserts = Asserts()
    read, out = 0, {}
    for path in sorted(TESTS.glob("test_*.py")):
        for test_id, fn, scope in module_tests(load(path.stem)):
            read += 1
            outside, inside = asserts.outside_and_inside(fn, scope)
            if inside and not outside:
                out[test_id] = fn.lineno
    return read, out


def test_no_test_asserts_only_inside_loops():
    read, found = scan()
    assert read > 100  # the scan read the suite (it holds hundreds of tests)
    new = {t: line for t, line in found.items() if t not in PENDING}
    assert not new, (
        "tests whose every assertion is inside a loop (they pass when the loop runs zero "
        "times): assert the collection is non-empty, or count the iterations, outside the "
        f"loop: {new}")


def test_pending_list_is_current():
    _, found = scan()
    stale = sorted(set(PENDING) - set(found))
    assert not stale, f"no longer loop-only (or gone): remove them from PENDING: {stale}"


# ------------------------------------------------------------------ the rule's own cases

def _verdict(source: str) -> tuple[bool, bool]:
    """(outside, inside) of the first function in `source`, helpers resolved within it."""
    tree = ast.parse(source)
    module = Module(TESTS / "case.py", tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            module.functions[node.name] = node
    first = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return Asserts().outside_and_inside(first, Scope(module, None, {}))


CASES = {
    "for x in xs:\n  assert x": (False, True),
    "assert xs\nfor x in xs:\n  assert x": (True, True),
    "for x in (1, 2):\n  assert x": (True, False),
    "for i, x in enumerate([1]):\n  assert x": (True, False),
    "for x in ():\n  assert x": (False, True),
    "for x in range(3):\n  assert x >= 0": (True, False),
    "for x in range(n):\n  assert x >= 0": (False, True),
    "for x in xs:\n  pass\nelse:\n  assert True": (True, False),
    "while cond():\n  assert x": (False, True),
    "while True:\n  assert x\n  break": (True, False),
    "assert all(x > 0 for x in xs)": (False, True),
    "assert not any(x for x in xs)": (False, True),
    "assert any(x for x in xs)": (True, False),
    "assert all(x > 0 for x in (1, 2))": (True, False),
    "assert all(xs) and xs": (True, False),
    "for x in xs:\n  with pytest.raises(ValueError):\n    f(x)": (False, True),
    "with pytest.raises(ValueError):\n  f()": (True, False),
    "for x in xs:\n  np.testing.assert_allclose(x, 1)": (False, True),
    "np.testing.assert_allclose(x, 1)": (True, False),
    "[check(x) for x in xs]": (False, True),
    "check(1)": (True, False),
    "quiet(1)": (False, False),
    "def inner():\n  assert x\nfor x in xs:\n  inner()": (False, True),
    "def inner():\n  assert x\ninner()": (True, False),
    "f = lambda: pytest.fail('x')": (False, False),
    "if bad:\n  pytest.fail('bad')": (True, False),
}
HELPERS = "\n\ndef check(x):\n    assert x\n\n\ndef quiet(x):\n    for y in x:\n        assert y\n"


def test_the_rule_on_its_cases():
    assert CASES
    for body, expected in CASES.items():
        source = "def t():\n" + "\n".join("    " + line for line in body.splitlines()) + HELPERS
        assert _verdict(source) == expected, body


def test_helpers_resolve_across_test_modules():
    """A helper imported from a module in tests/ counts by its body: scorecards.check_card
    asserts `rows` before its loop, rule_problems (which returns problems) asserts nothing."""
    module = load("scorecards")
    scope = Scope(module, None, {})
    assert Asserts().outside_and_inside(module.functions["check_card"], scope) == (True, True)
    assert Asserts().outside_and_inside(module.functions["rule_problems"], scope)[0] is False
    source = "from scorecards import check_card, rule_problems\n\n\ndef t():\n    check_card(x)\n"
    tree = ast.parse(source)
    case = Module(TESTS / "case.py", tree, functions={"t": tree.body[1]},
                  imported={"check_card": ("scorecards", "check_card"),
                            "rule_problems": ("scorecards", "rule_problems")})
    assert Asserts().outside_and_inside(tree.body[1], Scope(case, None, {})) == (True, False)
    tree.body[1].body[0].value.func.id = "rule_problems"
    assert Asserts().outside_and_inside(tree.body[1], Scope(case, None, {})) == (False, False)
