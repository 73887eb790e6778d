"""A multi-process job as a user launches one: the same entry point once per process, on
127.0.0.1 through jax.distributed, each process with 2 forced CPU devices."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np

from tests.support.cli import JAX_CACHE, ROOT, child_env

PROCESSES = 2
WAIT_S = 420  # a bound on a hang, never a measurement


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """`processes` processes of `module` with `args` (process flags added), outputs in files."""

    def __init__(self, module: str, args: list[str], workdir: Path, processes: int = PROCESSES,
                 process_args: dict[int, list[str]] | None = None):
        self.address = f"127.0.0.1:{free_port()}"
        env = child_env(XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE),
                        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
        workdir.mkdir(parents=True, exist_ok=True)
        self.logs = [(workdir / f"p{i}.out", workdir / f"p{i}.err") for i in range(processes)]
        self.procs = []
        for i in range(processes):
            process_flags = [f"--coordinator_address={self.address}", f"--num_processes={processes}", f"--process_id={i}"]
            out, err = (open(p, "w") for p in self.logs[i])
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", module, *args, *process_flags, *(process_args or {}).get(i, [])], cwd=ROOT,
                env=env, stdout=out, stderr=err, text=True))

    def output(self, i: int) -> tuple[str, str]:
        return tuple(p.read_text() for p in self.logs[i])

    def wait(self, timeout: float = WAIT_S) -> list[int]:
        """Every process's exit status; kills them all (and fails) past `timeout`."""
        deadline = time.monotonic() + timeout
        try:
            return [p.wait(timeout=max(deadline - time.monotonic(), 1)) for p in self.procs]
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the job did not end within {timeout} s:\n" + self.describe()) from None

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def describe(self) -> str:
        return "\n".join(f"--- process {i} (exit {p.poll()}):\n{self.output(i)[0][-1500:]}\n{self.output(i)[1][-3000:]}"
                         for i, p in enumerate(self.procs))

    def assert_ok(self) -> None:
        codes = self.wait()
        assert codes == [0] * len(self.procs), self.describe()


def complete_checkpoints(run_dir: Path) -> list[int]:
    ckpt = run_dir / "checkpoints"
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit()) if ckpt.exists() else []


def wait_for_checkpoint(job: Job, logdir: Path, at_least: int) -> Path:
    """The job's run directory once it holds a complete checkpoint at or past `at_least` learner steps."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for i, p in enumerate(job.procs):
            assert p.poll() is None, f"process {i} exited early:\n{job.describe()}"
        runs = [r for r in logdir.iterdir() if r.is_dir()] if logdir.exists() else []
        if runs and any(s >= at_least for s in complete_checkpoints(runs[0])):
            return runs[0]
        time.sleep(0.05)
    job.kill()
    raise AssertionError(f"no checkpoint >= {at_least} within {WAIT_S} s:\n{job.describe()}")


def checkpoint_state(run_dir: Path, item: str = "state", step: int | None = None) -> dict:
    """A checkpoint's item (default: the latest's learner state) as numpy arrays."""
    import orbax.checkpoint as ocp

    step = complete_checkpoints(run_dir)[-1] if step is None else step
    path = run_dir / "checkpoints" / str(step) / item
    checkpointer = ocp.PyTreeCheckpointer()
    tree = checkpointer.metadata(path).item_metadata.tree
    return checkpointer.restore(path, restore_args=jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree))


def assert_trees_equal(a, b, what: str) -> None:
    paths_a = jax.tree_util.tree_leaves_with_path(a)
    paths_b = jax.tree_util.tree_leaves_with_path(b)
    assert [p for p, _ in paths_a] == [p for p, _ in paths_b], f"{what}: different structures"
    for (path, x), (_, y) in zip(paths_a, paths_b):
        np.testing.assert_array_equal(x, y, err_msg=f"{what} differ at {jax.tree_util.keystr(path)}")
