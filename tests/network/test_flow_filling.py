"""The max-min solver works on the links still in use (issue 27: fat-tree:k=64 permutation); it
must give, bit for bit, what progressive filling over every link gives."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fabricsim.network.flow import _SATURATED, max_min_rates


def filling_over_all_links(incidence: sp.spmatrix, capacity_Bps: np.ndarray) -> np.ndarray:
    """Textbook progressive filling (Bertsekas & Gallager 6.5.2), every link every level: the
    solver before issue 27, kept here as the reference."""
    rows, cols = incidence.tocsr(), incidence.tocsc()
    links = capacity_Bps.size
    rate = np.full(incidence.shape[1], np.inf)
    unfrozen = np.diff(cols.indptr) > 0
    load = np.bincount(np.repeat(np.arange(links), np.diff(rows.indptr)), rows.data, links)
    crossing = np.diff(rows.indptr).astype(np.int64)
    residual = capacity_Bps.astype(float).copy()
    level = 0.0
    while True:
        used = np.flatnonzero(crossing > 0)
        if used.size == 0:
            return rate
        step = max(0.0, float(np.min(residual[used] / load[used])))
        level += step
        residual[used] -= step * load[used]
        saturated = used[residual[used] <= _SATURATED * capacity_Bps[used]]
        hit = np.concatenate([rows.indices[rows.indptr[s] : rows.indptr[s + 1]] for s in saturated])
        newly = np.unique(hit[unfrozen[hit]]).astype(np.int64)
        unfrozen[newly] = False
        rate[newly] = level
        entries = np.concatenate([np.arange(cols.indptr[f], cols.indptr[f + 1]) for f in newly] or [[]]).astype(int)
        load -= np.bincount(cols.indices[entries], cols.data[entries], links)
        crossing -= np.bincount(cols.indices[entries], minlength=links)
        load[crossing == 0] = 0.0


@pytest.mark.parametrize("seed", range(40))
def test_same_rates_bit_for_bit_as_filling_over_every_link(seed: int) -> None:
    rng = np.random.default_rng(seed)
    links, flows = int(rng.integers(1, 80)), int(rng.integers(1, 300))
    incidence = sp.random(links, flows, density=rng.uniform(0.01, 0.3), random_state=seed, format="csr")
    incidence.data = rng.choice([1.0, 0.5, 0.25, 1 / 3], size=incidence.data.size)  # ECMP and sprayed shares
    capacity = rng.choice([1.0, 3.0, 12.5e9], size=links) if seed % 2 else rng.uniform(0.5, 5.0, links)
    assert max_min_rates(incidence, capacity).tobytes() == filling_over_all_links(incidence, capacity).tobytes()


def test_many_flows_on_many_links_agree() -> None:
    """Large enough that the working set is compacted several times and both bookkeeping paths
    (one bincount over the set, and the sort over touched links) run."""
    rng = np.random.default_rng(7)
    links, flows, hops = 3000, 4000, 5
    link = rng.integers(0, links, size=(flows, hops)).ravel()
    incidence = sp.csr_matrix((np.ones(link.size), (link, np.repeat(np.arange(flows), hops))), shape=(links, flows))
    capacity = rng.choice([1.0, 2.0, 4.0], size=links)
    assert max_min_rates(incidence, capacity).tobytes() == filling_over_all_links(incidence, capacity).tobytes()
