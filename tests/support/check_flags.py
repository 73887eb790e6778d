"""Parse entry points' command lines with their own flags, without running them: for each
`experiments.<x>` a forked child imports it (which defines its flags) and parses each command's
arguments with absl's FLAGS, as `python -m experiments.<x> ...` would before training. One import
of JAX and the library serves every entry point (each child inherits it), and the entry points'
flags, defined on one global FLAGS, never meet.

    python check_flags.py < [[module, [arg, ...]], ...]     # prints [error or null, ...] as JSON
"""

import importlib
import json
import os
import sys

import envs  # noqa: F401 - imported once here, inherited by every child
import sebulba  # noqa: F401
from absl import flags

HELP_FLAGS = ("--help", "-help", "-h", "--helpshort", "--helpfull", "-?", "--helpxml")


def check_module(module: str, commands: list[list[str]]) -> list[str | None]:
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001
        return [f"import {module} failed: {type(e).__name__}: {e}"] * len(commands)
    errors = []
    for args in commands:
        args = [a for a in args if a.split("=")[0] not in HELP_FLAGS]  # --help: the flags exist is all it needs
        try:
            flags.FLAGS([module, *args])
            errors.append(None)
        except flags.Error as e:
            errors.append(f"{type(e).__name__}: {e}")
        flags.FLAGS.unparse_flags()
    return errors


def main() -> None:
    commands = json.load(sys.stdin)
    by_module: dict[str, list[int]] = {}
    for i, (module, _) in enumerate(commands):
        by_module.setdefault(module, []).append(i)
    errors: list[str | None] = [None] * len(commands)
    for module, indices in by_module.items():
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                result = check_module(module, [commands[i][1] for i in indices])
            except BaseException as e:  # noqa: BLE001
                result = [f"checking failed: {type(e).__name__}: {e}"] * len(indices)
            with os.fdopen(write, "w") as f:
                json.dump(result, f)
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            text = f.read()
        os.waitpid(pid, 0)
        result = json.loads(text) if text else [f"the child checking {module} died"] * len(indices)
        for i, error in zip(indices, result):
            errors[i] = error
    json.dump(errors, sys.stdout)


if __name__ == "__main__":
    main()
