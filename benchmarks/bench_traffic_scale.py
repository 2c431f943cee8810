"""``traffic permutation`` at flow fidelity on growing fat-trees (not run in CI):
``python benchmarks/bench_traffic_scale.py [K ...]`` (default 16 32 64).

Each size runs :func:`fabricsim.api.traffic` once, as ``fabricsim traffic permutation --topology
fat-tree:k=K`` does (build, route with ECMP, max-min event loop), in a fresh process so that one
size's memory and caches do not help the next. It prints CPU seconds (user + system, from
``resource.getrusage`` of the child: the figure that matters on a shared machine) next to wall
seconds. The issue-27 goal is k=64 (65,536 hosts) in under 30 s of CPU.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CHILD = """
import json, resource, sys, time
from fabricsim import api
k = int(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
result = api.traffic("permutation", topology=f"fat-tree:k={k}").to_json()
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"hosts": result["hosts"], "events": result["events"], "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_MB": peak}))
"""


def run(k: int) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(k)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    child = json.loads(out.stdout)
    print(
        f"fat-tree:k={k:<3} {child['hosts']:>7,} hosts {child['events']:>5} events  "
        f"run {child['cpu_s']:6.2f} s CPU ({child['wall_s']:6.2f} s wall)  "
        f"whole process {cpu:6.2f} s CPU ({wall:6.2f} s wall)  peak {child['peak_rss_MB']:,.0f} MB"
    )


def main(argv: list[str]) -> None:
    for k in [int(a) for a in argv] or [16, 32, 64]:
        run(k)


if __name__ == "__main__":
    main(sys.argv[1:])
