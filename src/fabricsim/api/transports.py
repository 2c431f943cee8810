"""``--transport roce|ib|uet`` and ``--ber RATE`` of the packet commands (layer L9).

A transport (:func:`fabricsim.network.phase.named_transport`) is a set of packet options: the
sender's congestion control, the lossless mode, whether packets are sprayed and parameter
overrides. :func:`with_transport` turns ``--transport`` and ``--ber`` into the ``--cc``,
``--lossless``, ``--spray`` and ``--cc-param`` values the commands already take, so ``traffic`` and
``collective`` run them through their one validated input path. Without ``--transport`` nothing
changes (the default transport is still the one the options or the NIC give).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from fabricsim.errors import FabricsimError
from fabricsim.network.packet.params import MAX_BER, PacketParams
from fabricsim.network.phase import named_transport


@dataclass(frozen=True, slots=True)
class PacketOptions:
    """The packet options of a command: ``--cc``, ``--lossless``, ``--spray``, ``--cc-param``."""

    cc: str | None
    lossless: str | None
    spray: bool
    cc_params: tuple[str, ...]


def with_transport(
    given: PacketOptions, defaults: PacketOptions, transport: str | None, ber: str | None
) -> PacketOptions:
    """``given`` with the options of ``transport`` (which ``--cc``/``--lossless``/``--spray`` must then
    leave at their ``defaults``; the user's ``--cc-param`` still override the transport's) and the
    bit-error rate ``ber`` (a string from the command line, checked here) as ``--cc-param ber=``."""
    out = given
    if transport is not None:
        chosen = named_transport(transport)
        for flag, value, default in (("--cc", given.cc, defaults.cc), ("--lossless", given.lossless, defaults.lossless),
                                     ("--spray", given.spray, defaults.spray)):  # fmt: skip
            if value != default:
                raise FabricsimError("transport", f"--transport {chosen.name} sets {flag} itself",
                                     f"drop {flag}, or drop --transport")  # fmt: skip
        base = PacketParams()
        preset = tuple(f"{f.name}={getattr(chosen.params, f.name)!r}" for f in fields(base)
                       if getattr(chosen.params, f.name) != getattr(base, f.name))  # fmt: skip
        spray = chosen.routing.value == "spray"
        out = PacketOptions(chosen.cc.value, chosen.lossless.value, spray, preset + given.cc_params)
    if ber is not None:
        out = replace(out, cc_params=(*out.cc_params, f"ber={parse_ber(ber)!r}"))
    return out


def parse_ber(text: str) -> float:
    """``--ber RATE``: the post-FEC bit-error rate of every link, a number in [0, MAX_BER]."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 <= value <= MAX_BER:  # also refuses nan
        raise FabricsimError("ber", f"must be a bit-error rate in [0, {MAX_BER:g}], got {text!r}", "e.g. --ber 1e-12")
    return value
