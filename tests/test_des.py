"""The deterministic event kernel."""

import pytest

from fabricsim.des import EventLoop


def test_events_run_in_time_then_priority_then_fifo_order():
    loop, seen = EventLoop(), []
    loop.schedule(2.0, lambda: seen.append("late"))
    loop.schedule(1.0, lambda: seen.append("b"), priority=1)
    loop.schedule(1.0, lambda: seen.append("a"), priority=0)
    loop.schedule(1.0, lambda: seen.append("c"), priority=1)
    assert loop.run() == 2.0
    assert seen == ["a", "b", "c", "late"]
    assert loop.events_run == 4 and loop.pending == 0


def test_callbacks_can_schedule_and_cancel():
    loop, seen = EventLoop(), []

    def first():
        seen.append(loop.now_s)
        loop.schedule(0.5, lambda: seen.append(loop.now_s))

    loop.schedule(1.0, first)
    doomed = loop.schedule(1.2, lambda: seen.append("never"))
    EventLoop.cancel(doomed)
    loop.run()
    assert seen == [1.0, 1.5]


def test_run_until_stops_and_resumes():
    loop, seen = EventLoop(), []
    for t in (1.0, 2.0, 3.0):
        loop.schedule_at(t, lambda t=t: seen.append(t))
    loop.run(until_s=2.0)
    assert seen == [1.0, 2.0] and loop.pending == 1
    loop.run()
    assert seen == [1.0, 2.0, 3.0]


def test_no_scheduling_in_the_past():
    loop = EventLoop()
    with pytest.raises(ValueError):
        loop.schedule(-1.0, lambda: None)
    loop.schedule(1.0, lambda: None)
    loop.run()
    with pytest.raises(ValueError):
        loop.schedule_at(0.5, lambda: None)


def test_identical_inputs_give_identical_runs():
    def trace():
        loop, seen = EventLoop(), []
        for i in range(50):
            loop.schedule((i * 7) % 5, lambda i=i: seen.append(i), priority=i % 3)
        loop.run()
        return seen

    assert trace() == trace()


def test_loops_are_independent():
    one, two = EventLoop(), EventLoop()
    one.schedule(1.0, lambda: None)
    assert two.pending == 0 and one.pending == 1
