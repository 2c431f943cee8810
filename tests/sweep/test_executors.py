"""Executor choice and its one-line errors (no Ray start needed here; see test_ray.py)."""

from __future__ import annotations

import socket
import sys

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.sweep import ExecutorKind, parse_executor
from fabricsim.sweep.executors import LocalExecutor, RayExecutor, check_reachable, make_executor


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_parse_and_make_executor_errors():
    assert parse_executor("ray") is ExecutorKind.RAY
    with pytest.raises(FabricsimError, match="did you mean ray"):
        parse_executor("rayy")
    with pytest.raises(FabricsimError, match="only used with --executor ray"):
        make_executor(ExecutorKind.LOCAL, 2, "127.0.0.1:6379")
    assert isinstance(make_executor(ExecutorKind.RAY, 2, None), RayExecutor)


def test_local_pool_maps_every_item():
    with LocalExecutor(2) as pool:
        assert sorted(pool.map_unordered(abs, range(-5, 5))) == sorted(abs(i) for i in range(-5, 5))


def test_unreachable_ray_address_fails_fast_with_one_line():
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(FabricsimError) as info, RayExecutor(2, address):
        pass
    assert info.value.field == "address" and "unreachable" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("address", ["nohost", "ray://host:port", "host:"])
def test_unparsable_ray_address(address):
    with pytest.raises(FabricsimError, match="cannot parse Ray address"):
        check_reachable(address)


def test_missing_ray_is_a_user_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(FabricsimError, match="ray is not installed"), RayExecutor(1):
        pass


class _NoClusterRay:
    """Stands in for the ray module when no cluster runs at the address (as ray.init(address='auto'))."""

    @staticmethod
    def is_initialized() -> bool:
        return False

    @staticmethod
    def init(**_kwargs: object) -> None:
        raise ConnectionError("Could not find any running Ray instance.\nPlease specify the one to connect to.")


def test_ray_init_failure_is_a_one_line_user_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", _NoClusterRay)
    with pytest.raises(FabricsimError) as info, RayExecutor(1, "auto"):
        pass
    assert "cannot start or join auto: Could not find any running Ray instance." in str(info.value)
    assert "\n" not in str(info.value)
