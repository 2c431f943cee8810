"""The SQLite store: one transaction per result, UNIQUE task ids, WAL, sorted reads, bad files."""

from __future__ import annotations

import sqlite3

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.sweep import TaskOutcome, open_store
from fabricsim.sweep.store import check_store


def _outcome(task_id: str, status: str = "ok") -> TaskOutcome:
    return TaskOutcome(
        task_id,
        "collective",
        '{"gpus":8}',
        status,
        '{"t":1}' if status == "ok" else None,
        None if status == "ok" else "gpus: bad",
    )


def test_each_task_is_stored_once_and_read_back_in_task_id_order(tmp_path):
    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        assert store.add(_outcome("b"))
        assert store.add(_outcome("a", "failed"))
        assert not store.add(_outcome("b"))  # the primary key keeps the first
        assert store.stored_ids() == {"a", "b"}
    with open_store(path) as store:  # committed rows survive a reopen
        assert [o.task_id for o in store.rows()] == ["a", "b"]
        assert store.rows({"b"}) == [_outcome("b")]


def test_wal_mode_and_unique_constraint(tmp_path):
    path = tmp_path / "s.sqlite"
    open_store(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute("INSERT INTO results VALUES ('x', 'k', '{}', 'ok', '{}', NULL)")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO results VALUES ('x', 'k', '{}', 'ok', '{}', NULL)")
    db.close()


def test_a_file_that_is_not_a_store_is_a_user_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database " * 100)
    with pytest.raises(FabricsimError, match="is not a SQLite database"):
        open_store(path)
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE results (x TEXT)")
    db.close()
    with pytest.raises(FabricsimError, match="different 'results' table"):
        open_store(other)
    with pytest.raises(FabricsimError, match="does not exist"):
        open_store(tmp_path / "missing" / "s.sqlite")


def test_check_store_refuses_a_non_database_and_writes_nothing(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("meeting notes, not a database\n")
    with pytest.raises(FabricsimError, match=r"db: .* is not a SQLite database"):
        check_store(notes)
    assert notes.read_text() == "meeting notes, not a database\n"
    assert check_store(tmp_path / "new.sqlite") == tmp_path / "new.sqlite"
    assert not (tmp_path / "new.sqlite").exists()  # checked, not created
    (tmp_path / "empty.sqlite").touch()
    check_store(tmp_path / "empty.sqlite")  # an empty file becomes a store
    with open_store(tmp_path / "real.sqlite"):
        pass
    check_store(tmp_path / "real.sqlite")
