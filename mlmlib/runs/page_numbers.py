"""Measured numbers on the book's pages: rendered from run records at build time, and checked.

A chapter never types a number that a run measured. It writes a MyST substitution,
`{{ b1_disc_replaced }}`, and the registry (mlmlib.page_quantities; each paper declares its
chapter's quantities in its own package, `page_quantities.py`, loaded here by `load_declarations`;
the run report's are in mlmlib.runs.quantities) says what that name is: the profile and
notebook whose records it reads, the record field, one line of description, and a function from
those records (`load_records`, one row per run) to the text on the page. `write_book_config`
renders every quantity into `parse.myst_substitutions` of a generated copy of `_config.yml`
(book/_generated/_config.yml), which `build_book` hands to jupyter-book with `--config`. A
quantity whose records are missing renders as "not measured (no <profile> records)", or
"not measured (no <profile> records of <field>)" when the records lack the field: the build
goes on, and no stale number stands in.

The check (`page_problems`, run by tests/test_page_numbers.py on every book/*.md):

* What is checked is the page's prose: everything outside the YAML front matter, fenced blocks
  (``` and ~~~: code, and directives such as {include}), HTML comments, math ($...$, $$...$$),
  inline code and roles ({cite}`...`, {doc}`...`), substitutions ({{ ... }}), link targets
  ([text](target), <scheme://...>, reference definitions) and directive option lines (:key: ...).
* A number there is a decimal (0.809, .5, 3.25, 5e-5: a decimal point or an exponent), a
  percentage (55%, 0.5 %) or a number after "±" (±0.01, ±2). A number glued to letters is part
  of a name (v1.1, 6B, all-MiniLM-L6-v2) and is not one. Its sign is not part of it.
* Every such number must come from a substitution, or be declared in the page's front matter as
  a literal, with its kind, `parameter` (a setting or threshold of the plan, code or papers'
  recipes) or `paper` (a number a paper reports), and its source:

      literals:
        "0.01": parameter, B3's equivalence margin delta
        "80.4": paper, ELECTRA-Small-OWT GLUE dev (Table 1 of paper B)

  A declaration covers the literal wherever it stands on that page ("0.02" also covers
  "±0.02"); a declared literal that the prose does not use is a problem too.
* Integers (counts of seeds, layers, steps, tokens) are outside the rule: they are mostly
  design, not measurement. Measured counts that matter are rendered all the same.
* A page whose front matter says `numbers: historical` (the design history) is exempt; it says
  at its top that its numbers are quoted from the records of their commits.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pandas as pd
import yaml

from mlmlib import code_digest
from mlmlib.page_quantities import QUANTITIES, Quantity, not_measured, render  # noqa: F401 - the API
from mlmlib.paths import project_root
from mlmlib.runs import quantities  # noqa: F401 - registers the run report's quantities
from mlmlib.runs.records import load_records

DECLARATIONS = "page_quantities"  # the module of a paper package that declares its page numbers


def load_declarations() -> list[str]:
    """Import every paper package's `page_quantities` module (each registers its quantities on
    import) and return their names. The runs package names no paper: it finds them by folder.
    The declarations are torch-free (tests/test_page_numbers.py holds them to it)."""
    loaded = []
    for paper in code_digest.papers():
        if (code_digest.PAPERS_DIR / paper / f"{DECLARATIONS}.py").exists():
            name = f"mlmlib.papers.{paper}.{DECLARATIONS}"
            importlib.import_module(name)
            loaded.append(name)
    return loaded


load_declarations()


def render_all(root: Path | None = None) -> dict[str, str]:
    """Every registered quantity's text, each from the records of its own profile."""
    tables: dict[str, pd.DataFrame] = {}
    for q in QUANTITIES.values():
        if q.profile not in tables:
            tables[q.profile] = load_records(q.profile, root=root)
    return {name: render(q, tables[q.profile]) for name, q in QUANTITIES.items()}


def write_book_config(root: Path | None = None, out: Path | None = None) -> Path:
    """Write a copy of _config.yml with every quantity as a MyST substitution; return its path."""
    root = root or project_root()
    config = yaml.safe_load((root / "_config.yml").read_text())
    parse = config.setdefault("parse", {})
    extensions = list(parse.get("myst_enable_extensions") or [])
    if "substitution" not in extensions:
        extensions.append("substitution")
    parse["myst_enable_extensions"] = extensions
    parse["myst_substitutions"] = render_all(root)
    out = out or root / "book" / "_generated" / "_config.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return out


