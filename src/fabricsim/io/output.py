"""Write user-named output files safely (layer L10): refuse what is not a regular file, never
leave a half-written file (temp file + rename, :func:`fabricsim.io.results.write_atomic`)."""

from __future__ import annotations

from pathlib import Path

from fabricsim.io.results import check_output_path, write_atomic


def write_output(path: str | Path, text: str, field: str) -> Path:
    """Write ``text`` to ``path``; FabricsimError naming ``field`` for an empty path, a directory, a
    special file or symbolic link, a missing or unwritable folder (:func:`fabricsim.textfile.check_output_path`)."""
    target = check_output_path(path, field)
    write_atomic(target, text, field)
    return target
