"""``fabricsim traffic`` at flow fidelity reports its progress (issue 27: a 65,536-host run took
seconds with nothing shown): flows finished after each event, up to all of them."""

from __future__ import annotations

from fabricsim import api


def test_traffic_reports_flows_done_after_each_event() -> None:
    calls: list[tuple[int, int]] = []
    result = api.traffic("permutation", topology="fat-tree:k=8", on_progress=lambda d, t: calls.append((d, t)))
    assert len(calls) == result.events
    assert all(total == result.flows for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == result.flows and all(isinstance(d, int) for d in done)


def test_progress_does_not_change_the_result() -> None:
    quiet = api.traffic("all-to-all", topology="fat-tree:k=4", routing="spray")
    watched = api.traffic("all-to-all", topology="fat-tree:k=4", routing="spray", on_progress=lambda d, t: None)
    assert quiet.to_json() == watched.to_json()
