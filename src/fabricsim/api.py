"""The public Python API (layer L9): the only place catalog names become specs.

Every function accepts catalog names or file paths, validates the inputs into specs, calls the
library, and returns an immutable result whose ``to_json()`` is the JSON contract of DESIGN.md.
"""

from __future__ import annotations

from fabricsim import catalog, collectives, validation
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.metrics import CollectiveResult
from fabricsim.units import parse_size, to_GBps


def catalog_list(kind: str = "all") -> dict[str, list[str]]:
    """Names in the catalog, per kind."""
    if kind == "all":
        return {k: catalog.names(k) for k in catalog.KINDS}
    if kind not in catalog.KINDS:
        raise unknown_name("kind", kind, [*catalog.KINDS, "all"])
    return {kind: catalog.names(kind)}


def catalog_show(kind: str, name: str) -> dict[str, object]:
    """One catalog item as plain data, with the source of each number."""
    return catalog.describe(kind, name)


def collective(op: str, *, system: str, gpus: int, size: str | int, algorithm: str = "auto") -> CollectiveResult:
    """Estimate one collective on ``gpus`` GPUs of ``system``.

    ``size`` is S as nccl-tests defines it per op (e.g. the full gathered buffer for all-gather);
    algbw = S / time and busbw = algbw x the nccl-tests bus factor of the op.
    """
    spec = catalog.load_system(system)
    spec.check_gpu_count(gpus)
    operation = collectives.parse_op(op)
    algo = collectives.parse_algorithm(algorithm)
    size_bytes = parse_size(size, "size")
    if size_bytes == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 1MiB")
    group = collectives.place_group(spec, gpus)
    est = collectives.estimate(operation, size_bytes, group, algo)
    algbw = size_bytes / est.time_s
    return CollectiveResult(
        op=operation.value,
        gpus=gpus,
        size_bytes=size_bytes,
        algorithm=est.algorithm.value,
        protocol=est.protocol,
        time_s=est.time_s,
        algbw_GBps=to_GBps(algbw),
        busbw_GBps=to_GBps(algbw * collectives.bus_factor(operation, gpus)),
    )


def validate(suite: str = "all") -> dict[str, object]:
    """Run published-measurement suites; JSON ``{suites: [{name, entries, mean_abs_error}]}``."""
    return {"suites": [result.to_json() for result in validation.run_suites(suite)]}
