"""``--html PATH`` on every command, in one place: :func:`split_html_option` takes it out of the
arguments before typer sees them, :func:`fabricsim.cli.common.emit` writes the report of the
payload it prints. So no command module declares the option, and new commands get it for free."""

from __future__ import annotations

from contextvars import ContextVar

from fabricsim.errors import FabricsimError

HTML_TARGET: ContextVar[str | None] = ContextVar("fabricsim_html_target", default=None)


def split_html_option(argv: list[str]) -> tuple[list[str], str | None]:
    """(arguments without ``--html PATH`` / ``--html=PATH``, PATH or None). Arguments after ``--``
    are left alone."""
    out: list[str] = []
    target: str | None = None
    k = 0
    while k < len(argv):
        arg = argv[k]
        if arg == "--":
            out.extend(argv[k:])
            break
        if arg == "--html" or arg.startswith("--html="):
            if arg == "--html":
                if k + 1 >= len(argv) or argv[k + 1].startswith("--"):
                    raise FabricsimError("html", "--html needs a file path", "e.g. --html report.html")
                value, k = argv[k + 1], k + 2
            else:
                value, k = arg.split("=", 1)[1], k + 1
            if target is not None:
                raise FabricsimError("html", "given twice", "give one --html PATH")
            target = value
            continue
        out.append(arg)
        k += 1
    return out, target


def write_html_report(payload: dict, name: str) -> None:
    """Write the report of ``payload`` to the ``--html`` path, if one was given."""
    target = HTML_TARGET.get()
    if target is None:
        return
    from fabricsim.io.output import write_output
    from fabricsim.report.html import render_report

    write_output(target, render_report([payload], [name], title=f"fabricsim {name}", field="html"), "html")
