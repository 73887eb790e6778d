"""The docs site's pages, cheaply (no build: the strict build is tests/test_docs_browser.py's
`docs_site` fixture): every page in mkdocs.yml's nav exists, every page under docs/ is in the nav,
and the README links every top-level page (and only pages that exist)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def nav_pages(nav: list) -> list[str]:
    """The page paths of an mkdocs nav (a list of {title: path or sub-nav} and bare paths), in order."""
    pages = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def readme_doc_links(text: str) -> set[str]:
    """The docs/*.md pages README.md links to, relative to docs/ (anchors dropped)."""
    return {m.group(1) for m in re.finditer(r"\]\(docs/([^)#\s]+\.md)(?:#[^)]*)?\)", text)}


@pytest.fixture(scope="module")
def nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return nav_pages(config["nav"])


def test_nav_pages_reads_nested_sections() -> None:
    nav = [{"Home": "index.md"}, {"Part": [{"A": "a/x.md"}, "b.md", {"Deeper": [{"C": "c.md"}]}]}]
    assert nav_pages(nav) == ["index.md", "a/x.md", "b.md", "c.md"]


def test_readme_doc_links_finds_page_links_only() -> None:
    text = "[a](docs/index.md) [b](docs/envs/jax.md#suites) ![img](docs/assets/x.png) [c](DESIGN.md)"
    assert readme_doc_links(text) == {"index.md", "envs/jax.md"}


def test_every_nav_page_exists_and_every_page_is_in_the_nav(nav: list[str]) -> None:
    assert len(nav) == len(set(nav)), f"pages listed twice in the nav: {sorted({p for p in nav if nav.count(p) > 1})}"
    missing = [page for page in nav if not (DOCS / page).is_file()]
    assert missing == [], f"in mkdocs.yml's nav but not in docs/: {missing}"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert sorted(on_disk - set(nav)) == [], "pages under docs/ that the nav leaves out"


def test_readme_links_every_top_level_page_and_only_real_ones(nav: list[str]) -> None:
    links = readme_doc_links((ROOT / "README.md").read_text())
    top_level = {page for page in nav if "/" not in page}
    assert sorted(top_level - links) == [], "top-level docs pages the README does not link"
    assert sorted(link for link in links if not (DOCS / link).is_file()) == [], "README links to missing docs pages"


def test_no_page_is_a_stub(nav: list[str]) -> None:
    stubs = [page for page in nav if "To be written" in (DOCS / page).read_text()]
    assert stubs == [], f"pages still to be written: {stubs}"
