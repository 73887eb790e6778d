"""dm_control's suite as Gymnasium ids ("dm_control/cheetah-run-v0", ...: Shimmy's
DmControlCompatibilityV0) on the MuJoCo installed here, for a peer's own script: its env id
`benchmarks.peers.dm_control_shimmy:dm_control/cheetah-run-v0` makes Gymnasium import this module
first. dm_control gets the one patch the tests give it (tests/support/dm_control_suite.py: the
names MuJoCo 4.0 dropped, out of its table of array sizes), then Shimmy registers the suite's ids
(Gymnasium 1.x no longer loads them from Shimmy's entry point by itself). No rendering: dm_control
opens no GL context (MUJOCO_GL=disable), as with EGL open torch's optimizer segfaulted on import
here (torch 2.14, 2026-11-30)."""

import os

os.environ.setdefault("MUJOCO_GL", "disable")  # before dm_control is imported

from tests.support.dm_control_suite import patch_dm_control  # noqa: E402

patch_dm_control()

import importlib  # noqa: E402

importlib.import_module("shimmy")  # registers the dm_control/* ids
