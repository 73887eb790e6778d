"""The loop of an env manager's worker process: one env built from its pickled factory,
commands and answers pickled through the pipe, large observations in shared memory."""

from __future__ import annotations

import pickle
import traceback
from multiprocessing.connection import Connection

import gymnasium as gym
import numpy as np

from envs.process.env_host import EnvHost
from envs.process.shm import SharedBuffers
from envs.process.supervisor import DONE, READY, error_message, exit_with_parent, send_failure

# Commands: pickled (name, payload).
RESET, STEP, ATTACH, CLOSE = "reset", "step", "attach", "close"


def space_of(space) -> tuple | None:
    """(shape, dtype) of a Box observation space (the only kind shared memory can hold)."""
    if not isinstance(space, gym.spaces.Box):
        return None
    return tuple(space.shape), np.dtype(space.dtype).str


def env_worker_main(conn: Connection, factory_bytes: bytes) -> None:
    shm = host = None
    try:
        exit_with_parent()
        host = EnvHost(pickle.loads(factory_bytes)())
        conn.send_bytes(READY + pickle.dumps(space_of(host.env.observation_space)))
        while True:
            cmd, payload = pickle.loads(conn.recv_bytes())
            if cmd == ATTACH:
                layout, name = payload
                shm = SharedBuffers(layout, name)
                host.obs_slots = shm.arrays["obs"]
                continue
            if cmd == CLOSE:
                break
            try:  # an env's exception is answered, and the worker lives on (retry_type="reset")
                if cmd == STEP:
                    out = host.step(*payload)
                elif cmd == RESET:
                    out = host.reset(payload)
                else:
                    raise ValueError(f"unknown command {cmd!r}")
                answer = DONE + pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                answer = error_message(e, traceback.format_exc())
            conn.send_bytes(answer)
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass
    except BaseException as e:  # everything else reaches the manager with its traceback
        send_failure(conn, e)
    finally:
        if host is not None:
            try:
                host.close()
            except Exception:
                pass
        if shm is not None:
            host.obs_slots = None
            shm.close()
