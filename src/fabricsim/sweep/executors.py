"""Where sweep tasks run (layer L8): a local process pool (default) or a Ray cluster.

Both executors have one method, :meth:`map_unordered`, that applies a picklable one-argument function
to every item and yields the results as they complete, keeping only a bounded window of items in
flight (so a million-task sweep never queues a million futures, and a killed sweep loses little).

The local pool uses the ``forkserver`` start method: workers are forked from a clean single-threaded
server, never from the driver, whose progress-bar and pool-manager threads make ``fork`` unsafe. The
modules that define the runners are preloaded into that server (``set_forkserver_preload``, which
acts once per process: when the server starts), so a new worker starts in milliseconds instead of
re-importing fabricsim. As with any non-``fork`` pool, a script that calls a sweep must guard its
entry point with ``if __name__ == "__main__":``.

A local worker dies with the driver: a ``kill -9`` of the sweep must not leave its workers (and
through them the forkserver and resource tracker, which live while a worker holds their pipes)
running as orphans, nor its multiprocessing temp folder (``pymp-*``) behind. Each worker starts a
watchdog thread (:func:`watch_driver`) that waits for the driver process to end (a pidfd on Linux,
a poll elsewhere), removes the driver's temp folder (the driver, killed, cannot) and exits. Linux's
``PR_SET_PDEATHSIG`` would not do: a worker's parent is the forkserver, not the driver.
Ray is an optional extra: it is imported only when the Ray executor is entered. An address that does
not accept a TCP connection within :data:`RAY_CONNECT_TIMEOUT_S` is reported at once as a user error
(``ray.init`` itself would retry for minutes).
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.util
import os
import select
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from enum import StrEnum
from itertools import islice
from typing import Any, Protocol

from fabricsim.errors import FabricsimError, parse_choice

RAY_CONNECT_TIMEOUT_S = 3.0  # a reachable head node answers a TCP connect in milliseconds
WINDOW_PER_WORKER = 2  # items in flight per worker: one running, one queued
LOCAL_START_METHOD = "forkserver"
DRIVER_POLL_S = 0.5  # how often a worker looks for its driver where no pidfd exists (not Linux)
ORPHAN_EXIT_CODE = 3  # a worker's exit status when it outlived its driver


class ExecutorKind(StrEnum):
    LOCAL = "local"
    RAY = "ray"


class Executor(Protocol):
    """Runs ``fn`` over items, yielding results in completion order."""

    workers: int

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]: ...


def parse_executor(name: str) -> ExecutorKind:
    return parse_choice("executor", name, ExecutorKind)


def _windowed(
    submit: Callable[[Any], Any],
    wait_any: Callable[[set[Any]], tuple[Any, set[Any]]],
    items: Iterable[Any],
    window: int,
) -> Iterator[Any]:
    """Keep ``window`` submissions in flight; yield each finished handle and top the window up."""
    source = iter(items)
    pending = {submit(item) for item in islice(source, window)}
    while pending:
        done, pending = wait_any(pending)
        yield from done
        for item in islice(source, len(done)):
            pending.add(submit(item))


def _wait_for_exit(pid: int) -> None:
    """Return once process ``pid`` has ended: blocks on a pidfd (Linux >= 5.3), else polls."""
    try:
        fd = os.pidfd_open(pid)  # refers to this process only: no pid reuse race
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # not Linux, or an old kernel: poll
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:  # exists, owned by someone else
                pass
            time.sleep(DRIVER_POLL_S)
    try:
        select.select([fd], [], [])  # readable once the process has exited
    finally:
        os.close(fd)


def _exit_with_driver(driver_pid: int, temp_dir: str | None) -> None:
    _wait_for_exit(driver_pid)
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)  # the other workers may be removing it too
    os._exit(ORPHAN_EXIT_CODE)


def watch_driver(driver_pid: int, temp_dir: str | None) -> None:
    """Pool-worker initializer: a daemon thread ends this worker (and removes the driver's
    multiprocessing temp folder ``temp_dir``) as soon as the driver ``driver_pid`` has ended."""
    watcher = threading.Thread(
        target=_exit_with_driver, args=(driver_pid, temp_dir), name="fabricsim-driver-watch", daemon=True
    )
    watcher.start()


class LocalExecutor:
    """A ``concurrent.futures`` process pool with a fixed number of workers."""

    def __init__(self, workers: int, preload: tuple[str, ...] = ()) -> None:
        self.workers = workers
        self.preload = preload
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalExecutor:
        context = multiprocessing.get_context(LOCAL_START_METHOD)
        if LOCAL_START_METHOD == "forkserver":
            context.set_forkserver_preload(["__main__", "fabricsim.sweep.tasks", __name__, *self.preload])
        temp_dir = multiprocessing.util.get_temp_dir()  # pymp-*: the forkserver's socket lives there
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=context, initializer=watch_driver, initargs=(os.getpid(), temp_dir)
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        pool = self._pool
        if pool is None:
            raise RuntimeError("LocalExecutor used outside its 'with' block")

        def wait_any(pending: set[Future[Any]]) -> tuple[set[Future[Any]], set[Future[Any]]]:
            done, rest = wait(pending, return_when=FIRST_COMPLETED)
            return done, set(rest)

        for future in _windowed(lambda item: pool.submit(fn, item), wait_any, items, self.workers * WINDOW_PER_WORKER):
            yield future.result()


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise FabricsimError("executor", "ray is not installed", "pip install 'fabricsim[ray]'") from None


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a ``host:port`` or ``ray://host:port`` address; None for auto/local."""
    bare = address.removeprefix("ray://")
    if bare in ("auto", "local"):
        return None
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise FabricsimError(
            "address", f"cannot parse Ray address {address!r}", "use HOST:PORT, ray://HOST:PORT or auto"
        )
    return host, int(port)


