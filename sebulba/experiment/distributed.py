"""Multi-process (multi-host) training through `jax.distributed`.

Every process runs the same command with its own process id: its own inferencers and env pools
on its local devices, and one learner over all processes' learner devices. The coordinator
address, process count and process id come from flags, else from the environment variables
SEBULBA_COORDINATOR_ADDRESS, SEBULBA_NUM_PROCESSES and SEBULBA_PROCESS_ID, else from JAX's
cluster detection (SLURM, ...) when `--distributed` is set.

Every process then runs a `PeerWatch` (sebulba/experiment/peers.py): when another process dies
or hangs, it stops within `peer_timeout_s` with an error naming the lost process. JAX's own
heartbeat timeout is set well above it, so the watch, which says what happened, speaks first.
"""

from __future__ import annotations

import atexit
import os

import jax

from sebulba.experiment.peers import PeerWatch
from sebulba.experiment.run_log import NativeStdout

_watch: PeerWatch | None = None


def watch() -> PeerWatch | None:
    """This process's PeerWatch in a multi-process job, else None."""
    return _watch


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, auto: bool = False, peer_timeout_s: float = 60.0) -> bool:
    """Join the job before any other JAX call, and start watching the other processes; returns
    whether this is a multi-process run."""
    global _watch
    if peer_timeout_s <= 0:
        raise ValueError(f"peer_timeout_s must be > 0, got {peer_timeout_s}")
    coordinator_address = coordinator_address or os.environ.get("SEBULBA_COORDINATOR_ADDRESS")
    if num_processes is None and "SEBULBA_NUM_PROCESSES" in os.environ:
        num_processes = int(os.environ["SEBULBA_NUM_PROCESSES"])
    if process_id is None and "SEBULBA_PROCESS_ID" in os.environ:
        process_id = int(os.environ["SEBULBA_PROCESS_ID"])
    if coordinator_address is None and not auto:
        if num_processes not in (None, 1) or process_id not in (None, 0):
            raise ValueError("num_processes / process_id need a coordinator address (--coordinator_address host:port)")
        return False
    if coordinator_address is not None and (num_processes is None or process_id is None):
        raise ValueError("a coordinator address needs num_processes and process_id too")
    if num_processes is not None and not 0 <= (process_id or 0) < num_processes:
        raise ValueError(f"process_id must be in [0, num_processes={num_processes}), got {process_id}")
    # CPU devices talk through gloo (GPUs use NCCL on their own).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               heartbeat_timeout_seconds=int(2 * peer_timeout_s + 30))
    NativeStdout.start()  # gloo prints "[Gloo] Rank 0 is connected to 1 peer ranks..." to fd 1: into the log
    if jax.process_count() == 1:
        return False
    _watch = PeerWatch(jax.process_index(), jax.process_count(), peer_timeout_s).start()
    # Exit handlers run last-registered first: the watch stops before JAX's `clean_up` (registered
    # when jax was imported) shuts its client down under it.
    atexit.register(_watch.stop)
    return True


