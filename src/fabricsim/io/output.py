"""Write user-named output files safely (layer L10): refuse what is not a regular file, never
leave a half-written file (temp file + rename, :func:`fabricsim.io.results.write_atomic`)."""

from __future__ import annotations

from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.io.results import write_atomic


def write_output(path: str | Path, text: str, field: str) -> Path:
    """Write ``text`` to ``path``; FabricsimError naming ``field`` for a directory, a special file,
    or a folder that cannot be written."""
    target = Path(path)
    if str(path).strip() == "":
        raise FabricsimError(field, "empty path", "give a file name")
    if target.exists() and not target.is_file():
        raise FabricsimError(field, f"{path} exists and is not a regular file", "give a file path")
    if target.is_symlink():
        raise FabricsimError(field, f"{path} is a symbolic link", "give a regular file path")
    try:
        write_atomic(target, text)
    except OSError as exc:
        raise FabricsimError(field, f"cannot write {path}: {exc.strerror}", "check the folder is writable") from None
    return target
