"""Weights & Biases logging of a run (`--wandb`): each metrics row (what metrics.csv and
TensorBoard get), the run's config.json as the W&B config, and learning_curve.png at the end,
through the `wandb` package (the optional extra: `pip install -e ".[wandb]"`), imported only by a
run that asks for it.

One W&B run per run directory: its id is kept in RUN_DIR/wandb_run_id, so `--resume` goes on in
the same W&B run (`resume="allow"`; rows logged after the checkpoint a run resumes from are
logged again by the resumed run). W&B's local files go to RUN_DIR/wandb/ (or $WANDB_DIR)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sebulba.experiment.run_dir import RunDir

MODES = ("online", "offline", "disabled")
INSTALL = 'pip install -e ".[wandb]"'
ID_FILE = "wandb_run_id"
DEFAULT_PROJECT = "sebulba"
EVAL_STEP = "eval_env_steps"  # the x axis of an evaluation's figures, as in TensorBoard


@dataclasses.dataclass(frozen=True)
class WandbFlags:
    """Where a run logs in W&B. project: None is $WANDB_PROJECT, else "sebulba"; entity (a user or
    a team): None is your default one; mode: None is $WANDB_MODE, else "online"."""

    project: str | None = None
    entity: str | None = None
    mode: str | None = None

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"wandb_mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if importlib.util.find_spec("wandb") is None:
            raise ImportError(f"W&B logging (--wandb) needs the wandb package: {INSTALL}")


class WandbLogger:
    """A run directory's W&B run: `log` each metrics row, `finish` with the learning curve."""

    def __init__(self, run: Any):
        self.run = run
        self._axes: set[str] = set()  # the metrics given their x axis (define_metric)

    @classmethod
    def start(cls, run_dir: RunDir, flags: WandbFlags) -> WandbLogger:
        """Start (or, when the run directory has one, go on with) the run directory's W&B run,
        named after it, with config.json as its config. A failure (no API key, no network in
        online mode, a bad project name) is a ValueError in one line."""
        import wandb

        id_path = run_dir.path / ID_FILE
        run_id = id_path.read_text().strip() if id_path.is_file() else secrets.token_hex(6)
        config = json.loads(run_dir.config_path.read_text()) if run_dir.config_path.is_file() else {}
        mode = flags.mode or os.environ.get("WANDB_MODE") or "online"
        if mode not in MODES:
            raise ValueError(f"WANDB_MODE must be one of {', '.join(MODES)} (or pass --wandb_mode), got {mode!r}")
        try:
            run = wandb.init(
                project=flags.project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT, entity=flags.entity,
                mode=mode, id=run_id, name=run_dir.name, config=config, allow_val_change=True,
                dir=None if os.environ.get("WANDB_DIR") else run_dir.path,
                resume="allow" if mode == "online" else None,  # offline: wandb ignores it, with a warning
            )
        except wandb.Error as e:
            hint = "; --wandb_mode=offline logs without a network (`wandb sync` uploads it later)" if mode == "online" else ""
            raise ValueError(f"W&B could not start: {' '.join(str(e).split()).rstrip('.')}{hint}") from e
        if not id_path.is_file() and mode != "disabled":
            id_path.write_text(run_id + "\n")
        return cls(run)

    def log(self, row: Mapping[str, float]) -> None:
        """One metrics row of real scalars; NaN (no finished episode yet) and infinities are left
        out. An evaluation's figures are drawn against eval_env_steps, the rest against env_steps."""
        values = {k: v for k, v in row.items() if math.isfinite(v)}
        for key in values.keys() - self._axes - {"env_steps", EVAL_STEP}:
            evaluation = key.startswith("eval_") and EVAL_STEP in values
            self.run.define_metric(key, step_metric=EVAL_STEP if evaluation else "env_steps")
            self._axes.add(key)
        self.run.log(values)

    def finish(self, learning_curve: Path | None = None, failed: bool = False) -> None:
        """Send the learning-curve PNG (when there is one) and end the W&B run (failed: marked so)."""
        import wandb

        try:
            if learning_curve is not None and learning_curve.is_file():
                self.run.log({"learning_curve": wandb.Image(str(learning_curve))})
        finally:
            self.run.finish(exit_code=1 if failed else 0)
