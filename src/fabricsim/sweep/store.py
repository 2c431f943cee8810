"""The sweep result store (layer L8): one SQLite file, one row per task, written as tasks finish.

Design for resumability: the driver process is the only writer; each outcome is committed in its own
transaction as soon as its task returns, in WAL mode, so a killed sweep loses at most the tasks in
flight. ``task_id`` is the primary key (UNIQUE), so a task can never be stored twice; a restarted
sweep asks :meth:`ResultStore.stored_ids` and skips those tasks. Rows hold only pure functions of the
task (no timestamps, no worker ids), so a resumed store equals an uninterrupted one row for row, and
:meth:`ResultStore.rows` returns them in task-id order (the deterministic merge order).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.sweep.tasks import TaskOutcome
from fabricsim.textfile import check_output_path

SCHEMA_VERSION = "1"
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 database (sqlite.org/fileformat.html)
COLUMNS = ("task_id", "kind", "params_json", "status", "result_json", "error")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    task_id TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL,
    params_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    result_json TEXT,
    error TEXT
);
"""


class ResultStore:
    """An open store. Create it with :func:`open_store`; close it with ``with`` or :meth:`close`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def stored_ids(self) -> set[str]:
        """Ids of every task already in the store (done or failed)."""
        return {row[0] for row in self._db.execute("SELECT task_id FROM results")}

    def add(self, outcome: TaskOutcome) -> bool:
        """Store one outcome in its own transaction; False if the task id was already stored."""
        with self._db:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?)",
                (
                    outcome.task_id,
                    outcome.kind,
                    outcome.params_json,
                    outcome.status,
                    outcome.result_json,
                    outcome.error,
                ),
            )
        return cursor.rowcount == 1

    def rows(self, task_ids: Collection[str] | None = None) -> list[TaskOutcome]:
        """Stored outcomes sorted by task id; only ``task_ids`` when given."""
        wanted = None if task_ids is None else set(task_ids)
        return [
            TaskOutcome(*row)
            for row in self._db.execute(f"SELECT {', '.join(COLUMNS)} FROM results ORDER BY task_id")
            if wanted is None or row[0] in wanted
        ]


@contextmanager
def _user_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise FabricsimError("db", f"cannot use {path} as a sweep store: {exc}", "give a new --db path") from None


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if version is None:
        with db:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    elif version[0] != SCHEMA_VERSION:
        raise FabricsimError("db", f"{path} has store schema {version[0]}, expected {SCHEMA_VERSION}", "use a new --db")
    columns = tuple(row[1] for row in db.execute("PRAGMA table_info(results)"))
    if columns != COLUMNS:
        raise FabricsimError("db", f"{path} holds a different 'results' table", "give a new --db path")


def check_store(path: str | Path) -> Path:
    """``path`` as a place for a store, checked without writing anything: nothing yet (in an existing,
    writable folder), an empty file, or a file that starts as a SQLite database. Cheap, so a sweep
    checks its ``--db`` before expanding its spec; :func:`open_store` checks the schema."""
    target = check_output_path(path, "db")
    try:
        with open(target, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise FabricsimError("db", f"cannot read {target}: {exc.strerror}", "give a new --db path") from None
    if head and head != SQLITE_HEADER:
        raise FabricsimError("db", f"{target} is not a SQLite database", "give a new --db path or an earlier sweep's")
    return target


def open_store(path: str | Path) -> ResultStore:
    """Open (or create) the SQLite store at ``path`` in WAL mode with the results table."""
    target = check_store(path)  # a regular file or nothing, in an existing, writable folder
    with _user_errors(target):
        db = sqlite3.connect(target)
    try:
        with _user_errors(target):
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: committed rows survive a killed process
            db.executescript(_SCHEMA)
            _check_schema(db, target)
    except BaseException:
        db.close()
        raise
    return ResultStore(db, target)
