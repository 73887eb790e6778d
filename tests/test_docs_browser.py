"""The docs site looked at in a real browser: built strictly, served on localhost, opened in headless Chromium.

The home page, a tutorial and an API page render with no console error and no failed request (nothing
loaded from the network), and every internal link of every built page resolves. The crawler and the
browser's problem collector are shown to catch what they look for on a small handmade site. Needs
Debian's chromium (.ci/run installs it); without it the browser tests skip and say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_site import broken_links, chromium, find_chromium, serve, visit

pytestmark = pytest.mark.xdist_group("docs_site")  # one worker builds the site (conftest) and starts the browser once


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the dev extra: pip install -e '.[dev]'")
    if find_chromium() is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")
    with chromium() as browser:
        yield browser


# A page that throws, logs an error, loads an image that is not there and one off localhost; a clean one;
# links, good and bad.
BAD_PAGE = """<!doctype html><html><head><title>bad</title></head><body><h1>Bad</h1>
<img src="missing.png" alt=""> <img src="https://cdn.example.org/y.png" alt="">
<script>console.error("logged on purpose"); throw new Error("thrown on purpose");</script>
</body></html>"""
GOOD_PAGE = """<!doctype html><html><head><title>good</title></head><body><h1 id="there">Good</h1>
<a href="bad.html">bad</a> <a href="#there">here</a> <a href="./">home</a> <a href="https://example.org/">away</a>
<a href="mailto:someone@example.org">mail</a>
</body></html>"""
LINKS_PAGE = """<!doctype html><html><head><link rel="stylesheet" href="https://cdn.example.org/x.css"></head><body>
<a href="good.html#there">fine</a> <a href="good.html#gone">no anchor</a> <a href="missing/">no page</a>
<a href="/sub/">folder with an index</a> <a href="http://localhost:8000/nowhere.html">localhost</a>
</body></html>"""


@pytest.fixture
def handmade(tmp_path: Path) -> Path:
    (tmp_path / "bad.html").write_text(BAD_PAGE)
    (tmp_path / "good.html").write_text(GOOD_PAGE)
    (tmp_path / "index.html").write_text(LINKS_PAGE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>sub</p>")
    return tmp_path


def test_crawler_reports_each_broken_link_and_nothing_else(handmade: Path) -> None:
    assert broken_links(handmade) == [
        "bad.html: broken resource missing.png (no missing.png)",
        "bad.html: loads from the network: https://cdn.example.org/y.png",
        "index.html: broken anchor good.html#gone (no id 'gone' in good.html)",
        "index.html: broken link missing/ (no missing/index.html)",
        "index.html: broken link http://localhost:8000/nowhere.html (no nowhere.html)",
        "index.html: loads from the network: https://cdn.example.org/x.css",
    ]


def test_collector_reports_console_errors_exceptions_and_failed_requests(browser, handmade: Path) -> None:
    with serve(handmade) as base:
        good = visit(browser, base + "good.html")
        bad = visit(browser, base + "bad.html")
    assert good.heading == "Good" and good.problems == []
    assert any("thrown on purpose" in p and p.startswith("uncaught exception") for p in bad.problems), bad.problems
    assert any("logged on purpose" in p and p.startswith("console error") for p in bad.problems), bad.problems
    assert f"HTTP 404: {base}missing.png" in bad.problems, bad.problems
    assert "loads from the network: https://cdn.example.org/y.png" in bad.problems, bad.problems  # and aborted


def test_every_internal_link_resolves(docs_site: Path) -> None:
    problems = broken_links(docs_site)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", ["", "tutorials/writing-an-agent/", "api/agent/"])
def test_page_renders_cleanly(browser, docs_site: Path, path: str) -> None:
    with serve(docs_site) as base:
        page = visit(browser, base + path)
    name = path or "index"
    assert page.problems == [], f"{name}:\n" + "\n".join(page.problems)
    assert page.heading and page.heading.strip(), f"{name}: no main heading (h1)"
    if path.startswith("api/"):
        assert page.doc_objects > 0, f"{name}: no mkdocstrings object rendered"
