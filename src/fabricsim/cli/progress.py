"""The one progress bar of the CLI (plan, sweep): rich, on stderr, only on a terminal (layer L11)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressCallback = Callable[[int, int], None]


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
