"""sebulba.experiment: run directories, metrics.csv + TensorBoard, learning curves, progress."""

import csv
import dataclasses
import datetime
import io
import json
import math
import re
import struct

import numpy as np
import pytest
from tensorboardX.crc32c import crc32c
from tensorboardX.proto import event_pb2

from sebulba.experiment import MetricsWriter, Outputs, ProgressBar, RunDir, plot_curves, plot_learning_curve, progress

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fake_report(env_steps, ret=20.0, **extra):
    r = {
        "env_steps": env_steps,
        "learner_steps": env_steps // 100,
        "episodes": env_steps // 50,
        "sps": 5000.0,
        "updates_per_s": 50.0,
        "policy_lag": 0.5,
        "learner_wait_frac": 0.1,
        "actor_wait_frac": 0.2,
        "episode_return_mean": ret,
        "episode_length_mean": 30.0,
        "loss": np.float32(1.5),  # agent metrics arrive as floats; numpy scalars must work too
    }
    r.update(extra)
    return r


# ----------------------------------------------------------------------------- TensorBoard reader
def masked_crc(data: bytes) -> int:
    x = crc32c(data) & 0xFFFFFFFF
    return (((x >> 15) | (x << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(path):
    """Parse TFRecord framing (u64 length, u32 masked crc of it, data, u32 masked crc of data)."""
    raw, events, pos = path.read_bytes(), [], 0
    while pos < len(raw):
        header = raw[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", raw[pos + 8 : pos + 12])
        assert header_crc == masked_crc(header)
        data = raw[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack("<I", raw[pos + 12 + length : pos + 16 + length])
        assert data_crc == masked_crc(data)
        event = event_pb2.Event()
        event.ParseFromString(data)
        events.append(event)
        pos += 16 + length
    return events


def scalars(directory):
    """{tag: [(step, value)]} from every event file in `directory`."""
    out = {}
    files = sorted(directory.glob("events.out.tfevents.*"))
    assert files, f"no event file in {directory}"
    for f in files:
        for e in read_events(f):
            for v in e.summary.value:
                out.setdefault(v.tag, []).append((e.step, v.simple_value))
    return out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


# ----------------------------------------------------------------------------- RunDir
@dataclasses.dataclass
class Cfg:
    lr: float = 1e-3
    devices: tuple = (0, 1)


def test_run_dir_name_paths_and_flags(tmp_path):
    now = datetime.datetime(2025, 3, 4, 5, 6, 7)
    flags = {"lr": 3e-4, "env": "CartPole-v1", "seed": 3, "config": Cfg(), "path": tmp_path, "fn": len, "arr": np.arange(3), 7: "int key"}
    run = RunDir.create(tmp_path / "logs", "impala", "CartPole-v1", 3, flags, now=now)
    assert run.path == tmp_path / "logs" / "impala-CartPole-v1-20250304-050607-s3"
    assert run.path.is_dir() and run.name == run.path.name
    assert run.flags_path == run.path / "flags.json"
    assert run.metrics_csv == run.path / "metrics.csv"
    assert run.learning_curve_png == run.path / "learning_curve.png"
    assert run.tensorboard_dir == run.path
    data = json.loads(run.flags_path.read_text())
    assert data["lr"] == 3e-4 and data["env"] == "CartPole-v1" and data["seed"] == 3
    assert data["config"] == {"lr": 1e-3, "devices": [0, 1]}
    assert data["path"] == str(tmp_path) and data["fn"] == str(len) and data["arr"] == [0, 1, 2]
    assert data["7"] == "int key"


def test_run_dir_names_are_unique_and_sanitized(tmp_path):
    now = datetime.datetime(2025, 1, 1)
    a = RunDir.create(tmp_path, "r2d2", "ALE/Pong-v5", 0, {}, now=now)
    b = RunDir.create(tmp_path, "r2d2", "ALE/Pong-v5", 0, {}, now=now)
    c = RunDir.create(tmp_path, "r2d2", "ALE/Pong-v5", 0, now=now)
    assert a.name == "r2d2-ALE_Pong-v5-20250101-000000-s0"
    assert b.name == a.name + "-1" and c.name == a.name + "-2"
    assert a.path.parent == tmp_path and json.loads(c.flags_path.read_text()) == {}
    d = RunDir.create(tmp_path, "impala", "CartPole-v1", 1, {})  # real clock
    assert re.fullmatch(r"impala-CartPole-v1-\d{8}-\d{6}-s1", d.name)


# ----------------------------------------------------------------------------- MetricsWriter
def test_metrics_csv_header_rows_missing_and_extra_keys(tmp_path):
    with MetricsWriter(tmp_path) as w:
        w.write(fake_report(1000, ret=10.0))
        rows = read_csv(tmp_path / "metrics.csv")  # flushed: readable while the writer is open
        assert len(rows) == 2
        w.write(fake_report(2000, ret=15.0, new_metric=7.0))  # extra key: not in the CSV
        missing = fake_report(3000, ret=float("nan"))
        del missing["loss"]
        w.write(missing)  # missing key: empty cell
    rows = read_csv(tmp_path / "metrics.csv")
    header = rows[0]
    assert header[:2] == ["env_steps", "wall_time"]
    assert header[2:] == [k for k in fake_report(0) if k != "env_steps"]  # the first report's order
    assert "new_metric" not in header and len(rows) == 4
    assert all(len(r) == len(header) for r in rows)
    recs = [dict(zip(header, r)) for r in rows[1:]]
    assert [r["env_steps"] for r in recs] == ["1000", "2000", "3000"]
    times = [float(r["wall_time"]) for r in recs]
    assert 0 <= times[0] <= times[1] <= times[2]
    assert float(recs[0]["episode_return_mean"]) == 10.0 and float(recs[1]["loss"]) == 1.5
    assert recs[2]["loss"] == "" and math.isnan(float(recs[2]["episode_return_mean"]))


def test_metrics_csv_appends_with_existing_header(tmp_path):
    with MetricsWriter(tmp_path) as w:
        w.write(fake_report(100))
    with MetricsWriter(tmp_path) as w:  # e.g. a resumed run: keeps the file's columns
        w.write({"env_steps": 200, "sps": 1.0, "brand_new": 2.0})
    rows = read_csv(tmp_path / "metrics.csv")
    assert len(rows) == 3 and rows[0].count("env_steps") == 1
    rec = dict(zip(rows[0], rows[2]))
    assert rec["env_steps"] == "200" and rec["sps"] == "1.0" and rec["loss"] == "" and "brand_new" not in rec
    # each writer has its own event file, even within the same second
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2
    got = scalars(tmp_path)  # two files of the same second: their names do not order them; TensorBoard orders by step
    assert sorted(got["sps"]) == [(100, 5000.0), (200, 1.0)] and got["brand_new"] == [(200, 2.0)]


def test_metrics_writer_needs_env_steps_and_refuses_after_close(tmp_path):
    w = MetricsWriter(tmp_path)
    with pytest.raises(KeyError, match="env_steps"):
        w.write({"sps": 1.0})
    w.close()
    w.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        w.write(fake_report(1))


def test_tensorboard_scalars_with_env_steps_as_step(tmp_path):
    w = MetricsWriter(tmp_path)
    w.write(fake_report(1000, ret=10.0))
    w.write(fake_report(2000, ret=15.0, new_metric=7.0, note="text is skipped"))
    got = scalars(tmp_path)  # before close: each write is flushed
    assert got["episode_return_mean"] == [(1000, 10.0), (2000, 15.0)]
    assert got["new_metric"] == [(2000, 7.0)]
    w.close()
    got = scalars(tmp_path)
    assert "env_steps" not in got and "note" not in got
    for key in ("learner_steps", "sps", "policy_lag", "actor_wait_frac", "loss", "wall_time"):
        assert [s for s, _ in got[key]] == [1000, 2000], key
    assert got["sps"][0][1] == pytest.approx(5000.0) and got["loss"][1][1] == pytest.approx(1.5)


# ----------------------------------------------------------------------------- curves
def assert_png(path, min_bytes=5000):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > min_bytes


def write_csv(directory, n, scale=1.0):
    with MetricsWriter(directory) as w:
        w.write(fake_report(0, ret=float("nan")))  # no finished episode yet: skipped in the plot
        for i in range(1, n):
            w.write(fake_report(i * 1000, ret=scale * math.log1p(i)))
    return directory / "metrics.csv"


def test_plot_learning_curve_and_comparison(tmp_path):
    csv_a = write_csv(tmp_path / "a", 40)
    csv_b = write_csv(tmp_path / "b", 25, scale=2.0)
    png = plot_learning_curve(csv_a, tmp_path / "a" / "curve.png", title="impala CartPole")
    assert png == tmp_path / "a" / "curve.png"
    assert_png(png)
    png = plot_curves([("lstm", csv_a), ("mlp", csv_b)], tmp_path / "cmp" / "compare.png", title="R2D2")
    assert_png(png)
    # a run with no finished episodes still gets a (placeholder) figure
    empty = tmp_path / "c"
    with MetricsWriter(empty) as w:
        w.write(fake_report(10, ret=float("nan")))
    assert_png(plot_learning_curve(empty / "metrics.csv", empty / "curve.png"), min_bytes=1000)


# ----------------------------------------------------------------------------- progress
def test_progress_bar_not_a_tty_writes_plain_lines():
    out = io.StringIO()
    bar = ProgressBar(10_000, file=out)
    assert not bar.interactive
    bar.update(fake_report(1000, ret=12.34))
    bar.update(fake_report(3000, ret=float("nan")))
    bar.update({"env_steps": 3000})  # sparse report
    bar.close()
    bar.close()
    bar.update(fake_report(4000))  # ignored after close
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in out.getvalue()
    assert "1,000/10,000 (10%)" in lines[0] and "sps 5.00k" in lines[0] and "return 12.3" in lines[0] and "lag 0.50" in lines[0]
    assert "return -" in lines[1] and "sps -" in lines[2]


def test_the_progress_line_says_who_waits_and_when_an_off_policy_agent_warms_up():
    base = {"sps": 1000.0, "episode_return_mean": 10.0, "policy_lag": 0.5}
    assert ProgressBar.summary({**base, "actor_wait_frac": 0.54, "learner_wait_frac": 0.01}).endswith(", actors wait 54%")
    assert ProgressBar.summary({**base, "actor_wait_frac": 0.0, "learner_wait_frac": 0.3}).endswith(", learner wait 30%")
    assert ProgressBar.summary({**base, "actor_wait_frac": 0.01, "learner_wait_frac": 0.02}).endswith("lag 0.50")
    assert ProgressBar.summary({**base, "learning": 0.0}).endswith(", warm-up")
    assert ProgressBar.summary({**base, "learning": 1.0}).endswith("lag 0.50")


def test_progress_bar_plain_lines_show_the_time_left(monkeypatch):
    """Once two reports give a rate, the plain line shows elapsed<left as tqdm does: 2,000 steps
    in 10 s leave 7,000 steps, 35 s. Time is a stub, not the clock."""
    clock = iter([0.0, 10.0, 20.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = ProgressBar(10_000, file=out)  # created at t=0
    bar.update(fake_report(1000))  # t=10: no rate yet
    bar.update(fake_report(3000))  # t=20
    first, second = out.getvalue().splitlines()
    assert first.endswith("[00:10]") and second.endswith("[00:20<00:35]"), out.getvalue()


def test_progress_bar_default_stream_under_capture(capsys):
    with ProgressBar(500) as bar:  # stderr, captured by pytest: not a TTY
        bar.update(fake_report(600))  # overshooting the total is fine
    assert "env steps 600 (the 500 budget reached)," in capsys.readouterr().err


def test_progress_bar_tqdm_mode():
    out = io.StringIO()
    bar = ProgressBar(10_000, file=out, interactive=True)
    bar.update(fake_report(2500, ret=42.0))
    bar.update(fake_report(12_000, ret=43.0))  # the last cycle overshoots: the total grows
    bar.close()
    text = out.getvalue()
    assert "return 43.0" in text and "lag 0.50" in text and "12.0k/12.0k" in text
    none_total = ProgressBar(None, file=io.StringIO(), interactive=True)
    none_total.update(fake_report(10))
    none_total.close()


# ----------------------------------------------------------------------------- Outputs
def test_outputs_writes_everything(tmp_path, capsys):
    run = RunDir.create(tmp_path, "impala", "CartPole-v1", 0, {"total": 3000})
    with Outputs(run, total_env_steps=3000) as outputs:
        for i in range(1, 4):
            outputs(fake_report(i * 1000, ret=10.0 * i))
    assert len(read_csv(run.metrics_csv)) == 4
    assert scalars(run.tensorboard_dir)["episode_return_mean"][-1] == (3000, 30.0)
    assert_png(run.learning_curve_png)
    err = capsys.readouterr().err
    assert "env steps 2,000/3,000 (67%)" in err and "env steps 3,000 (the 3,000 budget reached)" in err
    outputs.close()  # idempotent

    quiet = RunDir.create(tmp_path, "impala", "CartPole-v1", 1, {})
    Outputs(quiet, 100, progress=False).close()  # no report: no curve, no crash
    assert not quiet.learning_curve_png.exists() and capsys.readouterr().err == ""

    unplotted = RunDir.create(tmp_path, "impala", "CartPole-v1", 2, {})
    with Outputs(unplotted, 3000, progress=False, learning_curve=False) as outputs:
        outputs(fake_report(1000))
    assert len(read_csv(unplotted.metrics_csv)) == 2 and not unplotted.learning_curve_png.exists()


@pytest.mark.slow(seconds=2)
def test_outputs_as_the_report_of_a_real_loop(tmp_path):
    import envs
    import sebulba
    from sebulba.agents import RandomAgent

    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=10, async_mode=False, log_every_s=1e-6)
    run = RunDir.create(tmp_path, "random", cfg.env_id, cfg.seed, {"config": cfg})
    with sebulba.GymnasiumLoop(RandomAgent(envs.make_spec(cfg.env_id)), cfg) as loop, Outputs(run, 400, progress=False) as outputs:
        loop.run(max_env_steps=400, report=outputs)
    rows = read_csv(run.metrics_csv)
    assert len(rows) == 1 + len(loop.reports) and rows[-1][0] == "400"
    assert json.loads(run.flags_path.read_text())["config"]["num_envs"] == 8
    assert scalars(run.path)["episode_return_mean"][-1][0] == 400
    assert_png(run.learning_curve_png)


def test_resume_at_drops_later_rows_continues_wall_time_and_purges_tensorboard(tmp_path):
    with MetricsWriter(tmp_path) as w:
        for steps in (1000, 2000, 3000, 4000):
            w.write(fake_report(steps))
    last_kept_wall = float(list(csv.DictReader((tmp_path / "metrics.csv").open()))[1]["wall_time"])
    with MetricsWriter(tmp_path) as w:  # a run resumed from a checkpoint taken at 2,000 env steps
        w.resume_at(2000)
        w.write(fake_report(3000, ret=99.0))
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert [int(r["env_steps"]) for r in rows] == [1000, 2000, 3000]
    assert float(rows[-1]["episode_return_mean"]) == 99.0
    assert float(rows[-1]["wall_time"]) >= last_kept_wall
    # TensorBoard: the resumed writer's file starts with SummaryWriter(purge_step=2001)'s event,
    # which tells TensorBoard to drop the old file's events from step 2001 on
    (new_file,) = [f for f in sorted(tmp_path.glob("events.out.tfevents.*")) if any(
        e.session_log.status == event_pb2.SessionLog.START for e in read_events(f))]
    purge = [e for e in read_events(new_file) if e.session_log.status == event_pb2.SessionLog.START]
    assert [e.step for e in purge] == [2001]
