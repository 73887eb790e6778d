"""`ClosedOnExit`: a context manager, and closed when garbage-collected, for objects with an
idempotent `close()` that frees processes or threads (the pool, the env managers)."""

from __future__ import annotations

from typing import Self


class ClosedOnExit:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to report to
            pass
