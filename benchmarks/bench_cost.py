"""Figures: rail-only vs rail-optimized network savings and MoE all-to-all slowdown; CPO vs
pluggable; J per token vs decode batch; and how long a cost estimate takes.

Run: ``python benchmarks/bench_cost.py``. Prints figures; not part of the test suite.
Reference ranges: Wang et al., arXiv 2307.12169 (38-77% network cost, 37-75% network power,
8.2-11.2% all-to-all overhead); NVIDIA GTC 2025 CPO claim (3.5x optics power per port).
"""

from __future__ import annotations

import time

from fabricsim import api

RAIL_CASES = [("dgx-h100", n) for n in (512, 1024, 4096, 8192, 16384, 32768)] + [
    ("gb200-nvl72", n) for n in (2304, 4608, 9216, 18432)
]


def rail_only_figures() -> None:
    print("rail-only vs rail-optimized (paper: cost 38-77%, power 37-75%, all-to-all +8.2-11.2%)")
    print(f"{'system':<12} {'GPUs':>6} {'switches':>11} {'power saved':>12} {'cost saved':>11} {'a2a slowdown':>13}")
    for system, gpus in RAIL_CASES:
        r = api.compare_rail_only(system, gpus).to_json()
        sw = r["switches"]
        print(
            f"{system:<12} {gpus:>6} {sw['rail-optimized']:>5}->{sw['rail-only']:<5} "
            f"{r['network_power_saving']:>11.1%} {r['network_cost_saving']:>10.1%} {r['all_to_all']['slowdown']:>12.1%}"
        )


def cpo_figures() -> None:
    xdr = {"nic": "ib-xdr", "switch": "quantum-x800-q3400"}
    for gpus in (1024, 8192):
        a = api.cost("dgx-b200", gpus, optics="pluggable", **xdr)
        b = api.cost("dgx-b200", gpus, optics="cpo", **xdr)
        print(
            f"dgx-b200 {gpus} GPUs 800G XDR: optics/port {a.optics_W_per_port:.0f} W -> {b.optics_W_per_port:.0f} W "
            f"({a.optics_W_per_port / b.optics_W_per_port:.2f}x); optics {a.power.optics / 1e3:.1f} -> "
            f"{b.power.optics / 1e3:.1f} kW; cluster total {a.power.total / 1e6:.3f} -> {b.power.total / 1e6:.3f} MW "
            f"(-{1 - b.power.total / a.power.total:.2%})"
        )


def decode_figures() -> None:
    for batch in (1, 8, 32, 128):
        r = api.infer("llama3-70b", "dgx-h100", 8, batch=batch, input_len=1024, output_len=256).to_json()
        print(f"llama3-70b on 8xH100, batch {batch:>3}: {r['energy_J_per_token']:.2f} J/token")


def timing() -> None:
    start = time.perf_counter()
    api.cost("dgx-h100", 65536)
    print(f"cost of 65,536 H100s (graph build + count): {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    rail_only_figures()
    cpo_figures()
    decode_figures()
    timing()
