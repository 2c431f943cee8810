"""Packet-level fidelity (layer L3): MTU packets through output queues with a shared switch buffer,
ECN, PFC or InfiniBand credits, and sender congestion control (none, DCQCN, HPCC); spraying comes
from the routing. :class:`~fabricsim.network.packet.model.PacketNetwork` is the entry point; the
compiled kernel lives in ``kernel`` and ``loop``, parameters with their sources in ``params``.
"""
