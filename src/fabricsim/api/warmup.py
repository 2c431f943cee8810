"""Compile or load every compiled kernel ahead of time (public API, layer L9): ``fabricsim warmup``.

The packet fidelity's kernel (:func:`fabricsim.network.packet.loop.run` and the helpers it inlines,
the package's only numba code) compiles on its first run after an install or an edit of its sources
(30-90 s on a busy 2-core machine) and loads from numba's cache afterwards. :func:`warm_up` runs the
smallest packet simulation through the path every packet run takes, so the machine code later runs
need is compiled and cached, or loaded, before the first real run instead of inside it (CI runs it
before the tests, so no test pays for the compile).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
from fabricsim.network.packet.jit import cache_dir, will_compile
from fabricsim.network.packet.loop import run as packet_kernel

# the smallest packet run: one 4 KiB flow between two hosts (one packet), the types of every run
WARM_UP_SPEC = PacketTrafficSpec(pattern="incast", topology="fat-tree:k=4", size="4KiB", hosts=2)


@dataclass(frozen=True, slots=True)
class KernelWarmUp:
    """What warming one kernel did: ``action`` is compiled | loaded from cache | already loaded;
    ``cache_dir`` is numba's cache folder for it (None: no writable folder, compiled every run)."""

    name: str
    action: str
    cache_dir: str | None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "action": self.action, "cache_dir": self.cache_dir}


def warm_up() -> list[KernelWarmUp]:
    """Compile or load every compiled kernel of the package (today: the packet kernel)."""
    if packet_kernel.overloads:
        action = "already loaded"
    else:
        action = "compiled" if will_compile(packet_kernel) else "loaded from cache"
    packet_traffic(WARM_UP_SPEC)
    folder = cache_dir()
    return [KernelWarmUp("packet", action, None if folder is None else str(folder))]
