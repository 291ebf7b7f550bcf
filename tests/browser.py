"""A browser check of the rendered book: every page opened in headless Chromium.

`check_book(html_dir)` loads each page with Chromium's `--dump-dom` (the DOM after load, scripts
run), optionally saving a 1400x900 screenshot in the same run, and returns one line per problem:
a page that fails to load or renders empty, a broken image or local link, a traceback, a stderr
output or a warning in a cell output, an absolute local path in the text or in a link.

Only the standard library, BeautifulSoup (installed with the book's theme) and the `chromium`
binary are used; `find_chromium()` says whether the binary is there.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import signal
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = (  # no network here: without these Chromium waits on connections
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)
WINDOW = "1400,900"
SKIP_NAMES = {"genindex.html", "search.html", "py-modindex.html"}  # Sphinx's generated pages
SKIP_DIRS = {"_static", "_sources"}
LOCAL_PREFIXES = ("/tmp/", "/root/", "/home/", "/work/")
TRACEBACK = "Traceback (most recent call last)"
REDIRECT = re.compile(r"""<meta\s+http-equiv=["']?refresh["']?\s+content=["']\s*\d+\s*;\s*"""
                      r"""url=([^"'>]+)""", re.IGNORECASE)
WARNING = re.compile(r"\b\w*Warning\b|\bWARNING\b|(?i:\bwarning:)")


def find_chromium() -> str | None:
    """$CHROMIUM if set, else /usr/bin/chromium, else chromium on PATH; None when there is none."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def check_book(html_dir: Path, screenshots: Path | None = None, *, workers: int = 2,
               timeout: float = 60.0) -> list[str]:
    """Open every page under `html_dir` in Chromium; return one 'page: problem' line per finding."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found (install the Debian package `chromium`, "
                                "or set $CHROMIUM to a Chromium/Chrome binary)")
    html_dir = Path(html_dir).resolve()
    pages = sorted(p for p in html_dir.rglob("*.html")
                   if p.name not in SKIP_NAMES
                   and not SKIP_DIRS & set(p.relative_to(html_dir).parts[:-1]))
    if screenshots is not None:
        Path(screenshots).mkdir(parents=True, exist_ok=True)

    def one(page: Path) -> list[str]:
        rel = page.relative_to(html_dir).as_posix()
        shot = None
        if screenshots is not None:
            shot = Path(screenshots) / (rel.removesuffix(".html").replace("/", "__") + ".png")
        problems = _check_page(chromium, page, html_dir, shot, timeout)
        return list(dict.fromkeys(f"{rel}: {p}" for p in problems))  # dedupe, keep order

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [line for lines in pool.map(one, pages) for line in lines]


