"""Every code block of README.md and docs/**/*.md runs, so the docs cannot rot: a page's ```python
blocks in order, in one fresh process from a scratch directory (as a reader pastes them one after
another), and the `python -m experiments.<x> ...` commands of its ```bash/```console blocks parse
with the entry point's own flags (not run: no training here). A block is left out only with
`<!-- docs-test: skip: <reason> -->` right above its fence; the skipped blocks are listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import JAX_CACHE, ROOT, child_env
from tests.support.doc_blocks import SKIP, Block, blocks, experiment_commands, python_blocks

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SUPPORT = ROOT / "tests" / "support"


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def run_python_blocks(page_name: str, page_blocks: list[Block], cwd: Path, timeout: float = 300
                      ) -> subprocess.CompletedProcess:
    """The blocks in order in one fresh process (tests/support/run_doc_page.py), cwd a scratch dir."""
    spec = cwd.parent / f"{cwd.name}-blocks.json"
    spec.write_text(json.dumps([{"line": b.line, "code": b.code} for b in page_blocks]))
    env = child_env(XLA_FLAGS="", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                    MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(SUPPORT / "run_doc_page.py"), page_name, str(spec)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def check_flags(commands: list[tuple[str, list[str]]]) -> list[str | None]:
    """Per command, None when its arguments parse with its entry point's flags, else absl's error."""
    if not commands:
        return []
    out = subprocess.run([sys.executable, str(SUPPORT / "check_flags.py")], input=json.dumps(commands), cwd=ROOT,
                         env=child_env(XLA_FLAGS=""), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def blocks_to_run(page: Path) -> list[Block]:
    return [b for b in python_blocks(page.read_text()) if b.skip is None]


def skipped_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page.read_text()) if b.skip is not None]


# ---------------------------------------------------------------- the runner itself, on a handmade page
HANDMADE = """# A page

```python
x = 41
```

Text between.

```python
x += 1
assert x == 42, x
```

<!-- docs-test: skip: shows an error on purpose -->
```python
raise RuntimeError("skipped, never run")
```

```python
open("reached.txt", "w").write("yes")
y = {"a": 1}["b"]
```

```python
open("after.txt", "w").write("must not run")
```

```bash
python -m experiments.ppo --env CartPole-v1 --total_env_steps 10_000   # a comment
python -m experiments.ppo --no_such_flag=1
python -m experiments.dqn --num_envs=-3 | tee out.txt
```
"""


def test_the_runner_catches_a_failing_block_and_names_its_line(tmp_path: Path) -> None:
    page = blocks(HANDMADE)
    assert [b.lang for b in page] == ["python", "python", "python", "python", "python", "bash"]
    assert [b.skip for b in page] == [None, None, "shows an error on purpose", None, None, None]
    to_run = [b for b in python_blocks(HANDMADE) if b.skip is None]
    failing = to_run[2]
    assert HANDMADE.splitlines()[failing.line - 1] == 'open("reached.txt", "w").write("yes")'
    work = tmp_path / "work"
    work.mkdir()
    out = run_python_blocks("handmade.md", to_run, work)
    assert out.returncode == 1
    # blocks share one namespace (the second saw the first's x), the failure names the page and its line
    assert f"FAILED handmade.md:{failing.line}" in out.stderr and "KeyError" in out.stderr, out.stderr
    assert f'File "handmade.md", line {failing.line + 1}' in out.stderr, out.stderr
    assert (work / "reached.txt").read_text() == "yes" and not (work / "after.txt").exists()
    assert "skipped, never run" not in out.stderr


def test_the_flag_check_catches_unknown_flags_and_bad_values() -> None:
    (shell,) = [b for b in blocks(HANDMADE) if b.lang == "bash"]
    commands = experiment_commands(shell)
    assert commands == [("experiments.ppo", ["--env", "CartPole-v1", "--total_env_steps", "10_000"]),
                        ("experiments.ppo", ["--no_such_flag=1"]), ("experiments.dqn", ["--num_envs=-3"])]
    ok, unknown, bad = check_flags(commands)
    assert ok is None
    assert unknown is not None and "no_such_flag" in unknown
    assert bad is not None and "num_envs" in bad


def test_commands_are_read_through_continuations_prompts_and_variables() -> None:
    shell = Block("console", '$ python -m experiments.impala --env Pong-v5 \\\n    --num_envs 8 && echo done\n'
                             'srun python -m experiments.ppo --distributed ${RUN:+--resume "$RUN"}\n'
                             'pip install -e ".[docs]"\n', 1, None)
    assert experiment_commands(shell) == [("experiments.impala", ["--env", "Pong-v5", "--num_envs", "8"]),
                                          ("experiments.ppo", ["--distributed", "${RUN:+--resume", "$RUN}"])]


# ---------------------------------------------------------------- the real pages
def test_every_skip_marker_sits_on_a_block_and_gives_a_reason() -> None:
    markers = sum(len(SKIP.findall(page.read_text())) for page in PAGES)
    listed = [(name(page), b.line, b.skip) for page in PAGES for b in skipped_blocks(page)]
    assert markers == len(listed), "a docs-test skip marker that is not right above a code block"
    assert all(reason and reason != "no reason given" for _, _, reason in listed), listed
    print(f"{len(listed)} code blocks skipped:", *(f"{p}:{line}: {why}" for p, line, why in listed), sep="\n  ")


# Pages whose blocks train (seconds on 2 quiet cores, measured 2026-11-28): the slow tier, longest first
# pages whose blocks take more than a few seconds (they train, or compile a loop): the slow tier
TRAINING_PAGES = {"README.md": 15, "docs/tutorials/writing-an-agent.md": 20, "docs/envs/jax.md": 6, "docs/loops.md": 6}


def page_param(page: Path):
    seconds = TRAINING_PAGES.get(name(page))
    return pytest.param(page, id=name(page), marks=[pytest.mark.slow(seconds=seconds)] if seconds else [])


@pytest.mark.parametrize("page", [page_param(p) for p in PAGES if blocks_to_run(p)])
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    out = run_python_blocks(name(page), blocks_to_run(page), tmp_path)
    assert out.returncode == 0, f"{name(page)}: a code block failed\n{out.stderr[-4000:]}"


@pytest.fixture(scope="module")
def flag_errors() -> dict[str, list[tuple[str, str]]]:
    """Per page, its entry-point commands whose flags do not parse (one process checks them all)."""
    commands = [(name(page), module, args) for page in PAGES for b in blocks(page.read_text()) if b.skip is None
                for module, args in experiment_commands(b)]
    errors = check_flags([(module, args) for _, module, args in commands])
    found: dict[str, list[tuple[str, str]]] = {}
    for (page, module, args), error in zip(commands, errors):
        if error is not None:
            found.setdefault(page, []).append((" ".join(["python -m", module, *args]), error))
    return found


@pytest.mark.parametrize("page", [p for p in PAGES if any(experiment_commands(b) for b in blocks(p.read_text()))],
                         ids=name)
def test_entry_point_commands_parse(page: Path, flag_errors: dict) -> None:
    assert flag_errors.get(name(page), []) == []
