"""RunDir: one experiment run's directory, `<logdir>/<experiment>-<env>-<YYYYmmdd-HHMMSS>-s<seed>`,
created with the run's flags in `flags.json`; the runner adds `config.json` (what ran)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data: dataclasses become dicts, mappings get string keys, sequences
    become lists, numpy scalars and arrays become numbers and lists, anything else its str()."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.generic, np.ndarray)):
        return jsonable(value.tolist())
    return str(value)


def _write_json(path: Path, value: Any, sort_keys: bool = True) -> None:
    data = jsonable(value)
    path.write_text(json.dumps(data, indent=2, sort_keys=sort_keys and isinstance(data, dict)) + "\n")


def _safe(part: str) -> str:
    """A name part usable in a path: path separators and spaces become '_' ("ALE/Pong-v5")."""
    return re.sub(r"[^\w.+=-]", "_", str(part)) or "_"


@dataclasses.dataclass(frozen=True)
class RunDir:
    """An experiment run's directory and the paths of what goes in it."""

    path: Path

    FLAGS = "flags.json"
    CONFIG = "config.json"
    METRICS_CSV = "metrics.csv"
    LEARNING_CURVE = "learning_curve.png"

    @classmethod
    def create(
        cls,
        logdir: str | os.PathLike,
        experiment: str,
        env: str,
        seed: int,
        flags: Mapping[str, Any] | Any = None,
        now: datetime.datetime | None = None,
    ) -> RunDir:
        """Make `<logdir>/<experiment>-<env>-<YYYYmmdd-HHMMSS>-s<seed>` (logdir included, if
        missing) and write `flags` to flags.json. If the name is taken (two runs started in the
        same second) a suffix `-1`, `-2`, ... makes it unique; creation is atomic (`mkdir`), so
        concurrent runs never share a directory. Values JSON cannot hold are written as str()."""
        logdir = Path(logdir)
        logdir.mkdir(parents=True, exist_ok=True)
        stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
        base = f"{_safe(experiment)}-{_safe(env)}-{stamp}-s{seed}"
        for i in range(10_000):
            path = logdir / (base if i == 0 else f"{base}-{i}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"no free run directory name for {logdir / base}")
        run = cls(path)
        _write_json(run.flags_path, flags if flags is not None else {})
        return run

    def write_flags(self, flags: Mapping[str, Any]) -> None:
        """Replace flags.json (a resume that changes the budget or the logging)."""
        _write_json(self.flags_path, flags)

    def write_config(self, record: Mapping[str, Any]) -> None:
        """config.json: what ran (`sebulba.experiment.run_record.run_record`)."""
        _write_json(self.config_path, record, sort_keys=False)

    @classmethod
    def open(cls, path: str | os.PathLike) -> RunDir:
        """An existing run directory (to resume it)."""
        run = cls(Path(path))
        if not run.flags_path.is_file():
            raise FileNotFoundError(f"{path} is not a run directory: it has no {cls.FLAGS}")
        return run

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def flags_path(self) -> Path:
        return self.path / self.FLAGS

    @property
    def config_path(self) -> Path:
        return self.path / self.CONFIG

    @property
    def metrics_csv(self) -> Path:
        return self.path / self.METRICS_CSV

    @property
    def learning_curve_png(self) -> Path:
        return self.path / self.LEARNING_CURVE

    @property
    def tensorboard_dir(self) -> Path:
        """TensorBoard event files live in the run directory itself: `tensorboard --logdir
        <logdir>` shows every run under its directory name."""
        return self.path
