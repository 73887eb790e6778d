"""The benchmark suite runner (issue 55): the aggregate statistics against hand computations and a
plain loop, and the runner on a tiny suite of real CLI runs: it runs its cells, never reruns a
finished one, resumes an interrupted one from its checkpoint, and reports what the statistics
say."""

import csv
import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.stats

from benchmarks import aggregate, suite as runner
from benchmarks.peers import cleanrl_cell
from benchmarks.suites import SUITES, Agent, Suite, Task, agent
from tests.support.cli import JAX_CACHE, ROOT, child_env


# ---------------------------------------------------------------- the statistics
def test_normalised_scores_put_random_at_0_and_the_reference_at_1():
    got = aggregate.normalise(np.array([[20.0, -300.0], [475.0, -100.0]]), [20.0, -500.0], [475.0, -100.0])
    np.testing.assert_allclose(got, [[0.0, 0.5], [1.0, 1.0]])
    with pytest.raises(ValueError, match="reference equals its random score"):
        aggregate.normalise(np.ones((2, 1)), [1.0], [1.0])


def test_the_aggregates_by_hand():
    scores = np.arange(8.0).reshape(2, 4)  # 0..7: the IQM drops 0, 1 and 6, 7
    assert aggregate.iqm(scores) == 3.5 == scipy.stats.trim_mean(scores, 0.25, axis=None)
    assert aggregate.iqm(np.array([[1.0, 2.0, 100.0]])) == pytest.approx(np.mean([1.0, 2.0, 100.0]))  # 3 // 4 = 0
    est = aggregate.interval_estimates({"a": scores}, reps=100)["a"]
    assert (est["IQM"].value, est["median"].value, est["mean"].value) == (3.5, 3.5, 3.5)
    one_run = aggregate.interval_estimates({"a": np.array([[0.2, 0.4, 0.9]])}, reps=50)["a"]
    for metric, want in (("IQM", 0.5), ("median", 0.4), ("mean", 0.5)):  # one run per task: nothing to resample
        assert one_run[metric] == pytest.approx((want, want, want))
    assert aggregate.performance_profile({"a": scores / 7}, [0.0, 0.5, 1.0])["a"].tolist() == [7 / 8, 4 / 8, 0.0]


def test_the_bootstrap_intervals_equal_a_plain_loop_over_the_same_draws():
    """Each resample draws every task's runs with replacement from that task's own (stratified);
    the interval is the 2.5th and 97.5th percentiles of the aggregate over the resamples."""
    rng = np.random.default_rng(7)
    scores = {"a": rng.normal(size=(5, 3)), "b": rng.normal(1.0, 2.0, size=(5, 3))}
    reps, seed = 300, 4
    got = aggregate.interval_estimates(scores, reps=reps, seed=seed)
    for i, (name, s) in enumerate(scores.items()):
        rows = np.random.default_rng([seed, i]).integers(0, 5, size=(reps, 5, 3))
        values = {"IQM": [], "median": [], "mean": []}
        for r in range(reps):
            sample = np.array([[s[rows[r, n, m], m] for m in range(3)] for n in range(5)])
            values["IQM"].append(scipy.stats.trim_mean(sample, 0.25, axis=None))
            values["median"].append(np.median(sample))
            values["mean"].append(sample.mean())
        for metric, v in values.items():
            low, high = np.percentile(v, [2.5, 97.5])
            assert got[name][metric].low == pytest.approx(low) and got[name][metric].high == pytest.approx(high)
            assert got[name][metric].low <= got[name][metric].value <= got[name][metric].high
    with pytest.raises(ValueError, match="a: scores must be a finite"):
        aggregate.interval_estimates({"a": np.array([[np.nan]])})


def test_every_declared_suite_is_a_grid_of_known_entry_points():
    import importlib.util

    for s in SUITES.values():
        cells = s.cells()
        assert len({c.key for c in cells}) == len(cells) == sum(len(t.agents) for t in s.tasks) * len(s.seeds)
        for c in cells:
            assert importlib.util.find_spec(c.agent.module) is not None, c.agent.module
            assert c.task.source and np.isfinite(c.task.reference)


