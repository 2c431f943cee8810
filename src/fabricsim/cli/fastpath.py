"""The fast path of ``fabricsim train`` (layer L11): an analytic estimate without importing typer.

A whole ``fabricsim train ... --json`` process spent a quarter of its ~0.2 s of CPU in typer: its
import (~40 ms) and, when parsing, one pydantic adapter per option of the command (issue 27). Most
runs give plain options, so :func:`run` reads them from :data:`TRAIN`, a table of the command's
options, and calls the same code as the typer command (:func:`analytic_train`). Anything it does
not read exactly as typer would (help, ``--opt=value``, an option given twice, a value that starts
with ``-`` or is not a plain decimal where a number is wanted, an option that is not in the table,
such as ``--fidelity``, ``--trace`` or ``--seed``, a missing required option) returns None, and
the run goes through typer, whose messages and results are the command's contract. A test
(tests/cli/test_fastpath.py) holds :data:`TRAIN` equal to the typer command's options and the
two paths' arguments equal.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

# kinds of an option that takes a value
STR, INT, FLOAT = "str", "int", "float"


class Command:
    """One command's plain options: ``values`` maps an option to (parameter, kind), ``flags`` maps
    a flag to (parameter, the value it sets); every parameter not given takes ``defaults``' value,
    and the ``required`` ones must be given."""

    def __init__(
        self,
        values: dict[str, tuple[str, str]],
        flags: dict[str, tuple[str, bool]],
        required: tuple[str, ...],
        defaults: dict[str, Any],
    ) -> None:
        self.values, self.flags, self.required, self.defaults = values, flags, required, defaults

    def parse(self, args: list[str]) -> dict[str, Any] | None:
        """The command's parameters as typer passes them, or None where typer must read ``args``."""
        given: dict[str, Any] = {}
        k = 0
        while k < len(args):
            option = args[k]
            if option in self.flags:
                name, value = self.flags[option]
                k += 1
            elif option in self.values and k + 1 < len(args):
                name, kind = self.values[option]
                value = _value(args[k + 1], kind)
                if value is None:
                    return None
                k += 2
            else:
                return None
            if name in given:  # typer takes the last; rare enough to leave to it
                return None
            given[name] = value
        if any(name not in given for name in self.required):
            return None
        return {**self.defaults, **given}


def _value(text: str, kind: str) -> Any:
    """``text`` as typer reads an option of ``kind`` where the reading is certain, else None.
    Integers: ASCII decimal digits without a sign or leading zero, at most 18 of them; floats:
    such an integer with an optional ``.digits``; text: not empty, not starting with ``-``
    (typer would read that as an option's value too, but an error message may say otherwise),
    and valid UTF-8 (no undecodable bytes from the command line)."""
    if kind == STR:
        if not text or text.startswith("-"):
            return None
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return text
    whole, dot, fraction = text.partition(".") if kind == FLOAT else (text, "", "")
    if not _plain_digits(whole) or (dot and not (fraction.isascii() and fraction.isdigit() and len(fraction) <= 18)):
        return None
    return float(text) if kind == FLOAT else int(text)


def _plain_digits(text: str) -> bool:
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def _switch(on: str, param: str) -> dict[str, tuple[str, bool]]:
    """``--on`` sets ``param`` True, ``--no-on`` False (typer's ``--on/--no-on``)."""
    return {f"--{on}": (param, True), f"--no-{on}": (param, False)}


# ``fabricsim train``'s options that an analytic estimate forwards to ``api.train``, and --json; the
# simulation and fabric options (cli/options.py SIMULATION_KEYS, FABRIC_KEYS, PACKET_KEYS) are left
# to typer. Declared in cli/options.py, cli/train_settings.py and cli/train_cmd.py.
TRAIN = Command(
    values={
        "--model": ("model", STR),
        "--system": ("system", STR),
        "--gpus": ("gpus", INT),
        "--global-batch": ("global_batch", INT),
        "--seq-len": ("seq_len", INT),
        "--tp": ("tp", INT),
        "--pp": ("pp", INT),
        "--dp": ("dp", INT),
        "--cp": ("cp", INT),
        "--ep": ("ep", INT),
        "--vpp": ("vpp", INT),
        "--micro-batch": ("micro_batch", INT),
        "--zero": ("zero", INT),
        "--recompute": ("recompute", STR),
        "--dtype": ("dtype", STR),
        "--expert-tp": ("expert_tp", INT),
        "--fp8-recipe": ("fp8_recipe", STR),
        "--capacity-factor": ("capacity_factor", FLOAT),
        "--moe-dispatcher": ("moe_dispatcher", STR),
        "--cross-entropy": ("cross_entropy", STR),
        "--mtp-layers": ("mtp_layers", INT),
        "--pipeline-layout": ("pipeline_layout", STR),
        "--recompute-modules": ("recompute_modules", STR),
        "--lora-rank": ("lora_rank", INT),
        "--offload": ("offload", STR),
        "--offload-tier": ("offload_tier", STR),
    },
    flags={
        "--json": ("as_json", True),
        **_switch("sequence-parallel", "sequence_parallel"),
        **_switch("flash-attention", "flash_attention"),
        **_switch("overlap-grad-reduce", "overlap_grad_reduce"),
        **_switch("overlap-param-gather", "overlap_param_gather"),
        **_switch("tp-comm-overlap", "tp_comm_overlap"),
        **_switch("a2a-overlap", "a2a_overlap"),
        **_switch("account-for-embedding-in-pipeline-split", "account_for_embedding_in_pipeline_split"),
        **_switch("account-for-loss-in-pipeline-split", "account_for_loss_in_pipeline_split"),
        **_switch("grad-reduce-in-fp32", "grad_reduce_in_fp32"),
    },
    required=("model", "system", "gpus", "global_batch", "seq_len"),
    defaults={},  # filled below: every optional parameter is None (unset), --json off
)
TRAIN.defaults = {
    **{name: None for name, _ in (*TRAIN.values.values(), *TRAIN.flags.values()) if name not in TRAIN.required},
    "as_json": False,
}


def analytic_train(inputs: dict[str, Any], as_json: bool) -> None:
    """Print the analytic estimate of ``api.train(**inputs)`` (``fabricsim train`` without the
    event-driven engine): the typer command and the fast path both end here."""
    from fabricsim import api
    from fabricsim.cli.output import emit

    emit(api.train(**inputs).to_json(), as_json, "train_table")


def run(args: list[str]) -> int | None:
    """Run ``args`` (the command line after ``fabricsim``, without ``--html``) on the fast path and
    return the exit status, or None where typer must run them (nothing has been done then)."""
    if not args or args[0] != "train":
        return None
    params = TRAIN.parse(args[1:])
    if params is None:
        return None
    as_json = params.pop("as_json")
    try:
        analytic_train(params, as_json)
    except KeyboardInterrupt:  # as typer: status 130, no traceback
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # the reader went away (``| head``): exit 1 as typer does, and keep the interpreter's final
        # flush of stdout from failing again (Python's documented way: stdout to devnull)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    return 0
