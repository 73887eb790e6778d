"""A screenshot of the docs site's home page, as headless Chromium shows it: docs/assets/screenshot-home.png.

Run from the repository root after the docs change (needs the dev extra and Debian's chromium):

    python benchmarks/docs_screenshot.py
    python benchmarks/docs_screenshot.py --out /tmp/home.png

Builds the site (`mkdocs build --strict`) into a temporary folder, serves it on localhost and saves the
first 1280x800 pixels of the home page; a page with a console error or a failed request is refused,
not pictured. The same code as tests/test_docs_browser.py (tests/support/docs_site.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from tests.support.docs_site import ROOT, build_site, chromium, serve, visit

DEFAULT_OUT = ROOT / "docs" / "assets" / "screenshot-home.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = DEFAULT_OUT.relative_to(ROOT)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the PNG to write (default {default})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp) / "site")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with serve(site) as base, chromium() as browser:
            home = visit(browser, base, screenshot=args.out)
    if home.problems:
        args.out.unlink()
        sys.exit("the home page has problems, no screenshot kept:\n" + "\n".join(home.problems))
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
