"""Mistakes in what a user asked for, told in one line by the entry points.

Validation across the project raises ValueError (bad values), ImportError (a missing extra, e.g.
box2d) or FileNotFoundError (a run directory that is not one). Raised while a run is being set up
(flags into configs, the env spec, the agent, the run directory, the loop), they are the user's
mistakes: `user_input()` turns them into a `UserError`, which the CLI prints as one line (`--debug`:
the whole traceback). Anything else, and anything raised once training runs, is a bug or a
failure, and keeps its traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

USER_MISTAKES = (ValueError, ImportError, FileNotFoundError)


class UserError(Exception):
    """A mistake in the run's input; its message says what, and what to do."""


@contextlib.contextmanager
def user_input() -> Iterator[None]:
    """Re-raise the user's mistakes (USER_MISTAKES) raised inside as UserError, cause kept."""
    try:
        yield
    except USER_MISTAKES as e:
        raise UserError(str(e)) from e