def test_the_command_line_refuses_bad_input_in_one_line():
    for argv, message in ((["nope"], "name a suite: classic"), (["memory", "--jobs", "0"], "--jobs and --reps"),
                          (["memory", "--seeds", "a"], "--seeds: comma-separated integers"),
                          (["minatar", "--agents", "ppo,sac"], "--agents: sac not in suite minatar's agents"),
                          (["atari5", "--envs", "Qbert-v5,Pong-v5"], "--envs: Pong-v5 not in suite atari5's tasks")):
        out = subprocess.run([sys.executable, "-m", "benchmarks.suite", *argv], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


# ---------------------------------------------------------------- peers in a suite
def _record(agent_label: str, env: str, seed: int, ret: float) -> dict:
    return {"agent": agent_label, "env": env, "seed": seed, "return": ret}


RANDOM = {"CartPole-v1": 20.0}


def test_an_agent_is_held_against_its_peers_median_only_once_both_have_every_seed():
    peer = Agent("peer-ppo", "experiments.ppo", peer_of="ppo")
    task = Task("CartPole-v1", (agent("ppo"), peer), 475.0, "a test")
    s = Suite("paired", "ours beside a peer", tasks=(task,), seeds=(0, 1, 2), budget=1000, peer_target=0.9)
    cells = {(c.agent.label, c.seed): c for c in s.cells()}
    results = {cells["ppo", i].key: _record("ppo", task.env, i, r) for i, r in enumerate((100.0, 300.0, 200.0))}
    results |= {cells["peer-ppo", i].key: _record("peer-ppo", task.env, i, r) for i, r in enumerate((100.0, 250.0))}
    lines = runner.peer_lines(s, results, s.seeds, RANDOM)
    # medians 200 and 175 (the two seeds it has): 1.14x, pending the peer's third seed
    assert lines[-1] == "| CartPole-v1 | ppo | 200.0 (3) | peer-ppo | 175.0 (2) | 1.14x | >= 0.90x | pending |"
    results[cells["peer-ppo", 2].key] = _record("peer-ppo", task.env, 2, 400.0)  # median 250: 200 / 250 = 0.8
    assert runner.peer_lines(s, results, s.seeds, RANDOM)[-1] == \
        "| CartPole-v1 | ppo | 200.0 (3) | peer-ppo | 250.0 (3) | 0.80x | >= 0.90x | missed (0.80 of 0.90) |"
    results[cells["ppo", 0].key] = _record("ppo", task.env, 0, 250.0)  # ours 250, 300, 200: median 250, 1.00x
    assert runner.peer_lines(s, results, s.seeds, RANDOM)[-1].endswith("| 1.00x | >= 0.90x | yes |")
    assert runner.peer_lines(s, {}, s.seeds, RANDOM) == []  # nothing finished: no table
    with pytest.raises(ValueError, match="peer-sac on CartPole-v1 is the peer of sac, which does not run there"):
        Suite("bad", "a peer alone", tasks=(Task("CartPole-v1", (agent("ppo"), Agent("peer-sac", "m", peer_of="sac")),
                                                  475.0, "a test"),), seeds=(0,))


def test_where_the_peers_return_is_below_zero_the_ratio_is_of_gains_over_random():
    peer = Agent("peer-ppo", "experiments.ppo", peer_of="ppo")
    task = Task("Ant-v5", (agent("ppo"), peer), 6000.0, "a test")
    s = Suite("paired", "ours beside a peer", tasks=(task,), seeds=(0,), budget=1000, peer_target=0.9)
    cells = {c.agent.label: c for c in s.cells()}

    def lines(mine: float, theirs: float, random: float) -> list[str]:
        results = {cells["ppo"].key: _record("ppo", task.env, 0, mine),
                   cells["peer-ppo"].key: _record("peer-ppo", task.env, 0, theirs)}
        return runner.peer_lines(s, results, s.seeds, {"Ant-v5": random})

    # above zero: returns as they are (random's return plays no part)
    assert lines(90.0, 100.0, -30.0)[-1].endswith("| 0.90x | >= 0.90x | yes |")
    # ours -3.2, theirs -15.8, random -28.3: gains 25.1 and 12.5, 2.01x
    got = lines(-3.2, -15.8, -28.3)
    assert got[-1] == "| Ant-v5 | ppo | -3.2 (1) | peer-ppo | -15.8 (1) | 2.01x (over random) | >= 0.90x | yes |"
    assert "gain over a random policy" in got[1]
    # gains 5 and 10: 0.50x, missed
    assert lines(-25.0, -20.0, -30.0)[-1].endswith("| 0.50x (over random) | >= 0.90x | missed (0.50 of 0.90) |")
    # the peer at or below random learned nothing: no ratio, whatever ours did
    assert lines(50.0, -31.0, -30.0)[-1].endswith("| - | >= 0.90x | n/a |")
    assert runner.peer_ratio(-3.2, -15.8, -28.3) == pytest.approx((25.1 / 12.5, " (over random)"))


def test_an_agent_with_its_own_published_figure_is_normalised_and_shown_against_it(tmp_path):
    task = Task("CartPole-v1", (agent("impala"), agent("ppo")), 400.0, "impala's paper",
                agent_references=(("ppo", 300.0, "ppo's paper"),))
    assert task.reference_of("impala") == (400.0, "impala's paper") and task.reference_of("ppo") == (300.0, "ppo's paper")
    s = Suite("refs", "two agents, two references", tasks=(task,), seeds=(0,), budget=1000)
    results = {c.key: {**_record(c.agent.label, task.env, 0, 200.0), "env_steps": 1000,
                       "curve": {"env_steps": [0, 1000], "episode_return_mean": [0.0, 200.0]}} for c in s.cells()}
    matrices, _ = runner.score_matrices(s, results, {"CartPole-v1": 0.0}, (0,))
    assert matrices["impala"].tolist() == [[0.5]] and matrices["ppo"].tolist() == [[200 / 300]]
    store = tmp_path / "records"
    for c in s.cells():
        runner.record_path(store, s, c).parent.mkdir(parents=True, exist_ok=True)
        runner.record_path(store, s, c).write_text(json.dumps(results[c.key]))
    body = runner.report(store, s, (0,), {"CartPole-v1": 0.0}, reps=50, figures=tmp_path / "figures")
    assert "| CartPole-v1 | impala | 1 | 1,000 | 200.00 (200.00 to 200.00) | 0.00 | 400 | impala's paper |" in body
    assert "| CartPole-v1 | ppo | 1 | 1,000 | 200.00 (200.00 to 200.00) | 0.00 | 300 | ppo's paper |" in body
    with pytest.raises(ValueError, match="a reference for 'sac', which does not run on it"):
        Task("CartPole-v1", (agent("ppo"),), 1.0, "x", agent_references=(("sac", 2.0, "y"),))


def test_cleanrls_episodes_become_our_metrics_rows():
    rows = cleanrl_cell.metrics_rows([[10, 1.0], [25, 3.0], [40, 8.0]], wall_s=12.345, window=2)
    assert [r["env_steps"] for r in rows] == ["10", "25", "40"]
    assert [float(r["episode_return_mean"]) for r in rows] == [1.0, 2.0, 5.5]  # the last 2 episodes' mean
    assert [r["wall_time"] for r in rows] == ["", "", "12.35"]
    assert cleanrl_cell.metrics_rows([], wall_s=1.0) == []


def test_a_cleanrl_cell_refuses_bad_input_in_one_line(tmp_path):
    for argv, message in ((["--algo", "a2c"], "invalid choice: 'a2c'"),
                          (["--algo", "sac", "--cleanrl_python", str(tmp_path / "nope")], "no such interpreter"),
                          (["--algo", "sac", "--cleanrl_python", sys.executable, "--cleanrl_dir", str(tmp_path)],
                           "not a CleanRL checkout"),
                          (["--algo", "sac", "--resume", str(tmp_path)], "not a finished CleanRL cell")):
        out = subprocess.run([sys.executable, "-m", "benchmarks.peers.cleanrl_cell", *argv], cwd=ROOT,
                             capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []  # a refused cell leaves nothing


# ---------------------------------------------------------------- the runner, on real runs
TINY = Suite("tiny", "Two seeds of PPO on CartPole.",
             tasks=(Task("CartPole-v1", (agent("ppo", "--num_envs=4", "--checkpoint_every=1"),), 475.0, "a test"),),
             seeds=(0, 1), budget=20_480, cost="seconds")


@pytest.mark.slow(seconds=20)
@pytest.mark.timeout(600)
def test_the_runner_runs_resumes_never_reruns_and_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(JAX_CACHE))
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    first, second = TINY.cells()
    # seed 1's run is interrupted (SIGTERM) once it has a checkpoint: the runner must resume it
    logdir = runner.cell_dir(tmp_path, TINY, second) / "runs"
    proc = subprocess.Popen([sys.executable, "-m", second.agent.module, *second.argv(), f"--logdir={logdir}",
                             "--noprogress"], cwd=ROOT, env=child_env(XLA_FLAGS="", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not list(logdir.glob("*/checkpoints/[0-9]*")):
        assert proc.poll() is None, "the run ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143

    # seed 0's run stopped before its first checkpoint: nothing to resume, so it is set aside and rerun
    stillborn = runner.cell_dir(tmp_path, TINY, first) / "runs" / "ppo-CartPole-v1-stopped-s0"
    stillborn.mkdir(parents=True)
    (stillborn / "flags.json").write_text("{}")

    store = tmp_path / "records"
    assert runner.run_suite(tmp_path, store, TINY, jobs=2) == []
    assert (runner.cell_dir(tmp_path, TINY, first) / "abandoned" / stillborn.name / "flags.json").exists()
    results = {c.seed: runner.finished(store, TINY, c) for c in TINY.cells()}
    assert [results[s]["resumed"] for s in (0, 1)] == [False, True]
    for c in TINY.cells():
        r = results[c.seed]
        assert r["env_steps"] >= 20_480 and np.isfinite(r["return"])
        (run_dir,) = (runner.cell_dir(tmp_path, TINY, c) / "runs").iterdir()
        rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
        assert float(rows[-1]["episode_return_mean"]) == r["return"] == r["curve"]["episode_return_mean"][-1]
        logged = [(int(x["env_steps"]), float(x["episode_return_mean"])) for x in rows if x["episode_return_mean"]]
        assert list(zip(*r["curve"].values())) == logged  # fewer rows than CURVE_POINTS: the whole curve
    stamps = [runner.record_path(store, TINY, c).stat().st_mtime_ns for c in TINY.cells()]

    capsys.readouterr()
    assert runner.run_suite(tmp_path / "elsewhere", store, TINY, jobs=2) == []  # the records alone: nothing to run
    assert "2 of 2 cells finished; running 0" in capsys.readouterr().out
    assert runner.run_suite(tmp_path / "elsewhere", store, TINY, jobs=2, agents=("dqn",)) == []  # not TINY's agent
    assert "0 of 0 cells finished; running 0" in capsys.readouterr().out
    assert stamps == [runner.record_path(store, TINY, c).stat().st_mtime_ns for c in TINY.cells()]

    body = runner.report(store, TINY, TINY.seeds, {"CartPole-v1": 20.0}, reps=200, figures=tmp_path / "figures")
    scores = aggregate.normalise(np.array([[results[0]["return"]], [results[1]["return"]]]), [20.0], [475.0])
    e = aggregate.interval_estimates({"ppo": scores}, reps=200)["ppo"]
    row = "| ppo | 2 x 1 | " + " | ".join(f"{e[m].value:.2f} [{e[m].low:.2f}, {e[m].high:.2f}]"
                                         for m in aggregate.METRICS) + " | CartPole-v1 |"
    assert row in body, body
    assert "2 of 2 cells finished" in body
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["suite-tiny-CartPole-v1.png",
                                                                        "suite-tiny-aggregate.png"]
    assert json.loads(runner.record_path(store, TINY, first).read_text())["seed"] == 0


def test_a_curve_is_thinned_to_evenly_spread_rows_keeping_both_ends():
    steps, returns = np.arange(1000) * 10, np.arange(1000) / 2
    got_steps, got_returns = runner.thin(steps, returns, points=5)
    assert got_steps == [0, 2500, 5000, 7490, 9990] and got_returns == [0.0, 125.0, 250.0, 374.5, 499.5]
    assert runner.thin(steps[:3], returns[:3], points=5) == ([0, 10, 20], [0.0, 0.5, 1.0])
    assert runner.thin(steps[:0], returns[:0]) == ([], [])


# ---------------------------------------------------------------- the published page
@pytest.mark.slow(seconds=10)
def test_the_docs_pages_suite_tables_are_the_runners_report_of_the_kept_records(tmp_path):
    """Every suite section of docs/benchmarks.md (and BENCHMARKS.md) holds the tables the runner
    reports from the records kept in the repository (benchmarks/results/suites), so a table on the
    page is one a reader can regenerate: `python -m benchmarks.suite SUITE --report-only`."""
    from benchmarks._report import BENCH_FILE, markers

    shown = 0
    for name, s in SUITES.items():
        start, end = markers(f"suite_{name}")
        want = [runner.report(runner.RESULTS, s, s.seeds, runner.random_returns(runner.RESULTS, s),
                              figures=tmp_path / name)] if runner.RESULTS.joinpath(name).is_dir() else []
        for page in (runner.DOCS_PAGE, BENCH_FILE):
            text = page.read_text()
            if start not in text:
                continue
            section = text[text.index(start):text.index(end)]
            assert want, f"{page.name} shows suite {name!r}, whose records are not kept in {runner.RESULTS}"
            tables = [[line for line in body.splitlines() if line.startswith("|")] for body in (section, want[0])]
            assert tables[0] == tables[1], f"{page.name}'s suite {name!r} is not the report of its kept records"
            shown += 1
    assert shown >= 2  # the memory suite on both pages at least
