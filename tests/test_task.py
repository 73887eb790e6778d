"""The middleware pipeline: ordering, context renewal, stopping, errors and reuse."""

import dataclasses

import pytest

from sebulba.loop.task import Context, Task


@dataclasses.dataclass
class MyContext(Context):
    env_steps: int = 0
    batch: object = None
    history: list = dataclasses.field(default_factory=list)
    kept_list: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.keep("env_steps", "kept_list")


def test_plain_middleware_run_in_order():
    events = []
    task = Task()
    with task.start(ctx=MyContext()):
        task.use(lambda ctx: events.append("a"))
        task.use(lambda ctx: events.append("b"))
        task.use(lambda ctx: events.append("c"))
        task.run(max_step=2)
    assert events == ["a", "b", "c", "a", "b", "c"]


def test_generator_middleware_onion_order():
    events = []

    def outer(ctx):
        events.append("outer before")
        yield
        events.append("outer after")

    def plain(ctx):
        events.append("plain")

    def inner(ctx):
        events.append("inner before")
        yield
        events.append("inner after")

    task = Task()
    with task.start(ctx=MyContext()):
        task.use(outer)
        task.use(plain)
        task.use(inner)
        task.run(max_step=2)
    one = ["outer before", "plain", "inner before", "inner after", "outer after"]
    assert events == one + one


def test_keep_carries_only_kept_fields():
    seen = []

    def step(ctx):
        seen.append((ctx.total_step, ctx.env_steps, ctx.batch, list(ctx.history), ctx.kept_list))
        ctx.env_steps += 10
        ctx.batch = "data"
        ctx.history.append(ctx.total_step)
        ctx.kept_list.append(ctx.total_step)

    task = Task()
    first = MyContext()
    with task.start(ctx=first):
        task.use(step)
        last = task.run(max_step=3)
        assert task.ctx is last
    assert [s[:4] for s in seen] == [(0, 0, None, []), (1, 10, None, []), (2, 20, None, [])]
    assert seen[0][4] is seen[2][4]  # a kept field is carried as the same object
    assert last.kept_list == [0, 1, 2]
    assert last.history == [2]  # the default_factory gave each iteration a fresh list
    assert first.history == [0] and first.history is not last.history
    assert type(last) is MyContext and last.kept >= {"total_step", "env_steps", "kept_list"}


def test_renew_resets_defaults_and_keeps_runtime_keeps():
    ctx = MyContext(env_steps=5, batch="x", history=[1])
    ctx.keep("batch")
    new = ctx.renew()
    assert (new.env_steps, new.batch, new.history, new.total_step) == (5, "x", [], 0)
    assert new is not ctx and "batch" in new.kept


def test_total_step_counts_iterations():
    steps = []
    task = Task()
    with task.start():  # the default Context
        task.use(lambda ctx: steps.append(ctx.total_step))
        task.run(max_step=4)
        task.run(max_step=2)  # a second run continues the count
    assert steps == [0, 1, 2, 3, 4, 5]


def test_finish_completes_the_current_iteration_then_stops():
    events = []
    task = Task()

    def wrapper(ctx):
        events.append(("before", ctx.total_step))
        yield
        events.append(("after", ctx.total_step))

    def stopper(ctx):
        if ctx.total_step == 1:
            task.finish()

    def later(ctx):
        events.append(("later", ctx.total_step))

    with task.start(ctx=MyContext()):
        task.use(wrapper)
        task.use(stopper)
        task.use(later)
        ctx = task.run()  # max_step=None: runs until finish
        assert task.finished and ctx.total_step == 1
    assert events == [
        ("before", 0), ("later", 0), ("after", 0),
        ("before", 1), ("later", 1), ("after", 1),
    ]


def test_setting_finished_stops_too():
    task = Task()
    with task.start():
        task.use(lambda ctx: setattr(task, "finished", ctx.total_step == 2))
        assert task.run(max_step=100).total_step == 2


def test_max_step_stops():
    calls = []
    task = Task()
    with task.start():
        task.use(lambda ctx: calls.append(ctx.total_step))
        ctx = task.run(max_step=3)
        assert not task.finished
    assert calls == [0, 1, 2] and ctx.total_step == 2


@pytest.mark.parametrize("exc_type", [ValueError, KeyboardInterrupt])
def test_exception_propagates_and_generators_are_closed(exc_type):
    events = []
    error = exc_type("boom")

    def guarded(ctx):
        try:
            events.append("before")
            yield
            events.append("after")  # must not run: a later middleware raised
        finally:
            events.append("finally")

    def never_started(ctx):
        events.append("never")
        yield

    def failing(ctx):
        raise error

    task = Task()
    with task.start():
        task.use(guarded)
        task.use(failing)
        task.use(never_started)
        with pytest.raises(exc_type) as info:
            task.run(max_step=5)
    assert info.value is error
    assert events == ["before", "finally"]


def test_exception_after_yield_closes_outer_generators():
    events = []

    def outer(ctx):
        try:
            yield
            events.append("outer after")
        finally:
            events.append("outer finally")

    def inner(ctx):
        yield
        raise RuntimeError("late")

    task = Task()
    with task.start():
        task.use(outer)
        task.use(inner)
        with pytest.raises(RuntimeError, match="late"):
            task.run(max_step=1)
    assert events == ["outer finally"]


def test_generator_yielding_twice_raises():
    def greedy(ctx):
        yield
        yield

    task = Task()
    with task.start():
        task.use(greedy)
        with pytest.raises(RuntimeError, match="yielded more than once"):
            task.run(max_step=1)


def test_unknown_attribute_assignment_raises():
    ctx = MyContext()
    with pytest.raises(AttributeError, match="no field 'env_step'"):
        ctx.env_step = 1  # typo of env_steps
    with pytest.raises(AttributeError, match="no field 'anything'"):
        Context().anything = 1
    ctx.env_steps = 3  # own fields and private attributes are fine
    ctx._cache = {}
    assert ctx.env_steps == 3


def test_keep_unknown_field_raises():
    with pytest.raises(ValueError, match="nope"):
        MyContext().keep("nope")


def test_use_outside_start_raises():
    task = Task()
    with pytest.raises(RuntimeError, match="inside"):
        task.use(lambda ctx: None)
    with pytest.raises(RuntimeError, match="inside"):
        task.run(max_step=1)


def test_start_twice_raises():
    task = Task()
    with task.start():
        with pytest.raises(RuntimeError, match="already started"):
            task.start()


def test_task_is_reusable_after_the_with_block():
    calls = []
    task = Task()
    with task.start(async_mode=True, ctx=MyContext()):
        assert task.async_mode is True
        task.use(lambda ctx: calls.append("first"))
        task.use(lambda ctx: task.finish())
        task.run(max_step=3)
    assert task.finished is False and task.async_mode is False and task.ctx is None
    with task.start(ctx=MyContext(env_steps=7)):
        task.use(lambda ctx: calls.append(("second", ctx.env_steps)))
        ctx = task.run(max_step=2)
    assert calls == ["first", ("second", 7), ("second", 7)]
    assert ctx.total_step == 1


def test_with_block_resets_even_on_error():
    task = Task()
    with pytest.raises(ValueError):
        with task.start():
            task.use(lambda ctx: None)
            raise ValueError
    with task.start():
        assert task.run(max_step=1).total_step == 0


@pytest.mark.parametrize("bad", [0, -1, 2.0, "3", True])
def test_bad_max_step_raises(bad):
    task = Task()
    with task.start():
        with pytest.raises(ValueError, match="max_step"):
            task.run(max_step=bad)
