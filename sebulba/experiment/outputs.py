"""What a run writes from its metrics reports: `MetricsWriter` (metrics.csv + TensorBoard event
files) and `Outputs`, the one object an entry point passes as `GymnasiumLoop.run(report=...)`
(with W&B logging, `wandb_logger.WandbLogger`, when the run asks for it)."""

from __future__ import annotations

import csv
import itertools
import logging
import numbers
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envs.import_on_use import import_on_use

import_on_use("boto3")  # tensorboardX imports it for s3:// paths: 0.2 s of every run's start
from tensorboardX.event_file_writer import EventsWriter  # noqa: E402
from tensorboardX.proto.event_pb2 import Event, SessionLog
from tensorboardX.proto.summary_pb2 import Summary

from sebulba.experiment.curves import plot_learning_curve
from sebulba.experiment.progress import ProgressBar
from sebulba.experiment.run_log import ECHO
from sebulba.experiment.run_dir import RunDir
from sebulba.loop.evaluator import PeriodicEvaluation

if TYPE_CHECKING:
    from sebulba.experiment.wandb_logger import WandbLogger

log = logging.getLogger("sebulba")

LEADING_COLUMNS = ("env_steps", "wall_time")
_writer_ids = itertools.count()


def _scalar(value: Any) -> float | None:
    """A report value as a float, or None when it is not a real scalar (TensorBoard skips it)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real):
        return float(value)
    try:  # numpy / jax 0-d arrays
        if getattr(value, "shape", None) == ():
            return float(value)
    except (TypeError, ValueError):
        pass
    return None


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    f = _scalar(value)
    if f is None:
        return value
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else f


class MetricsWriter:
    """Appends each report to `<directory>/metrics.csv` and to TensorBoard event files in
    `directory`, step = the report's `env_steps`. Both are flushed on every write, so a crash
    loses nothing already reported.

    CSV columns: `env_steps`, `wall_time` (seconds since this writer was created), then the other
    keys of the FIRST report in its order. The column set is fixed by that first row (or by the
    header of an existing metrics.csv, which is appended to): a later report's missing keys are
    written as empty cells, and keys that were not in the first report are left out of the CSV
    (logged once) but still go to TensorBoard, which has no fixed schema.

    TensorBoard: one event per report holding every real scalar (non-numeric values are
    skipped) plus `wall_time`, written synchronously with tensorboardX's `EventsWriter`, the
    record writer behind `SummaryWriter`. `SummaryWriter` itself queues events to a background
    thread and its `flush()` does not wait for that queue, so it cannot promise that a report is
    on disk when `write` returns; this can.
    """

    def __init__(self, directory: str | os.PathLike, csv_name: str = RunDir.METRICS_CSV, start_time: float | None = None,
                 columns: tuple[str, ...] = ()):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.csv_path = self.directory / csv_name
        self.start_time = time.monotonic() if start_time is None else start_time
        self.columns: list[str] | None = None
        self._required = columns  # columns every row has, even when the first report lacks them
        if self.csv_path.exists() and self.csv_path.stat().st_size > 0:
            with open(self.csv_path, newline="") as f:
                self.columns = next(csv.reader(f), None)
        self._csv = open(self.csv_path, "a", newline="")
        self._writer = csv.writer(self._csv)
        self._ignored: set[str] = set()
        # a unique suffix: event files are named by the second they were created in and opened
        # with "wb", so two writers on one directory within a second would clobber each other
        self._tb = EventsWriter(str(self.directory / "events"), filename_suffix=f".{os.getpid()}.{next(_writer_ids)}")
        self._closed = False

    def write(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """Write one report; returns the row written (the report plus its wall_time)."""
        if self._closed:
            raise RuntimeError("write() on a closed MetricsWriter")
        if "env_steps" not in report:
            raise KeyError("a metrics report needs 'env_steps' (the x axis of every output)")
        wall_time = time.monotonic() - self.start_time
        row = {**report, "wall_time": wall_time}
        if self.columns is None:
            self.columns = list(LEADING_COLUMNS) + [k for k in report if k not in LEADING_COLUMNS]
            self.columns += [k for k in self._required if k not in self.columns]
            self._writer.writerow(self.columns)
        extra = [k for k in row if k not in self.columns and k not in self._ignored]
        if extra:
            self._ignored.update(extra)
            log.warning(f"metrics.csv: keys {extra} were not in the first report; they go to TensorBoard only")
        self._writer.writerow([_cell(row.get(k)) for k in self.columns])
        self._csv.flush()

        # An evaluation's scalars go to TensorBoard at the env step its networks belong to.
        at_eval = lambda k: k.startswith("eval_") and _scalar(report.get("eval_env_steps")) is not None  # noqa: E731
        values = [Summary.Value(tag=k, simple_value=f) for k, v in row.items()
                  if k != "env_steps" and not at_eval(k) and (f := _scalar(v)) is not None]
        self._tb.write_event(Event(wall_time=time.time(), step=int(report["env_steps"]), summary=Summary(value=values)))
        evals = [Summary.Value(tag=k, simple_value=f) for k, v in row.items()
                 if at_eval(k) and k != "eval_env_steps" and (f := _scalar(v)) is not None]
        if evals:
            self._tb.write_event(Event(wall_time=time.time(), step=int(report["eval_env_steps"]), summary=Summary(value=evals)))
        self._tb.flush()
        return row

    def resume_at(self, env_steps: int) -> None:
        """Continue a run from a checkpoint taken at env_steps: rows logged after it are dropped
        from metrics.csv, wall_time goes on from the last kept row, and TensorBoard is told to
        purge the old events past that step (the event `SummaryWriter(purge_step=...)` writes)."""
        rows = []
        if self.csv_path.exists() and self.columns is not None:
            with open(self.csv_path, newline="") as f:
                reader = csv.reader(f)
                next(reader, None)
                rows = [r for r in reader if r and float(r[0]) <= env_steps]
            self._csv.close()
            with open(self.csv_path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(self.columns)
                w.writerows(rows)
            self._csv = open(self.csv_path, "a", newline="")
            self._writer = csv.writer(self._csv)
        last_wall = float(rows[-1][self.columns.index("wall_time")]) if rows else 0.0
        self.start_time = time.monotonic() - last_wall
        self._tb.write_event(Event(wall_time=time.time(), step=int(env_steps) + 1, session_log=SessionLog(status=SessionLog.START)))
        self._tb.flush()

    def close(self) -> None:
        """Flush and close both outputs. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._tb.close()
        finally:
            self._csv.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Outputs:
    """Everything a run produces from its reports: metrics.csv and TensorBoard (MetricsWriter), a
    live progress line (ProgressBar, `progress=False` to turn it off), each row to W&B (`wandb`,
    a started WandbLogger, which `close()` finishes) and, on `close()`, learning_curve.png
    (`learning_curve=False` leaves it out: matplotlib costs about a second of CPU). Pass
    it as `loop.run(..., report=outputs)`; use it as a context manager or call `close()` in a
    `finally`."""

    def __init__(self, run_dir: RunDir, total_env_steps: int | None = None, progress: bool = True,
                 resume_env_steps: int | None = None, evaluation: bool = False, wandb: WandbLogger | None = None,
                 learning_curve: bool = True):
        self.run_dir = run_dir
        self.learning_curve = learning_curve
        self.wandb = wandb
        self.metrics = MetricsWriter(run_dir.path, columns=PeriodicEvaluation.KEYS if evaluation else ())
        if resume_env_steps is not None:
            self.metrics.resume_at(resume_env_steps)
        self.progress = ProgressBar(total_env_steps, desc=run_dir.name, echo=ECHO.info) if progress else None
        self._closed = False

    def __call__(self, report: Mapping[str, Any]) -> None:
        row = self.metrics.write(report)
        if self.wandb is not None:
            self.wandb.log({k: f for k, v in row.items() if (f := _scalar(v)) is not None})
        if self.progress is not None:
            self.progress.update(report)

    def close(self, failed: bool = False) -> None:
        """Close the progress line and the metrics files, plot learning_curve.png (when at least
        one report was written, unless `learning_curve=False`), then finish the W&B run with it
        (`failed`: the run raised). Idempotent."""
        if self._closed:
            return
        self._closed = True
        plotted = self.learning_curve and self.metrics.columns is not None
        try:
            try:
                if self.progress is not None:
                    self.progress.close()
            finally:
                self.metrics.close()
            if plotted:
                plot_learning_curve(self.run_dir.metrics_csv, self.run_dir.learning_curve_png, title=self.run_dir.name)
        finally:
            if self.wandb is not None:
                self.wandb.finish(self.run_dir.learning_curve_png if plotted else None, failed)

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(failed=exc_type is not None)
