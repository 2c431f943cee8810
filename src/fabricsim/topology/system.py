"""A catalog system's full topology from its spec (layer L2).

Scale-up: one NVSwitch node per scale-up domain (a DGX node's NVSwitch chips, or an NVL72 rack's
NVLink switch trays, merged), each GPU cabled to it at the spec's per-GPU NVLink bandwidth; a
full-mesh domain (``scale_up.topology: full-mesh``, AMD Instinct, Intel Gaudi 3) has no switch:
every GPU pair is cabled directly at the pair's share of the GPU's bandwidth; a torus domain
(``scale_up.topology: torus``, Google TPU ICI, AWS Trainium2 NeuronLink) has no switch either: every
GPU is cabled to its neighbours along each of ``scale_up.dims``, wraparound included, one link each.
Scale-out: ``nics_per_node`` NIC nodes per server, NIC j on GPU j*gpus/nics through the host link
(PCIe or C2C). A server with fewer NICs than GPUs shares each NIC among the GPUs up to the next
NIC's (GPU g on NIC g*nics//gpus; assumed: the docs do not say how a host spreads its chips'
traffic over its NICs), every GPU cabled to its NIC by its own host link, as the chips of a host
sit on its PCIe with the NICs (Cloud TPU docs, TPU v6e (docs.cloud.google.com/tpu/docs/v6e): each
chip connects to the host through a PCIe Gen5 interface; 8 chips, 4 NICs per host); the
GPUs of a NIC then share its one line, as the closed form's ``nic x nics / gpus`` per GPU assumes
(:mod:`fabricsim.collectives.placement`). Routing never turns such a NIC around between two of its
GPUs (:mod:`fabricsim.topology.routing`). NICs are cabled to the network ``scale_out.topology``
names, built as written:

* ``rail-optimized``: rail leaves (NIC j of every node of a leaf group on leaf j) and a Clos above
  (:func:`~fabricsim.topology.builders.rail_leaves`), of the switch's radix and oversubscription;
* ``fat-tree``: a plain Clos, NICs node-major on the leaves, two or three tiers as the size needs;
* ``leaf-spine``: the same plain Clos held to two tiers (each leaf one uplink to every spine, the
  radix split down:up = r:1); a cluster whose leaves outnumber the spine radix cannot be two tiers
  and is refused (use ``fat-tree``, which grows a third tier);
* ``rail-only``: one Clos per rail, no spine across rails (:mod:`fabricsim.topology.rail_only`).
  Traffic between rails is forwarded over NVLink first (Wang et al., arXiv 2307.12169, sec. 4):
  each NIC is also cabled to its scale-up switch at the host link's rate, standing for the hop
  NVLink -> the NIC's GPU -> host link, since routes never pass through a GPU;
* ``dragonfly`` / ``torus``: the builders' networks with the switch as router. Their shape is
  ``scale_out.topology_params`` in the builder syntax (``a=8,p=4,h=4``, ``dims=8x8x8``); without
  it the smallest balanced shape with a port per NIC: a dragonfly with a = 2p = 2h (Kim et al.,
  ISCA'08, sec. 3.1: the balanced dragonfly), a torus of three near-equal dimensions.

``fabric`` (a topology from a builder string) replaces the scale-out network: its endpoints (host
ports) become the NICs, NIC j of node n on endpoint n * nics_per_node + j. Endpoints of the result
are the GPUs, node-major (GPU g on node g // gpus_per_node); a single node has no scale-out network
(``fabric`` is then not used). A network that cannot be built raises a one-line ``FabricsimError``
naming the field (``topology``, ``topology_params``).
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.specs import SystemSpec
from fabricsim.specs.fabric import TopologyKind
from fabricsim.topology.builders import LinkParams, RailSpec, dragonfly, rail_leaves, torus
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology, cables
from fabricsim.topology.rail_only import rail_only


def build_system_topology(system: SystemSpec, gpus: int, fabric: Topology | None = None) -> Topology:
    """Topology of ``gpus`` GPUs of ``system`` (validated with ``system.check_gpu_count``), its
    scale-out network the spec's or ``fabric`` (module docstring)."""
    system.check_gpu_count(gpus)
    per_node = min(system.gpus_per_node, gpus)
    nodes = system.nodes(gpus)
    graph = GraphBuilder()
    gpu_ids = graph.add_nodes(gpus, NodeKind.GPU)
    domain_switch = _scale_up(graph, system, gpu_ids)
    graph.switch_reduction = system.scale_out.in_network_reduction
    line_Bps = system.scale_up.bandwidth_Bps
    if nodes > 1 and not _one_torus(system, gpus):
        nics, nic_Bps = _scale_out(graph, system, gpu_ids.reshape(nodes, per_node), fabric)
        if fabric is None and system.scale_out.topology == TopologyKind.RAIL_ONLY:
            relay = domain_switch.reshape(nodes, per_node)[:, (np.arange(nics.shape[1]) * per_node) // nics.shape[1]]
            graph.connect(relay, nics, system.host_link.bandwidth_Bps, system.host_link.latency_s)
        line_Bps = nic_Bps * system.scale_out.nics_per_node / per_node  # the GPU's share of the node's NICs
    meta = {"gpus_per_node": per_node}
    if system.scale_up.torus:  # the domains' shape, for the virtual channels of link credits (network/packet/vc.py)
        up = system.scale_up
        meta.update({f"torus_dim{d}": float(size) for d, size in enumerate(up.dims or (up.domain_gpus,))})
    return graph.build(f"{system.name}-{gpus}", gpu_ids, line_Bps, meta)


def _one_torus(system: SystemSpec, gpus: int) -> bool:
    """Whether ``gpus`` fit in one torus domain: a TPU slice's hosts talk over ICI only (the data-center
    network joins slices), so no scale-out network is built; with one, shortest-path routing would
    send some chip pairs over a NIC path of as many hops as their ICI path."""
    return system.scale_up.torus and gpus <= system.scale_up.domain_gpus


def _scale_up(graph: GraphBuilder, system: SystemSpec, gpu_ids: np.ndarray) -> np.ndarray:
    """Cable every GPU to its domain's switch (a full mesh: every GPU pair of a domain to each
    other, :func:`_full_mesh`); returns each GPU's switch node (a mesh: the GPU itself)."""
    if system.scale_up.full_mesh:
        _full_mesh(graph, system, gpu_ids)
        return gpu_ids
    if system.scale_up.torus:
        return _torus_domains(graph, system, gpu_ids)
    domain = min(system.scale_up.domain_gpus, gpu_ids.size)
    domains = -(-gpu_ids.size // domain)
    switches = graph.add_nodes(domains, NodeKind.SWITCH, reduction=system.scale_up.in_network_reduction)
    link = system.scale_up.link
    switch_of = switches[np.arange(gpu_ids.size) // domain]
    graph.connect(gpu_ids, switch_of, system.scale_up.bandwidth_Bps, link.latency_s)
    return switch_of


def _full_mesh(graph: GraphBuilder, system: SystemSpec, gpu_ids: np.ndarray) -> None:
    """A switchless domain: one cable (a directed link each way) per GPU pair of every domain, at
    the pair's share of the GPU's scale-up bandwidth (``ScaleUpSpec.peer_Bps``: e.g. MI300X, 7
    Infinity Fabric links of 64 GB/s, one per peer). A run of fewer GPUs than a domain keeps the
    links among those GPUs only."""
    up = system.scale_up
    domain = min(up.domain_gpus, gpu_ids.size)
    a, b = np.triu_indices(domain, k=1)
    base = np.arange(0, gpu_ids.size, domain)[:, None]
    src, dst = (base + a[None, :]).ravel(), (base + b[None, :]).ravel()
    keep = dst < gpu_ids.size
    graph.connect(gpu_ids[src[keep]], gpu_ids[dst[keep]], up.peer_Bps, up.link.latency_s)


def torus_pairs(dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cables of one torus of shape ``dims`` (x fastest) as index pairs and each cable's
    dimension: along every dimension each position to the next, the last back to the first
    (wraparound); a dimension of 2 gives one cable per pair, of 1 none. Complexity
    O(prod(dims) x len(dims))."""
    coords = np.indices(dims[::-1]).reshape(len(dims), -1)[::-1]  # coords[d][g]: GPU g's position on d
    strides = np.cumprod((1, *dims[:-1]))
    src, dst, dim = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
    for d, size in enumerate(dims):
        if size < 2:
            continue
        ends = np.arange(coords.shape[1]) if size > 2 else np.flatnonzero(coords[d] == 0)
        nxt = ends + ((coords[d][ends] + 1) % size - coords[d][ends]) * strides[d]
        src.append(ends)
        dst.append(nxt)
        dim.append(np.full(ends.size, d))
    return np.concatenate(src), np.concatenate(dst), np.concatenate(dim)


def _torus_domains(graph: GraphBuilder, system: SystemSpec, gpu_ids: np.ndarray) -> np.ndarray:
    """Every scale-up domain a torus of ``scale_up.dims`` (e.g. TPU v5p: a 4x4x4 cube, 6 ICI links
    per chip): each GPU gets its chip's ICI router (a switch node: routes never pass through a GPU,
    as in :func:`~fabricsim.topology.builders.torus`), attached at the GPU's whole scale-up
    bandwidth with no latency of its own (the router is on the die), and the routers are cabled
    one ``scale_up.link`` per neighbour pair. A run of fewer GPUs than a domain keeps the cables
    among those GPUs only (an open end where the wraparound partner is missing). A dimension's
    links run at its ``dim_link_Bps`` where given. Returns each GPU's router."""
    up = system.scale_up
    routers = graph.add_nodes(gpu_ids.size, NodeKind.SWITCH)
    graph.connect(gpu_ids, routers, up.bandwidth_Bps, 0.0)
    a, b, dim = torus_pairs(up.dims or (up.domain_gpus,))  # dims: set for every torus (ScaleUpSpec)
    link_Bps = np.asarray(up.torus_link_Bps or (up.link.bandwidth_Bps,))
    base = np.arange(0, gpu_ids.size, up.domain_gpus)[:, None]
    src, dst = (base + a[None, :]).ravel(), (base + b[None, :]).ravel()
    dims = np.broadcast_to(dim[None, :], (base.size, dim.size)).ravel()
    keep = (src < gpu_ids.size) & (dst < gpu_ids.size)
    for d in np.unique(dims[keep]):  # one capacity per dimension (dim_link_Bps)
        on = keep & (dims == d)
        graph.connect(routers[src[on]], routers[dst[on]], float(link_Bps[d]), up.link.latency_s)
    return routers


def _scale_out(
    graph: GraphBuilder, system: SystemSpec, gpus: np.ndarray, fabric: Topology | None
) -> tuple[np.ndarray, float]:
    """Cable the NICs and the scale-out network; returns the NICs [nodes, nics] and their line rate
    (bytes/s)."""
    out = system.scale_out
    nodes, per_node = gpus.shape
    rails = out.nics_per_node
    gpu_of, nic_of = _host_links(per_node, rails)
    owner = gpus[:, gpu_of]  # each host link's GPU, [nodes, links]
    nic = LinkParams(out.nic.bandwidth_Bps, out.switch.latency_s)
    host = system.host_link
    if fabric is None and out.topology in (TopologyKind.RAIL_OPTIMIZED, TopologyKind.FAT_TREE,
                                           TopologyKind.LEAF_SPINE):  # fmt: skip
        nics = graph.add_nodes(nodes * rails, NodeKind.NIC).reshape(nodes, rails)
        graph.connect(owner, nics[:, nic_of], host.bandwidth_Bps, host.latency_s)
        _clos(graph, nics, out.topology, RailSpec(nodes, rails, out.switch.radix, nic, out.oversubscription))
        return nics, nic.capacity_Bps
    network = fabric if fabric is not None else _routed(system, nodes * rails, nic)
    if network.hosts < nodes * rails:
        field, fix = ("topology", "use a larger topology") if fabric is not None else (
            "topology_params", "give a larger shape, or leave topology_params out to size it")  # fmt: skip
        raise FabricsimError(field, f"{network.name} has {network.hosts} host ports, {nodes} nodes x {rails} NICs "
                             f"need {nodes * rails}", fix)  # fmt: skip
    nics = embed(graph, network, nodes * rails, out.in_network_reduction and fabric is None).reshape(nodes, rails)
    graph.connect(owner, nics[:, nic_of], host.bandwidth_Bps, host.latency_s)
    return nics, network.line_rate_Bps


def _host_links(per_node: int, rails: int) -> tuple[np.ndarray, np.ndarray]:
    """The host links of a server of ``per_node`` GPUs and ``rails`` NICs as (GPU, NIC) index
    pairs within the server: NIC j on GPU j*per_node//rails; with fewer NICs than GPUs, one link
    from every GPU g to the NIC it shares, g*rails//per_node (module docstring)."""
    if rails >= per_node:
        return (np.arange(rails) * per_node) // rails, np.arange(rails)
    return np.arange(per_node), (np.arange(per_node) * rails) // per_node


def _clos(graph: GraphBuilder, nics: np.ndarray, kind: TopologyKind, spec: RailSpec) -> None:
    """Rail-optimized: NIC j of a leaf group's nodes on rail leaf j; fat-tree / leaf-spine: a plain
    Clos, NICs node-major on the leaves (leaf-spine refused beyond two tiers)."""
    if kind == TopologyKind.RAIL_OPTIMIZED:
        rail_leaves(graph, nics, spec)
        return
    plain = RailSpec(nics.size, 1, spec.radix, spec.nic, spec.oversubscription)
    if kind == TopologyKind.LEAF_SPINE:
        leaves = -(-nics.size // plain.leaf_down_ports)
        if leaves > spec.radix:
            raise FabricsimError(
                "topology",
                f"leaf-spine: {nics.size} NICs need {leaves} leaves of {plain.leaf_down_ports} ports, more than a "
                f"two-tier Clos of radix {spec.radix} holds ({spec.radix * plain.leaf_down_ports} NICs)",
                "use topology: fat-tree (three tiers) or fewer GPUs",
            )
        plain = RailSpec(nics.size, 1, spec.radix, spec.nic, spec.oversubscription, tiers=2)
    rail_leaves(graph, nics.reshape(-1, 1), plain)


def embed(graph: GraphBuilder, network: Topology, ports: int, reduction: bool = False) -> np.ndarray:
    """Copy ``network`` into ``graph``: its switches (in-network reduction where the network has it,
    or every switch when ``reduction``) and links, and its first ``ports`` endpoints as NIC nodes
    (the rest, unused host ports, are left out with their cables); returns those NICs' node ids,
    in endpoint order."""
    keep = network.node_kind != NodeKind.GPU
    used = network.endpoints[:ports]
    keep[used] = True
    kind = np.where(network.node_kind == NodeKind.GPU, NodeKind.NIC, network.node_kind)[keep]
    flags = (network.reduction | (reduction & (network.node_kind == NodeKind.SWITCH)))[keep]
    new_id = np.full(network.nodes, -1, dtype=np.int64)
    new_id[keep] = _add_runs(graph, kind, flags)
    pairs = cables(network)[:, 0]
    src, dst = network.link_src[pairs], network.link_dst[pairs]
    live = keep[src] & keep[dst]
    params = np.stack([network.capacity_Bps[pairs], network.latency_s[pairs]], axis=1)[live]
    values, group = np.unique(params, axis=0, return_inverse=True)
    for g, (capacity, latency) in enumerate(values):
        mine = group.ravel() == g
        graph.connect(new_id[src[live][mine]], new_id[dst[live][mine]], float(capacity), float(latency))
    return new_id[used].astype(np.int32)


def _add_runs(graph: GraphBuilder, kind: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Add nodes of ``kind[i]`` (in-network reduction ``flags[i]``) in order, one call per run."""
    if kind.size == 0:
        return np.zeros(0, dtype=np.int32)
    change = np.flatnonzero((np.diff(kind) != 0) | (np.diff(flags) != 0)) + 1
    starts, ends = np.r_[0, change], np.r_[change, kind.size]
    runs = zip(starts.tolist(), ends.tolist(), strict=True)
    return np.concatenate([graph.add_nodes(e - s, NodeKind(int(kind[s])), reduction=bool(flags[s])) for s, e in runs])


def _routed(system: SystemSpec, ports: int, nic: LinkParams) -> Topology:
    """The rail-only, dragonfly or torus network of ``system`` with at least ``ports`` host ports."""
    out = system.scale_out
    nodes, rails = ports // out.nics_per_node, out.nics_per_node
    if out.topology == TopologyKind.RAIL_ONLY:
        return rail_only(RailSpec(nodes, rails, out.switch.radix, nic, out.oversubscription))
    params = _shape_params(out.topology_params)
    if out.topology == TopologyKind.DRAGONFLY:
        a, p, h = _dragonfly_shape(params, ports)
        if p + (a - 1) + h > out.switch.radix:
            raise FabricsimError("topology_params", f"a dragonfly router with a={a}, p={p}, h={h} needs "
                                 f"{p + a - 1 + h} ports, the {out.switch.name} has {out.switch.radix}")  # fmt: skip
        return dragonfly(a, p, h, nic)
    if out.topology == TopologyKind.TORUS:
        return torus(_torus_dims(params, ports), nic)
    raise FabricsimError("topology", f"cannot build a {out.topology.value} scale-out network")  # pragma: no cover


def _shape_params(text: str | None) -> dict[str, str]:
    """``a=8,p=4,h=4`` or ``dims=8x8x8`` to a dict (keys checked by the caller)."""
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise FabricsimError("topology_params", f"{item!r} is not key=value", "e.g. a=8,p=4,h=4 or dims=8x8x8")
        params[key.strip()] = value.strip()
    return params


def _shape_int(params: dict[str, str], key: str) -> int:
    try:
        value = int(params[key])
    except KeyError:
        raise FabricsimError("topology_params", f"needs {key}=", "e.g. a=8,p=4,h=4 or dims=8x8x8") from None
    except ValueError:
        raise FabricsimError("topology_params", f"{key} must be an integer, got {params[key][:40]!r}") from None
    if value < 1:
        raise FabricsimError("topology_params", f"{key} must be >= 1, got {value}")
    return value


def _only(params: dict[str, str], keys: tuple[str, ...]) -> None:
    extra = sorted(set(params) - set(keys))
    if extra:
        raise FabricsimError("topology_params", f"unknown key {extra[0]!r}", f"use {', '.join(keys)}")


def _dragonfly_shape(params: dict[str, str], ports: int) -> tuple[int, int, int]:
    """(a, p, h): the given shape, or the smallest balanced one (a = 2p = 2h) with >= ``ports``
    hosts: (2h^2 + 1) groups x 2h routers x h hosts."""
    if params:
        _only(params, ("a", "p", "h"))
        return _shape_int(params, "a"), _shape_int(params, "p"), _shape_int(params, "h")
    h = 1
    while (2 * h * h + 1) * 2 * h * h < ports:
        h += 1
    return 2 * h, h, h


def _torus_dims(params: dict[str, str], ports: int) -> tuple[int, ...]:
    """The given ``dims`` (``8x8x8``), or three near-equal sizes whose product is >= ``ports``:
    each edge ceil(cbrt(ports)), the first two shrunk while the product stays >= ``ports``."""
    if params:
        _only(params, ("dims",))
        try:
            dims = tuple(int(d) for d in params.get("dims", "").lower().split("x"))
        except ValueError:
            raise FabricsimError("topology_params", f"dims must look like 8x8x8, got {params.get('dims', '')[:40]!r}",
                                 "e.g. dims=8x8x8") from None  # fmt: skip
        if not 1 <= len(dims) <= 3 or min(dims) < 1:
            raise FabricsimError("topology_params", f"dims needs 1 to 3 positive sizes, got {params['dims']!r}")
        return dims
    edge = max(1, math.ceil(round(ports ** (1 / 3), 9)))
    dims = [edge, edge, edge]
    for axis in (0, 1):
        while dims[axis] > 1 and (dims[axis] - 1) * math.prod(dims) // dims[axis] >= ports:
            dims[axis] -= 1
    return tuple(dims)
