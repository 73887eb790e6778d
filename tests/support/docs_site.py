"""The docs site as a reader gets it: built by mkdocs, served on localhost, opened in headless Chromium.

Shared by tests/test_docs_browser.py and benchmarks/docs_screenshot.py. The browser is Debian's
`chromium` (`apt-get install chromium`; .ci/run installs it), driven by Playwright, which cannot
download a browser of its own here. The site must load nothing from the network, so a request off
localhost is aborted and reported, like a console error or a failed request.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ROOT = Path(__file__).resolve().parents[2]
LOCAL_HOSTS = ("127.0.0.1", "localhost")
# Headless as root in a sandbox-less container; no background traffic (the closed network refuses it and
# Chromium logs errors), no GPU.
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)
VIEWPORT = {"width": 1280, "height": 800}


def build_site(dest: Path) -> Path:
    """Build the site with `mkdocs build --strict` into dest (a warning fails the build); return dest."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
           "-d", str(dest)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"mkdocs build --strict failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return dest


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass  # a 404 reaches the test through the browser, not stderr


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve directory on a free localhost port in a thread; yield its base URL (ending in '/')."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def find_chromium() -> str | None:
    """Debian's Chromium (`/usr/bin/chromium`), or None where it is not installed."""
    return shutil.which("chromium")


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Debian Chromium under Playwright; RuntimeError where Chromium is not installed."""
    from playwright.sync_api import sync_playwright

    path = find_chromium()
    if path is None:
        raise RuntimeError("Debian's chromium is not installed: apt-get install chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS), timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Visit:
    """What a reader's browser made of one page."""

    heading: str | None  # the first h1's text as rendered (None: no h1)
    doc_objects: int  # mkdocstrings objects rendered (`div.doc-object`: a class, a function, ...)
    problems: list[str]  # console errors, uncaught exceptions, failed or 4xx/5xx requests, requests off localhost


def visit(browser: Browser, url: str, screenshot: Path | None = None) -> Visit:
    """Open url in a fresh page, wait until the network is idle, and report; screenshot: save a PNG there."""
    page = browser.new_page(viewport=VIEWPORT)
    problems: list[str] = []

    def on_console(message) -> None:
        if message.type == "error":
            problems.append(f"console error: {message.text} (at {message.location.get('url')})")

    def on_request(route) -> None:
        problems.append(f"loads from the network: {route.request.url}")
        route.abort()

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(f"uncaught exception: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url} ({request.failure})"))
    page.on("response", lambda response: problems.append(f"HTTP {response.status}: {response.url}")
            if response.status >= 400 else None)
    page.route(lambda u: urllib.parse.urlsplit(u).hostname not in LOCAL_HOSTS, on_request)
    try:
        page.goto(url, wait_until="networkidle", timeout=60_000)
        heading = page.locator("h1").first.text_content() if page.locator("h1").count() else None
        result = Visit(heading=heading, doc_objects=page.locator("div.doc-object").count(), problems=list(problems))
        if screenshot is not None:
            page.screenshot(path=str(screenshot))
        return result
    finally:
        page.close()


class _Page(HTMLParser):
    """A built page's ids and the URLs it points at: links (a, area) and loaded resources."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if a.get(name):
                self.ids.add(a[name])
        if tag in ("a", "area") and a.get("href"):
            self.links.append(a["href"])
        elif tag == "link" and a.get("href"):
            self.resources.append(a["href"])
        elif tag in ("script", "img", "iframe", "source", "audio", "video", "embed") and a.get("src"):
            self.resources.append(a["src"])


def broken_links(site: Path) -> list[str]:
    """Every internal link or resource of the built site that does not resolve, and every resource off localhost.

    Internal: relative, site-absolute, or to localhost; it resolves when its file exists (a folder means its
    index.html) and its #fragment, if any, names an element id (or <a name>) in that file. A link to another
    host is left alone (not this site's to keep); a resource (stylesheet, script, image) there is a problem:
    the site must load nothing from the network.
    """
    pages: dict[Path, _Page] = {}

    def parsed(path: Path) -> _Page:
        if path not in pages:
            pages[path] = _Page()
            pages[path].feed(path.read_text(encoding="utf-8"))
        return pages[path]

    problems = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        page = parsed(html)
        for kind, refs in (("link", page.links), ("resource", page.resources)):
            for ref in refs:
                url = urllib.parse.urlsplit(urllib.parse.urljoin(f"http://localhost/{rel}", ref))
                if url.scheme not in ("http", "https"):
                    continue  # mailto:, data:, javascript:
                if url.hostname not in LOCAL_HOSTS:
                    if kind == "resource":
                        problems.append(f"{rel}: loads from the network: {ref}")
                    continue
                path = urllib.parse.unquote(url.path)
                target = site / path.lstrip("/")
                if path.endswith("/") or target.is_dir():
                    target = target / "index.html"
                name = target.relative_to(site).as_posix()
                if not target.is_file():
                    problems.append(f"{rel}: broken {kind} {ref} (no {name})")
                elif url.fragment and target.suffix == ".html":
                    if urllib.parse.unquote(url.fragment) not in parsed(target).ids:
                        problems.append(f"{rel}: broken anchor {ref} (no id {url.fragment!r} in {name})")
    return problems