# ----------------------------------------------------------------------------------------------
# The check of a page's prose

KINDS = ("parameter", "paper")
HISTORICAL = "historical"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---[ \t]*\n", re.DOTALL)
_NOT_PROSE = [
    re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL),  # fenced blocks
    re.compile(r"<!--.*?-->", re.DOTALL),  # HTML comments
    re.compile(r"\$\$.*?\$\$", re.DOTALL),  # display math
    re.compile(r"\$[^$\n]+\$"),  # inline math
    re.compile(r"``.+?``|`[^`\n]*`"),  # inline code and the content of roles
    re.compile(r"\{\{.*?\}\}", re.DOTALL),  # substitutions
    re.compile(r"\]\([^)\n]*\)"),  # link targets
    re.compile(r"<[a-zA-Z][\w+.-]*:[^>\n]*>"),  # autolinks
    re.compile(r"^[ \t]*\[[^\]\n]+\]:.*$", re.MULTILINE),  # reference definitions
    re.compile(r"^[ \t]*:[\w-]+:.*$", re.MULTILINE),  # directive options
]
_NUMBER = re.compile(r"""
    (?<![\w.±])                                   # not glued to a name or another number
    (?P<pm>±[ \t]*)?
    (?P<num>(?:\d+(?:,\d{3})*)?\.\d+(?:e[-+]?\d+)?  # decimal: 0.809, .5, 3.25, 1.5e-3
          |\d+(?:,\d{3})*(?:e[-+]?\d+)?)          # integer, or one with an exponent: 5e-5
    (?P<pct>[ \t]*%)?
    (?![\w.]*\w)                                  # not followed by letters (6B, 50d)
""", re.VERBOSE)
_SUBSTITUTION = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")


def front_matter(text: str) -> dict:
    """The page's YAML front matter ({} when it has none)."""
    match = _FRONT_MATTER.match(text)
    return (yaml.safe_load(match.group(1)) or {}) if match else {}


def _blank(match: re.Match) -> str:
    """The matched text as spaces, its line breaks kept."""
    return re.sub(r"[^\n]", " ", match.group())


def prose(text: str) -> str:
    """The page with everything but prose blanked out (line numbers kept)."""
    text = _FRONT_MATTER.sub(_blank, text, count=1)
    for pattern in _NOT_PROSE:
        text = pattern.sub(_blank, text)
    return text


def numbers(text: str) -> list[tuple[int, str]]:
    """(line, literal) of every number the rule covers in the prose of a page."""
    out = []
    for match in _NUMBER.finditer(prose(text)):
        literal = re.sub(r"\s", "", match.group())
        if match.group("pm") or match.group("pct") or re.search(r"[.e]", match.group("num")):
            out.append((text.count("\n", 0, match.start()) + 1, literal))
    return out


def substitutions(text: str) -> list[str]:
    """The names of the substitutions a page uses."""
    return _SUBSTITUTION.findall(text)


def page_problems(text: str) -> list[str]:
    """What breaks the rule on one page: undeclared numbers, bad or unused declarations."""
    meta = front_matter(text)
    if meta.get("numbers") == HISTORICAL:
        return []
    literals = meta.get("literals") or {}
    problems = [f"literal {k!r}: quote it, as it is written on the page" for k in literals
                if not isinstance(k, str)]
    declared = {str(k): str(v) for k, v in literals.items()}
    for literal, value in declared.items():
        kind, _, source = value.partition(",")
        if kind.strip() not in KINDS or not source.strip():
            problems.append(f"literal {literal!r}: declare it as '<{'|'.join(KINDS)}>, <source>'")
    used = set()
    for line, literal in numbers(text):
        key = literal if literal in declared else literal.lstrip("±")
        if key in declared:
            used.add(key)
        else:
            problems.append(f"line {line}: {literal} is neither rendered from a record nor "
                            "declared as a literal")
    problems += [f"literal {literal!r} is declared but not used" for literal in declared
                 if literal not in used]
    return problems
