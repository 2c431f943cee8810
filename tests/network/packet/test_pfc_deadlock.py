"""PFC deadlock on a torus's rings (issue: the packet kernel's "deadlock?" traceback on two TPU v6e pods).

Two v6e pods' permutation under PFC stopped with a RuntimeError "undelivered flows (deadlock?)". Its
final state was a true PFC deadlock, not a lost event: 938 links paused (every XOFF sent had paused
its link), none busy, every link with a queue paused, and the pause wait graph had cycles (the
shortest through its lowest link: 30 router links, both dimensions). PFC has no
virtual channels, so a torus's rings form the cyclic buffer dependency that Hu et al., HotNets 2016
("Deadlocks in datacenter networks") and Shpiner et al., HotNets 2016 ("Unlocking credit loop
deadlock") describe. The smallest case here: a ring of 8 routers, every chip sending 3 steps the same
way, with 1 MB of switch buffer.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
from fabricsim.errors import FabricsimError
from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)
from fabricsim.network.packet.deadlock import pause_cycle

RING = "torus:dims=8"


def _shift_three(path, hosts: int = 8) -> str:
    """Every chip of the ring sends 1 MB to the chip 3 steps on (one minimal direction)."""
    rows = [f"{h},{(h + 3) % hosts},1000000,0" for h in range(hosts)]
    path.write_text("src,dst,bytes,start_s\n" + "\n".join(rows) + "\n")
    return str(path)


def _ring_state(n: int = 4, paused=None):
    """Final tables of a ring of ``n`` router links (node i -> i+1), each paused, holding ingress bytes
    and a queue, and flows that each take two consecutive links."""
    LI = np.zeros((n, L.LI_QHEAD + L.LI_CSTRIDE), dtype=np.int64)
    LF = np.zeros((n, L.LF_ING + L.LF_CSTRIDE))
    LI[:, L.LI_SRC], LI[:, L.LI_DST] = np.arange(n), (np.arange(n) + 1) % n
    LI[:, L.LI_PAUSED] = 1 if paused is None else paused
    LI[:, L.LI_QHEAD] = 7  # a queued packet
    LF[:, L.LF_ING] = 4096.0
    rows = np.stack([np.arange(n), (np.arange(n) + 1) % n]).T.ravel()  # flow f: links f, f+1
    routes = csc_matrix((np.ones(2 * n), (rows, np.repeat(np.arange(n), 2))), shape=(n, n))
    return LI, LF, routes


def test_a_ring_of_paused_links_is_a_cycle_in_wait_order():
    LI, LF, routes = _ring_state()
    assert pause_cycle(LI, LF, routes, 1).tolist() == [0, 1, 2, 3]


def test_one_link_of_the_ring_not_paused_breaks_the_cycle():
    LI, LF, routes = _ring_state(paused=[1, 1, 0, 1])
    assert pause_cycle(LI, LF, routes, 1).size == 0
    LI, LF, routes = _ring_state()
    LI[2, L.LI_QHEAD] = -1  # its queue empty: nothing of link 1 waits on it
    assert pause_cycle(LI, LF, routes, 1).size == 0


def test_pfc_on_a_ring_reports_the_deadlock_as_a_lossless_error(tmp_path):
    spec = PacketTrafficSpec(pattern=None, matrix=_shift_three(tmp_path / "m.csv"), topology=RING, buffer="1MB")
    with pytest.raises(FabricsimError) as err:
        packet_traffic(spec)
    assert err.value.field == "lossless"
    assert "cyclic buffer dependency of 8 links" in err.value.problem  # the ring, one direction
    assert "8 of 8 flows undelivered" in err.value.problem
    assert "--lossless credit" in err.value.fix and "--cc dcqcn" in err.value.fix


def test_the_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    from fabricsim.cli.app import main

    argv = ["traffic", "--matrix", _shift_three(tmp_path / "m.csv"), "--topology", RING, "--fidelity", "packet",
            "--buffer", "1MB", "--json"]  # fmt: skip
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "", captured.out
    assert captured.err.startswith("error: lossless: PFC deadlocked") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


def test_link_credits_deliver_the_same_ring(tmp_path):
    """The fix the error names: credits have dateline virtual channels on a torus."""
    spec = PacketTrafficSpec(pattern=None, matrix=_shift_three(tmp_path / "m.csv"), topology=RING, lossless="credit")
    run = packet_traffic(spec).run
    assert np.array_equal(run.delivered_bytes, run.flows.size_bytes)
