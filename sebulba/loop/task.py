"""A middleware pipeline in the style of DI-engine's ``task`` (di-engine-docs.readthedocs.io), stdlib only.

The learner loop is a list of middleware run once per iteration on a fresh ``Context``. A plain
middleware is a callable taking the context; a generator middleware runs up to its single
``yield`` in order, and its rest after all later middleware, in reverse order (the onion model).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from typing import Any, Callable, Generator, Optional

Middleware = Callable[["Context"], Optional[Generator[None, None, None]]]


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


@dataclasses.dataclass(kw_only=True)
class Context:
    """Per-iteration data passed between middleware; subclass it as a dataclass to add fields.

    Only declared fields (and private ``_names``) may be assigned, so a typo or an undeclared
    variable fails loudly instead of silently passing nothing to the next middleware.
    ``total_step`` (0-based iteration index) is always kept. The base is ``kw_only`` so
    subclasses may declare fields without defaults (``renew`` needs them to be kept).
    """

    total_step: int = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in _field_names(type(self)):
            raise AttributeError(
                f"{type(self).__name__} has no field {name!r}; declare it in the Context dataclass"
            )
        object.__setattr__(self, name, value)

    def keep(self, *names: str) -> None:
        """Mark fields whose values carry over to the next iteration's context."""
        unknown = [n for n in names if n not in _field_names(type(self))]
        if unknown:
            raise ValueError(f"{type(self).__name__} cannot keep unknown field(s) {unknown}")
        self._kept = self.kept | frozenset(names)

    @property
    def kept(self) -> frozenset[str]:
        """Names of the fields carried to the next iteration (always includes ``total_step``)."""
        return getattr(self, "_kept", frozenset()) | {"total_step"}

    def renew(self) -> Context:
        """A fresh instance: kept fields copied, every other field back to its default."""
        kept = self.kept
        fields = [f for f in dataclasses.fields(self) if f.name in kept]
        new = type(self)(**{f.name: getattr(self, f.name) for f in fields if f.init})
        for f in fields:
            if not f.init:
                setattr(new, f.name, getattr(self, f.name))
        new._kept = new.kept | kept  # keeps added at run time carry over too
        return new


def _resume(gen: Generator[Any, Any, Any]) -> None:
    """Run a generator middleware's after-yield part; it must not yield again."""
    try:
        next(gen)
    except StopIteration:
        return
    raise RuntimeError(f"generator middleware {gen.__qualname__} yielded more than once")


class Task:
    """Runs middleware over a fresh context per iteration, in the calling thread.

    ``async_mode`` is only stored (``task.async_mode``) for middleware to read: our fetch
    middleware uses it to decide whether actors run in threads. Unlike DI-engine, where
    async_mode runs middleware concurrently, the pipeline itself is always sequential, which keeps
    the learner deterministic and puts the asynchrony in the actor threads.
    """

    def __init__(self) -> None:
        self._middleware: list[Middleware] = []
        self._started = False
        self._fresh = False  # ctx has not been used by an iteration yet
        self.finished = False
        self.async_mode = False
        self.ctx: Optional[Context] = None

    def start(self, async_mode: bool = False, ctx: Optional[Context] = None) -> Task:
        """Begin a session; use as ``with task.start(...):``. Leaving the block resets the task."""
        if self._started:
            raise RuntimeError("task already started; leave the current `with task.start()` first")
        if ctx is not None and not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a Context, got {type(ctx).__name__}")
        self._started, self._fresh, self.finished = True, True, False
        self.async_mode = bool(async_mode)
        self.ctx = ctx if ctx is not None else Context()
        return self

    def __enter__(self) -> Task:
        if not self._started:
            raise RuntimeError("enter the task through `with task.start(...)`")
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._middleware.clear()
        self._started = self._fresh = self.finished = self.async_mode = False
        self.ctx = None

    def use(self, middleware: Middleware) -> Task:
        """Append a middleware (a callable taking the context, possibly a generator function)."""
        if not self._started:
            raise RuntimeError("task.use() must be called inside `with task.start(...)`")
        if not callable(middleware):
            raise TypeError(f"middleware must be callable, got {middleware!r}")
        self._middleware.append(middleware)
        return self

    def finish(self) -> None:
        """Stop after the current iteration completes."""
        self.finished = True

    def run(self, max_step: Optional[int] = None) -> Context:
        """Run iterations until ``max_step`` of them ran or a middleware finished the task."""
        if not self._started:
            raise RuntimeError("task.run() must be called inside `with task.start(...)`")
        if max_step is not None and (
            not isinstance(max_step, int) or isinstance(max_step, bool) or max_step < 1
        ):
            raise ValueError(f"max_step must be a positive int or None, got {max_step!r}")
        step = 0
        while not self.finished and (max_step is None or step < max_step):
            if not self._fresh:
                total = self.ctx.total_step
                self.ctx = self.ctx.renew()
                self.ctx.total_step = total + 1
            self._fresh = False
            self._iterate(self.ctx)
            step += 1
        return self.ctx

    def _iterate(self, ctx: Context) -> None:
        # The exit stack closes every generator (running its `finally`) even when a later
        # middleware raises; closing a finished generator is a no-op.
        with contextlib.ExitStack() as stack:
            pending: list[Generator[Any, Any, Any]] = []
            for middleware in self._middleware:
                out = middleware(ctx)
                if inspect.isgenerator(out):
                    stack.callback(out.close)
                    try:
                        next(out)
                    except StopIteration:
                        continue
                    pending.append(out)
            for gen in reversed(pending):
                _resume(gen)
