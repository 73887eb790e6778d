"""Runs CleanRL's `cleanrl/sac_continuous_action.py` (PyTorch SAC),
`cleanrl/td3_continuous_action_jax.py` (JAX TD3) or `cleanrl/ppo_continuous_action.py` (PyTorch PPO) on HalfCheetah-v5 (or --env-id) as a subprocess, timed whole
(interpreter start, imports, JIT and training), in CleanRL's own venv; prints one JSON line. The
peer for our SAC/TD3 presets (issue 38) and PPO's (the mujoco suite, issue 55). CleanRL's scripts target gymnasium 0.29; cleanrl.patch
beside this file (against github.com/vwxyzjn/cleanrl fe8d8a03c41a7ef5b523e2e354bd01c363e786bb)
ports them to gymnasium 1.x's vector API (same-step autoreset, `final_obs`, dict-of-arrays
`final_info`) and changes nothing else: algorithm, hyperparameters and networks are CleanRL's
defaults, but for --env-id, --total-timesteps, --seed and whatever EXTRA flags are passed on.

    python cleanrl_run.py CLEANRL_DIR {sac|td3|ppo} TOTAL_STEPS SEED [--env-id ENV] [EXTRA ...]

CLEANRL_DIR is the patched checkout's root (it holds cleanrl/ and cleanrl_utils/). final_return is
the mean of the last 20 episodes' returns the script itself printed ("global_step=...,
episodic_return=..."), episodes those prints as [global_step, return] pairs; sps is the script's own last "SPS:" print (steps over its training loop,
setup excluded), sps_wall is steps over the whole wall time. The script's output goes to
log_path; its TensorBoard runs/ to a temporary folder. The environment is passed on: on a busy
host, torch's SAC runs ~10x faster with OMP_NUM_THREADS=1 than with its default intra-op threads.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

directory, agent, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra = sys.argv[5:]
directory = os.path.abspath(directory)
script = {"sac": "sac_continuous_action.py", "td3": "td3_continuous_action_jax.py", "ppo": "ppo_continuous_action.py"}[agent]
env_id = "HalfCheetah-v5"
if "--env-id" in extra:  # the env is the caller's; the rest of EXTRA goes to the script as given
    at = extra.index("--env-id")
    env_id = extra[at + 1]
    extra = extra[:at] + extra[at + 2:]
command = [sys.executable, f"{directory}/cleanrl/{script}", "--env-id", env_id,
           "--total-timesteps", str(steps), "--seed", str(seed), "--no-track", "--no-capture-video"]
if agent == "td3":
    command += ["--no-save-model", "--no-upload-model"]
command += extra
workdir = tempfile.mkdtemp(prefix=f"cleanrl_{agent}_")
log_path = f"{workdir}/stdout.log"
# cleanrl_utils is imported from the checkout's root, as CleanRL's own `uv run` would find it
env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [directory, os.environ.get("PYTHONPATH")])))
with open(log_path, "w") as log:
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
output = open(log_path).read()
if done.returncode != 0:
    sys.stderr.write(output[-4000:])
    sys.exit(f"{script} exited {done.returncode}; its output: {log_path}")
episodes = [[int(step), float(r)] for step, r in
            re.findall(r"global_step=(\d+), episodic_return=\[?([-+0-9.eEnaif]+)", output)]
returns = [r for _, r in episodes]
sps = re.findall(r"^SPS: (\d+)", output, re.M)
print(json.dumps({"agent": f"cleanrl_{agent}", "env": env_id, "steps": steps, "seed": seed,
                  "wall_s": round(wall, 2),
                  "final_return": sum(returns[-20:]) / len(returns[-20:]) if returns else None,
                  "episodes": episodes, "sps": int(sps[-1]) if sps else None,
                  "sps_wall": round(steps / wall, 1), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                  "log_path": log_path}))