def check_reachable(address: str, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Raise a user error unless the Ray head at ``address`` accepts a TCP connection in ``timeout_s``."""
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise FabricsimError(
            "address",
            f"Ray cluster at {address} is unreachable ({reason})",
            "start it with 'ray start --head' or fix --address",
        ) from None


class RayExecutor:
    """Tasks as Ray remote calls: joins a running cluster (``address``) or starts a local one."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        self.workers = workers
        self.address = address
        self._ray: Any = None
        self._owned = False

    def __enter__(self) -> RayExecutor:
        if self.address is not None:
            check_reachable(self.address)
        ray = _import_ray()
        if not ray.is_initialized():
            self._connect(ray)
        self._ray = ray
        return self

    def _connect(self, ray: Any) -> None:
        try:
            if self.address is None:
                ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=self.address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "a local Ray instance"
            raise FabricsimError("address", f"cannot start or join {where}: {' '.join(str(exc).split())}") from None
        self._owned = True

    def __exit__(self, *exc: object) -> None:
        if self._owned and self._ray is not None:
            self._ray.shutdown()
        self._ray = None
        self._owned = False

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        ray = self._ray
        if ray is None:
            raise RuntimeError("RayExecutor used outside its 'with' block")
        remote = ray.remote(_call)
        fn_ref = ray.put(fn)

        def wait_any(pending: set[Any]) -> tuple[list[Any], set[Any]]:
            done, rest = ray.wait(list(pending), num_returns=1)
            return done, set(rest)

        window = self._cluster_cpus(ray) * WINDOW_PER_WORKER
        for ref in _windowed(lambda item: remote.remote(fn_ref, item), wait_any, items, window):
            yield ray.get(ref)

    def _cluster_cpus(self, ray: Any) -> int:
        return max(1, int(ray.cluster_resources().get("CPU", self.workers)))


def make_executor(
    kind: ExecutorKind, workers: int, address: str | None, preload: tuple[str, ...] = ()
) -> LocalExecutor | RayExecutor:
    """The executor of ``kind``; ``address`` is only for Ray, ``preload`` (module names) only for local.
    ``workers`` was checked at the API edge (a positive count)."""
    if kind is ExecutorKind.LOCAL:
        if address is not None:
            raise FabricsimError("address", "only used with --executor ray", "drop --address or add --executor ray")
        return LocalExecutor(workers, preload)
    return RayExecutor(workers, address)
