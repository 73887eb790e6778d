"""ProgressBar: one live line for a terminal (tqdm) fed from the loop's metrics reports: env
steps against the total, steps/s, recent episode return and policy lag."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from tqdm import tqdm


def isatty(file: IO) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _num(value: Any, fmt: str) -> str:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "-"
    return format(x, fmt) if math.isfinite(x) else "-"


class ProgressBar:
    """Updated with `update(report)` (the bar advances by the change in `report["env_steps"]`);
    `close()` ends the line. Writes to `file` (stderr by default, as tqdm, keeping stdout clean).

    On a terminal it is a tqdm bar: `42%|####   | 420k/1.00M [00:10<00:14, sps 41.2k, return
    87.3, lag 0.51]`. When `file` is not a TTY (a log file, a pipe, CI) a redrawn bar would fill
    the log with carriage returns, so it writes one plain line per report instead.
    `interactive` forces either mode. `echo`: called with that plain line at every report, in
    either mode (the run's log.txt keeps them).
    """

    def __init__(self, total_env_steps: int | None = None, file: IO | None = None, desc: str | None = None,
                 interactive: bool | None = None, echo: Callable[[str], None] | None = None):
        self.file = file if file is not None else sys.stderr
        self.echo = echo
        self.total = total_env_steps
        self.desc = desc
        self.interactive = isatty(self.file) if interactive is None else interactive
        self.env_steps = 0
        self._start = time.monotonic()
        self._first: tuple[float, int] | None = None  # (time, env steps) of the first report: the ETA's rate
        self._bar: tqdm | None = None
        if self.interactive:
            fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]" if total_env_steps else None
            self._bar = tqdm(
                total=total_env_steps,
                desc=desc,
                file=self.file,
                unit=" steps",
                unit_scale=True,
                dynamic_ncols=True,
                bar_format=fmt,
                mininterval=0.5,
            )
        self._closed = False

    @staticmethod
    def summary(report: Mapping[str, Any]) -> str:
        """'sps 41.2k, return 87.3, lag 0.51' from a report ('-' for what it lacks or is NaN); a
        `--num_seeds` run's return is the replicas' mean, with their range: 'return 87.3 (12.0-140.5)';
        ', warm-up' while an off-policy agent's replay fills (`learning` 0), and who waits most of
        the time when one side does (', actors wait 54%': the learner is the bound; ', learner wait
        30%': the actors are)."""
        sps = report.get("sps")
        sps_s = tqdm.format_sizeof(float(sps)) if _num(sps, "f") != "-" else "-"
        lo, hi = (_num(report.get(f"episode_return_mean_{k}"), ".1f") for k in ("min", "max"))
        band = f" ({lo}-{hi})" if "-" not in (lo, hi) else ""
        line = (f"sps {sps_s}, return {_num(report.get('episode_return_mean'), '.1f')}{band}, "
                f"lag {_num(report.get('policy_lag'), '.2f')}")
        if _num(report.get("learning"), "f") != "-" and float(report["learning"]) == 0.0:
            line += ", warm-up"  # an off-policy agent's replay not yet at learning_starts
        waits = {who: float(report[key]) for who, key in (("actors", "actor_wait_frac"), ("learner", "learner_wait_frac"))
                 if _num(report.get(key), "f") != "-"}
        if waits and max(waits.values()) >= 0.05:  # who waits for whom (async mode): the other one is the bound
            who = max(waits, key=waits.get)
            line += f", {who} wait {waits[who]:.0%}"
        return line

    def update(self, report: Mapping[str, Any]) -> None:
        if self._closed:
            return
        if _num(report.get("eval_return_mean"), ".1f") != "-":  # the latest evaluation, kept on the line
            self._eval = f", eval {_num(report['eval_return_mean'], '.1f')} @ {int(report['eval_env_steps']):,}"
            if "sps" not in report:  # an evaluation's own row: shown with the next report
                return
        env_steps = int(report.get("env_steps", self.env_steps))
        delta, self.env_steps = env_steps - self.env_steps, env_steps
        summary = self.summary(report) + getattr(self, "_eval", "")
        if self._bar is not None:
            if self.total and env_steps > self._bar.total:  # the last cycle overshoots the total
                self._bar.total = env_steps
            self._bar.set_postfix_str(summary, refresh=False)
            if delta > 0:
                self._bar.update(delta)
            else:
                self._bar.refresh()
            if self.echo is not None:
                self.echo(self.line(env_steps, summary))
            return
        line = self.line(env_steps, summary)
        if self.echo is not None:
            self.echo(line)
        try:
            print(line, file=self.file, flush=True)
        except ValueError:  # the stream was closed under us: progress is not worth a crash
            pass

    def line(self, env_steps: int, summary: str) -> str:
        """The plain line of a report: `desc: env steps 4,096/20,000 (20%), sps ... [00:03<00:12]`."""
        steps = f"{env_steps:,}"
        if self.total and env_steps >= self.total:  # the last cycle ends past the budget: whole cycles
            steps += f" (the {self.total:,} budget reached)"
        elif self.total:
            steps += f"/{self.total:,} ({env_steps / self.total:.0%})"
        now = time.monotonic()
        if self._first is None:
            self._first = (now, env_steps)
        eta = self.eta(now, env_steps)
        elapsed = tqdm.format_interval(now - self._start) + ("" if eta is None else f"<{tqdm.format_interval(eta)}")
        prefix = f"{self.desc}: " if self.desc else ""
        return f"{prefix}env steps {steps}, {summary} [{elapsed}]"

    def eta(self, now: float, env_steps: int) -> float | None:
        """Seconds left at the rate since the first report (None before a rate is known, or
        without a total)."""
        if not self.total or self._first is None:
            return None
        t0, n0 = self._first
        if now <= t0 or env_steps <= n0:
            return None
        return max(0.0, (self.total - env_steps) * (now - t0) / (env_steps - n0))

    def close(self) -> None:
        """End the progress line. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def process_age_s() -> float | None:
    """Seconds since this process started (Linux: /proc), imports included; None elsewhere."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
