"""Busy fractions from the Perfetto trace of a profiled run (`--profile_after_s`): for each host
thread and, on a GPU, each device stream, the share of the traced window it spent in events,
and the events that take most of it.

    python -m sebulba.experiment.trace_summary RUN_DIR/profile [--top 5] [--out FILE.md]

A thread's busy time is the union of its outermost events (nested ones are inside it); on a GPU
stream these are kernels and copies, so "busy" is how much of the window the stream was running.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
from pathlib import Path
from typing import NamedTuple


class Row(NamedTuple):
    process: str
    thread: str
    events: int
    busy: float  # fraction of the traced window
    top: list[tuple[str, float]]  # (event name, fraction of the window), largest first


def find_trace(path: Path) -> Path:
    """The trace file itself, or the newest perfetto_trace.json.gz under a directory."""
    if path.is_file():
        return path
    found = sorted(path.glob("**/perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no perfetto_trace.json.gz under {path}")
    return found[-1]


def summarize(trace: Path, top: int = 5) -> tuple[float, list[Row]]:
    """(the traced window in seconds, one row per thread or stream with events, busiest first)."""
    data = json.loads(gzip.decompress(trace.read_bytes()))
    events = data["traceEvents"] if isinstance(data, dict) else data
    processes: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    spans: dict[tuple[int, int], list[tuple[float, float, str]]] = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            processes[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X" and "dur" in e:
            spans[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("name", "?")))
    if not spans:
        raise ValueError(f"{trace} has no timed events")
    start = min(s for evs in spans.values() for s, _, _ in evs)
    end = max(t for evs in spans.values() for _, t, _ in evs)
    window = max(end - start, 1e-9)
    rows = []
    for key, evs in spans.items():
        evs.sort()
        busy, by_name, reach = 0.0, collections.Counter(), -float("inf")
        for s, t, name in evs:
            if s >= reach:  # an outermost event
                busy += t - s
                by_name[name] += t - s
                reach = t
            elif t > reach:  # overlaps the previous outermost one without nesting in it
                busy += t - reach
                by_name[name] += t - reach
                reach = t
        pid, tid = key
        rows.append(Row(processes.get(pid, str(pid)), threads.get(key, f"tid {tid}"), len(evs), busy / window,
                        [(n, d / window) for n, d in by_name.most_common(top)]))
    rows.sort(key=lambda r: -r.busy)
    return window / 1e6, rows


def markdown(trace: Path, window_s: float, rows: list[Row], limit: int = 40) -> str:
    short = lambda name: name if len(name) <= 60 else name[:57] + "..."
    lines = [f"Trace `{trace}`: a window of {window_s:.2f} s.", "",
             "| process | thread or stream | events | busy | where the time goes |", "|---|---|---:|---:|---|"]
    for r in rows[:limit]:
        where = ", ".join(f"{short(n)} {f:.1%}" for n, f in r.top)
        lines.append(f"| {r.process} | {r.thread} | {r.events:,} | {r.busy:.1%} | {where} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="a run's profile/ directory, or a perfetto_trace.json.gz")
    ap.add_argument("--top", type=int, default=5, help="events listed per thread")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    args = ap.parse_args()
    if args.top < 1:
        ap.error(f"--top must be >= 1, got {args.top}")
    trace = find_trace(args.path)
    window_s, rows = summarize(trace, args.top)
    text = markdown(trace, window_s, rows)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
