"""dm_control's suite, native: EnvPool's DMC ids (`CheetahRun-v1`, `WalkerWalk-v1`, ...) on the
MuJoCo kernel, each task exact to `dm_control.suite.load(domain, task)`.

`ids.py` names the ids (without importing mujoco or dm_control), `tasks.py` maps them to their task
classes (one file per family of domains), `backend.py` builds the pools, `render.py` their frames.
"""
