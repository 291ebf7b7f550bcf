"""check_book on a small hand-made HTML folder: a clean page gives nothing, each broken page is
named with its problem. Chromium loads the pages (their DOM after scripts ran), so these tests
skip when it is missing (`make test` installs it where it can); the last one, with a stand-in
browser that hangs or fails, always runs."""

from __future__ import annotations

import base64
import struct

import pytest
from browser import check_book, find_chromium  # pytest puts tests/ on sys.path

needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="no Chromium: install the Debian package `chromium` (make test does, as root) "
           "or set $CHROMIUM; the browser check of the book needs it")

# a 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIA"
                       "X8jx0gAAAABJRU5ErkJggg==")
PNG64 = base64.b64encode(PNG).decode()


def page(body: str, title: str = "page") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body><main>{body}</main></body></html>")


def output(text: str, kind: str = "stream") -> str:
    """A cell output as MyST-NB (Jupyter Book 1) writes it."""
    return (f'<div class="cell_output docutils container"><div class="output {kind} '
            f'highlight-myst-ansi notranslate"><div class="highlight"><pre><span></span>{text}'
            f"</pre></div></div></div>")


PAGES = {
    "clean.html": page(
        "<h1>Clean</h1><p>A page with <a href='sub/other.html#part'>a link</a>, "
        "<a href='#top'>an anchor</a>, <a href='https://example.org/work/x'>a web link</a>, "
        "<a href='mailto:a@example.org'>mail</a>, see https://example.org/tmp/x and data/tmp/x.</p>"
        f"<img src='_images/fig.png'><img src='data:image/png;base64,{PNG64}'>"
        + output("epoch 1: loss 0.52")),
    "sub/other.html": page("<p>Another clean page, <a href='../clean.html'>back</a>.</p>"),
    "broken_image.html": page("<p>A figure:</p><img src='_images/missing.png'>"),
    "empty_data_image.html": page("<p>A figure:</p><img src='data:image/png;base64,'>"),
    "broken_link.html": page("<p>See <a href='chapters/nowhere.html#x'>the chapter</a>.</p>"),
    "traceback.html": page(output(
        "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom",
        kind="traceback highlight-ipythontb")),
    "scripted_traceback.html": page(  # only in the DOM after its script ran
        "<p id='p'>fine</p><script>document.getElementById('p').textContent = "
        "'Traceback (most recent call last): ' + 'KeyError';</script>"),
    "abspath.html": page("<p>Saved to /work/x/run.</p>"),
    "abspath_link.html": page("<p><a href='file:///home/me/report.html'>report</a></p>"),
    "warning.html": page(output("/x/y.py:3: UserWarning: Data has no positive values",
                                kind="stderr")),
    "stderr.html": page(output("some message on stderr", kind="stderr")),
    "empty.html": "<!DOCTYPE html><html><head><title>empty</title></head><body></body></html>",
    # Sphinx's root index.html is a redirect: its target is checked, not the page
    "redirect.html": '<meta http-equiv="Refresh" content="0; url=sub/other.html" />',
    "bad_redirect.html": '<meta http-equiv="Refresh" content="0; url=book/intro.html" />',
    # Sphinx's own pages and folders are not checked
    "genindex.html": page("<img src='nothing.png'>"),
    "search.html": page("Traceback (most recent call last)"),
    "_static/x.html": page("<a href='nowhere.html'>x</a>"),
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "_images").mkdir()
    (root / "_images" / "fig.png").write_bytes(PNG)
    shots = tmp_path_factory.mktemp("shots")
    return check_book(root, screenshots=shots), shots


def on(problems: list[str], name: str) -> list[str]:
    return [p for p in problems if p.startswith(f"{name}: ")]


@needs_chromium
def test_clean_pages_give_nothing(checked):
    problems, _ = checked
    assert on(problems, "clean.html") == []
    assert on(problems, "sub/other.html") == []
    assert on(problems, "redirect.html") == []


@needs_chromium
@pytest.mark.parametrize("name, expected", [
    ("broken_image.html", "broken image: _images/missing.png"),
    ("empty_data_image.html", "broken image: empty or undecodable data: URI"),
    ("broken_link.html", "broken local link in <a href>: chapters/nowhere.html#x"),
    ("traceback.html", "error output (output traceback)"),
    ("scripted_traceback.html", "traceback in the page: Traceback (most recent call last)"),
    ("abspath.html", "absolute local path in the text: /work/x/run"),
    ("abspath_link.html", "absolute local path in <a href>: file:///home/me/report.html"),
    ("warning.html", "warning in an output: /x/y.py:3: UserWarning"),
    ("stderr.html", "stderr output: some message on stderr"),
    ("empty.html", "renders empty"),
    ("bad_redirect.html", "redirect to a missing page: book/intro.html"),
])
def test_each_problem_is_found_on_its_page(checked, name, expected):
    problems, _ = checked
    found = on(problems, name)
    assert any(p.startswith(f"{name}: {expected}") for p in found), (expected, found)
    assert len(found) == 1, found  # nothing else on these pages


@needs_chromium
def test_sphinx_pages_are_skipped_and_every_page_has_a_screenshot(checked):
    problems, shots = checked
    assert not [p for p in problems if p.startswith(("genindex", "search", "_static"))]
    pages = [n for n in PAGES if n not in ("genindex.html", "search.html", "_static/x.html")]
    assert len(problems) == len(pages) - 3  # one finding on each page but the three clean ones
    for name in pages:
        if "redirect" in name:
            continue
        png = shots / (name.removesuffix(".html").replace("/", "__") + ".png")
        head = png.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", name
        assert struct.unpack(">II", head[16:24]) == (1400, 900), name


@pytest.mark.parametrize("script, expected", [
    ("exec sleep 30", "page failed to load (timed out after 1 s)"),
    ("exit 3", "page failed to load (Chromium exited with status 3)"),
    ("exit 0", "page failed to load (Chromium returned no DOM)"),
])
def test_a_browser_that_hangs_or_fails_is_reported(tmp_path, monkeypatch, script, expected):
    fake = tmp_path / "chromium"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CHROMIUM", str(fake))
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "a.html").write_text(page("<p>text</p>"))
    assert check_book(tmp_path / "html", timeout=1) == [f"a.html: {expected}"]
