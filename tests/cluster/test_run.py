"""Running a cluster spec (cluster/run.py, api/cluster.py) with the engine, placement and job builder
faked (cluster_fakes.py): placement on free nodes in order, alone then shared, slowdown, JSON keys."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from cluster_fakes import TRAFFIC, FakeEngine, fake_parse_placement, fake_place, flow_fabric

from fabricsim import api
from fabricsim.api.topologies import build_topology
from fabricsim.cluster.links import link_tiers
from fabricsim.cluster.run import ClusterRig, run_cluster
from fabricsim.cluster.spec import parse_spec
from fabricsim.errors import FabricsimError

cluster_api = importlib.import_module("fabricsim.api.cluster")  # the module (api.cluster is the function)
WIDE = "leaf-spine:leaves=4,spines=2,hosts_per_leaf=8"  # 32 hosts: 8 nodes of 4 GPUs in these tests
TRAIN16 = "train --model llama3-8b --system dgx-h100 --gpus 16 --tp 8 --global-batch 16 --seq-len 1024"
INFER8 = "infer --model llama3-8b --system dgx-h100 --gpus 8 --tp 8 --batch 4 --input-len 128 --output-len 16"


def rig_for(engine: FakeEngine, gpus_per_node: int = 4) -> ClusterRig:
    topology = build_topology(WIDE)
    return ClusterRig(topology, gpus_per_node, flow_fabric(topology), fake_place, engine.fabric_job,
                      engine.simulate_jobs)


def three_jobs(parsers, **placements):
    jobs = [{"name": "pretrain", "command": TRAIN16}, {"name": "chat", "command": INFER8},
            {"name": "noise", "command": TRAFFIC}]
    for entry in jobs:
        if entry["name"] in placements:
            entry["placement"] = placements[entry["name"]]
    return parse_spec({"fabric": WIDE, "routing": "spray", "jobs": jobs}, parsers)


def test_slowdown_is_shared_over_alone_and_the_json_has_the_contract_keys(parsers):
    result = run_cluster(three_jobs(parsers), rig_for(FakeEngine()))
    out = result.to_json()
    assert set(out) == {"fabric", "routing", "fidelity", "background", "jobs", "links"}
    assert (out["fabric"], out["routing"], out["fidelity"]) == (WIDE, "spray", "flow")
    assert [set(job) for job in out["jobs"]] == [
        {"name", "kind", "gpus", "placement", "alone_s", "shared_s", "slowdown"}] * 3
    share = 1 + FakeEngine.SHARE * 2  # two other jobs
    for job in out["jobs"]:
        assert job["alone_s"] == FakeEngine.ALONE_S[job["kind"]]
        assert job["shared_s"] == pytest.approx(job["alone_s"] * share)
        assert job["slowdown"] == pytest.approx(job["shared_s"] / job["alone_s"])
    assert [(j["name"], j["gpus"], j["placement"]) for j in out["jobs"]] == [
        ("pretrain", 16, "packed"), ("chat", 8, "packed"), ("noise", 4, "packed")]


def test_each_job_runs_alone_then_all_together_on_disjoint_nodes_in_spec_order(parsers):
    engine = FakeEngine()
    run_cluster(three_jobs(parsers, chat="spread"), rig_for(engine))
    assert [[job.kind for job in call] for call in engine.calls] == [
        ["train"], ["infer"], ["traffic"], ["train", "infer", "traffic"]]
    hosts = [job.host_of_gpu for job in engine.calls[-1]]
    assert [h.size for h in hosts] == [16, 8, 4]
    assert np.unique(np.concatenate(hosts)).size == 28  # no host twice
    assert hosts[0].tolist() == list(range(16))  # packed: the first four free nodes
    assert (hosts[1] // 4).tolist() == [4] * 4 + [6] * 4  # spread over the free nodes 4..7: every other one
    assert (hosts[2] // 4).tolist() == [5] * 4  # then the first node still free


def test_links_carry_each_jobs_flows_in_the_shared_steady_state(parsers):
    """Each fake job sends CALLS calls of one flow from its first host to its last: pretrain (hosts
    0-15) crosses from leaf 0 to leaf 1 through a spine (2 leaf links, 2 spine links), chat (16-23)
    and noise (24-27) stay under one leaf (2 leaf links each). A link's rate is the bytes per step of
    the jobs on it over their shared step time."""
    result = run_cluster(three_jobs(parsers), rig_for(FakeEngine()))
    links = result.to_json()["links"]
    topology = build_topology(WIDE)
    per_call = FakeEngine.CALLS * FakeEngine.FLOW_BYTES
    assert list(links) == ["leaf", "spine"]
    assert links["leaf"]["bytes"] == pytest.approx(6 * per_call)
    assert links["spine"]["bytes"] == pytest.approx(2 * per_call)
    shared = {job.name: job.shared_s for job in result.jobs}
    tiers = link_tiers(topology)
    spine_Bps, leaf_Bps = topology.capacity_Bps[tiers == 2].max(), topology.capacity_Bps[tiers == 1].max()
    assert links["spine"]["max_utilization"] == pytest.approx(per_call / shared["pretrain"] / spine_Bps)
    assert links["leaf"]["max_utilization"] == pytest.approx(per_call / shared["chat"] / leaf_Bps)  # the shortest step
    busy = 2 * per_call * sum(1 / shared[name] for name in shared) / leaf_Bps  # every job's two leaf links
    assert links["leaf"]["mean_utilization"] == pytest.approx(busy / np.sum(tiers == 1))


def test_a_job_that_no_longer_fits_names_its_command(parsers):
    data = {"fabric": WIDE, "jobs": [{"name": "a", "command": TRAIN16}, {"name": "b", "command": TRAIN16},
                                     {"name": "c", "command": TRAFFIC}]}
    with pytest.raises(FabricsimError, match=r"^jobs\[2\]\.command: c needs 1 nodes .* leave 0 of the fabric's 8"):
        run_cluster(parse_spec(data, parsers), rig_for(FakeEngine()))


def test_a_placement_refusal_names_the_jobs_placement(parsers):
    whole = TRAIN16.replace("--gpus 16", "--gpus 32")  # all 8 nodes: fits packed, not every other node
    data = {"fabric": WIDE, "jobs": [{"name": "a", "command": whole, "placement": "spread"}]}
    with pytest.raises(FabricsimError, match=r"^jobs\[0\]\.placement: spread needs"):
        run_cluster(parse_spec(data, parsers), rig_for(FakeEngine()))


def test_an_api_error_while_building_a_job_names_its_command(parsers):
    data = {"fabric": WIDE, "jobs": [{"name": "a", "command": TRAIN16.replace("llama3-8b", "no-such-model")}]}
    with pytest.raises(FabricsimError, match=r"^jobs\[0\]\.command: --model: unknown model"):
        run_cluster(parse_spec(data, parsers), rig_for(FakeEngine()))


def test_api_cluster_reads_the_spec_builds_the_bare_fabric_for_tenants_and_runs(tmp_path, monkeypatch):
    """api.cluster: the spec file, the fabric from the builder string (traffic tenants alone: one host
    per node), then run_cluster with the rig; the engine's part of the rig is faked."""
    engine, seen = FakeEngine(), {}

    def rig(spec, built):
        topology, gpus_per_node = built.topology, built.gpus_per_node
        seen.update(hosts=topology.hosts, gpus_per_node=gpus_per_node, system=built.system)
        return ClusterRig(topology, gpus_per_node, flow_fabric(topology), fake_place, engine.fabric_job,
                          engine.simulate_jobs)

    monkeypatch.setattr(cluster_api, "_parse_placement", fake_parse_placement)
    monkeypatch.setattr(cluster_api, "_rig", rig)
    path = tmp_path / "tenants.yaml"
    path.write_text(f"fabric: {WIDE}\njobs:\n  - name: a\n    command: {TRAFFIC}\n"
                    f"  - name: b\n    command: traffic all-to-all --hosts 8 --size 4MiB\n    placement: spread\n")
    out = api.cluster(str(path)).to_json()
    assert seen == {"hosts": 32, "gpus_per_node": 1, "system": None}
    assert [(j["name"], j["kind"], j["gpus"], j["placement"]) for j in out["jobs"]] == [
        ("a", "traffic", 4, "packed"), ("b", "traffic", 8, "spread")]
    assert out["links"]["leaf"]["bytes"] > 0


def test_a_bad_fabric_string_names_the_fabric_key(parsers):
    spec = parse_spec({"fabric": "fat-tree:k=0", "jobs": [{"name": "a", "command": TRAFFIC}]}, parsers)
    with pytest.raises(FabricsimError, match=r"^fabric: "):
        cluster_api.cluster_topology(spec)
