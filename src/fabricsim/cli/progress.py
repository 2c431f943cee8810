"""Progress on stderr, only on a terminal (layer L11): the one progress bar of the CLI (plan,
sweep) and, for work without a count (validate, a simulated step, a packet run that may first
compile its kernel, a serving run), a spinner with the elapsed time once the work has taken
:data:`NOTICE_AFTER_S`. Both are rich displays that vanish when the work ends, so stdout, JSON,
pipes and tests see nothing of them."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressCallback = Callable[[int, int], None]

NOTICE_AFTER_S = 2.0  # issue 27: show progress on anything that takes more than ~2 s
PACKET_LABEL = "packet simulation (the first run of this version compiles its kernel: a minute or more)"


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[ProgressCallback | None]:
    """An ``on_progress(done, total)`` callback drawing a bar labelled ``label`` on stderr, or None
    when ``enabled`` is false or stderr is not a terminal (JSON runs, pipes, tests)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        yield update


@contextmanager
def working(label: str) -> Iterator[None]:
    """A spinner labelled ``label`` with the elapsed time on stderr, shown only if the block runs
    longer than :data:`NOTICE_AFTER_S` and stderr is a terminal; removed when the block ends."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    spinner = Progress(SpinnerColumn(), TextColumn(label), TimeElapsedColumn(), console=Console(stderr=True),
                       transient=True)  # fmt: skip
    spinner.add_task(label, total=None)  # the elapsed time counts from here
    lock = threading.Lock()
    state = {"shown": False, "over": False}

    def show() -> None:
        with lock:
            if not state["over"]:
                spinner.start()
                state["shown"] = True

    timer = threading.Timer(NOTICE_AFTER_S, show)
    timer.daemon = True
    if NOTICE_AFTER_S > 0:
        timer.start()
    else:  # at once (tests)
        show()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["over"] = True
            if state["shown"]:
                spinner.stop()
