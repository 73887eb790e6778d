"""benchmarks/plot_docs.py draws the docs' benchmark figures from the repo's own benchmark outputs
(BENCHMARKS.md's tables, benchmarks/results/*_metrics.csv, run directories): each PNG is written,
non-empty and decodes; its parsers read what the tables hold."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

from benchmarks import plot_docs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_tables_and_numbers_are_parsed() -> None:
    text = "# A\n\n## Sec one\n\n| a | b |\n|---|--:|\n| x | 1,234 |\n| y | **5.5** |\n\n## Sec two\n\n| c |\n|---|\n| z |\n"
    (table,) = plot_docs.tables(plot_docs.section(text, "Sec one"))
    assert table == [{"a": "x", "b": "1,234"}, {"a": "y", "b": "**5.5**"}]
    assert [plot_docs.number(r["b"]) for r in table] == [1234.0, 5.5]
    assert math.isnan(plot_docs.number("—"))
    with pytest.raises(ValueError, match="no heading"):
        plot_docs.section(text, "Sec three")


def test_the_envpool_rows_come_from_benchmarks_md() -> None:
    (table, *_) = plot_docs.tables(plot_docs.section((ROOT / "BENCHMARKS.md").read_text(), "Env steps/s"))
    rows = [r for r in table if r["peer"] == "envpool"]
    assert rows and all(plot_docs.number(r["ours (steps/s)"]) > 0 for r in rows)


def test_the_script_writes_decodable_pngs_from_the_repo_files(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "impala-Pong-v5-x"
    run.mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "results" / "impala_pong_h100_metrics.csv", run / "metrics.csv")
    written = plot_docs.main(["--out", str(tmp_path / "assets"), "--runs", str(run)])
    assert [p.name for p in written] == ["bench-envpool.png", "bench-anakin-purejaxrl.png", "bench-off-policy.png",
                                         "bench-pong-learning.png", "bench-runs-learning.png"]
    for path in written:
        assert path.stat().st_size > 1000, path
        image = matplotlib.image.imread(path)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100, (path, image.shape)
        assert image.std() > 0, f"{path} is blank"


def test_the_benchmarks_page_tables_are_benchmarks_md_rows() -> None:
    """docs/benchmarks.md shows BENCHMARKS.md's tables: each of its table rows is one of that file's
    lines, so a re-run benchmark's new figures cannot leave the page telling the old ones."""
    record = set((ROOT / "BENCHMARKS.md").read_text().splitlines())
    rows = [line for line in (ROOT / "docs" / "benchmarks.md").read_text().splitlines() if line.startswith("|")]
    assert len(rows) > 50
    assert [row for row in rows if row not in record] == []
    for name in ("bench-envpool.png", "bench-anakin-purejaxrl.png", "bench-off-policy.png", "bench-pong-learning.png"):
        assert f"(assets/{name})" in (ROOT / "docs" / "benchmarks.md").read_text(), name