def _load(chromium: str, page: Path, shot: Path | None, timeout: float) -> tuple[str | None, str]:
    """The DOM Chromium dumps after loading `page` (None on failure), and why it failed."""
    with tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True) as profile:
        args = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        if shot is not None:
            args += [f"--window-size={WINDOW}", f"--screenshot={shot}"]
        dom_file = Path(profile) / "dom.html"
        with open(dom_file, "wb") as out:  # a file, not a pipe: Chromium's children may linger
            proc = subprocess.Popen([*args, "--dump-dom", page.as_uri()], stdout=out,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                rc, why = proc.wait(timeout=timeout), ""
            except subprocess.TimeoutExpired:
                rc, why = None, f"timed out after {timeout:.0f} s"
            finally:
                try:  # the whole process group this call started, helpers included
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        dom = dom_file.read_text(encoding="utf-8", errors="replace")
    if rc is None:
        return None, why
    if rc != 0:
        return None, f"Chromium exited with status {rc}"
    if not dom.strip():
        return None, "Chromium returned no DOM"
    if 'id="main-frame-error"' in dom or "neterror" in dom[:2000]:
        return None, "Chromium showed its error page"
    return dom, ""


def _check_page(chromium: str, page: Path, html_dir: Path, shot: Path | None,
                timeout: float) -> list[str]:
    redirect = REDIRECT.search(page.read_text(encoding="utf-8", errors="replace")[:2000])
    if redirect:  # Sphinx's root index.html: Chromium leaves it at once, with no DOM to dump
        url = redirect.group(1).strip().strip("'\"")
        target = page.parent / unquote(urlsplit(url).path)
        return [] if target.is_file() else [f"redirect to a missing page: {url}"]
    dom, why = _load(chromium, page, shot, timeout)
    if dom is None:
        return [f"page failed to load ({why})"]
    problems = []
    if shot is not None and not shot.is_file():
        problems.append(f"no screenshot written to {shot}")
    soup = BeautifulSoup(dom, "html.parser")
    problems += _links(soup, page, html_dir)
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()  # not visible text
    body = soup.body or soup
    main = soup.select_one("article.bd-article") or soup.select_one("main, [role=main]") or body
    if not main.get_text(strip=True) and not main.find("img"):
        problems.append("renders empty (no text or image in the page body)")
    problems += _outputs(body)
    problems += [f"absolute local path in the text: {s}" for s in _local_paths(body)]
    return problems


def _links(soup: BeautifulSoup, page: Path, html_dir: Path) -> list[str]:
    """Broken images, broken local links and absolute local paths in href/src attributes."""
    problems, seen = [], set()
    for tag in soup.find_all(lambda t: t.has_attr("href") or t.has_attr("src")):
        for attr in ("href", "src"):
            url = (tag.get(attr) or "").strip()
            if (not url and not (tag.name == "img" and attr == "src")) or url in seen:
                continue
            seen.add(url)
            what = "image" if tag.name == "img" and attr == "src" else f"<{tag.name} {attr}>"
            if not url:
                problems.append("broken image: empty src")
                continue
            lower = url.lower()
            if lower.startswith("file:") or _local_path_in(url):
                problems.append(f"absolute local path in {what}: {url[:150]}")
                continue
            if lower.startswith("data:"):
                if tag.name == "img" and not _data_uri_payload(url):
                    problems.append(f"broken image: empty or undecodable data: URI ({url[:40]})")
                continue
            if url.startswith(("#", "//")) or re.match(r"[a-zA-Z][\w+.-]*:", url):
                continue  # anchors, http(s), mailto, javascript, ...
            path = unquote(urlsplit(url).path)
            if not path:  # only a query or a fragment
                continue
            target = (html_dir / path.lstrip("/")) if path.startswith("/") else page.parent / path
            if not target.exists():
                kind = "broken image" if what == "image" else f"broken local link in {what}"
                problems.append(f"{kind}: {url} (no file {_rel(target, html_dir)})")
            elif what == "image" and target.is_file() and target.stat().st_size == 0:
                problems.append(f"broken image: {url} (an empty file)")
    return problems


def _data_uri_payload(url: str) -> bytes:
    header, _, data = url.partition(",")
    if not header.lower().endswith(";base64"):
        return unquote(data).encode()
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _outputs(body) -> list[str]:
    """Tracebacks anywhere; warnings and stderr in cell outputs (MyST-NB: div.cell_output,
    and one div.output per output: `output stream`, `output stderr`, `output traceback`, ...)."""
    problems = []
    errors = body.find_all(class_=lambda c: c and ("traceback" in c or "ipythontb" in c))
    for tag in errors:
        if any(parent in errors for parent in tag.parents):
            continue
        problems.append(f"error output ({' '.join(tag['class'][:2])}): "
                        f"{_first_line(tag.get_text())}")
    text = body.get_text()
    if TRACEBACK in text and not problems:
        problems.append(f"traceback in the page: {_line_at(text, text.index(TRACEBACK))}")
    outputs = body.find_all(class_=["output", "cell_output"])
    for tag in outputs:
        if tag.find(class_="output"):  # a container: its outputs are looked at one by one
            continue
        out = tag.get_text()
        match = WARNING.search(out)
        if match:
            problems.append(f"warning in an output: {_line_at(out, match.start())}")
        elif "stderr" in tag.get("class", []) and out.strip():
            problems.append(f"stderr output: {_first_line(out)}")
    return problems


def _local_path_in(text: str) -> bool:
    return bool(_local_path_re().search(text))


def _local_paths(body) -> list[str]:
    """Absolute local paths in the visible text: in each text node, then in the text joined
    (a path can be split across syntax-highlighting spans), each path once."""
    pattern = _local_path_re()
    found: list[str] = []
    for text in [*body.find_all(string=True), body.get_text()]:
        for match in pattern.finditer(text):
            path = match.group().rstrip(".,;:!?)]}")
            if not any(path.startswith(f) or f.startswith(path) for f in found):
                found.append(path if len(path) <= 160 else path[:157] + "...")
    return found


def _local_path_re() -> re.Pattern:
    prefixes = [*LOCAL_PREFIXES, *([str(ROOT) + "/"] if len(ROOT.parts) > 1 else [])]
    # not inside a URL (https://host/work/...) or a relative path (data/tmp/...)
    return re.compile(r"(?:(?i:file://)|(?<![\w.:/-])(?:" + "|".join(map(re.escape, prefixes))
                      + r"))[^\s\"'<>`]*")


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = " ".join(text[start:end if end >= 0 else None].split())
    return line if len(line) <= 160 else line[:157] + "..."


def _first_line(text: str) -> str:
    text = text.strip()
    return _line_at(text, 0) if text else "(empty)"


def _rel(path: Path, html_dir: Path) -> str:
    try:
        return Path(os.path.normpath(path)).relative_to(html_dir).as_posix()
    except ValueError:
        return str(path)
