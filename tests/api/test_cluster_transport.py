"""A cluster spec's ``transport``/``ber`` reach the packet network its jobs share (issue 26, item 7)."""

from __future__ import annotations

import importlib

import pytest
import yaml

from fabricsim.cluster.spec import JobParsers, load_spec
from fabricsim.errors import FabricsimError

cluster_api = importlib.import_module("fabricsim.api.cluster")  # the module (api.cluster is the function)
TENANT = {"name": "noise", "command": "traffic permutation --size 64KiB --hosts 4"}


def _spec(tmp_path, **keys):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"fabric": "fat-tree:k=4,gbps=400", "fidelity": "packet", **keys,
                                    "jobs": [TENANT]}))  # fmt: skip
    return path


def _network(path):
    spec = load_spec(path, JobParsers(cluster_api.COMMANDS, cluster_api._parse_placement))
    return cluster_api._rig(spec, cluster_api.cluster_topology(spec)).fabric.network


def test_the_spec_transport_and_ber_build_the_packet_network(tmp_path):
    network = _network(_spec(tmp_path, transport="uet", ber="1e-9"))
    assert network.transport.name == "uet" and network.transport.params.ber == 1e-9
    assert _network(_spec(tmp_path)).transport.name == "roce"  # no system: RoCE, as before
    result = cluster_api.cluster(str(_spec(tmp_path, transport="uet")))
    assert result.jobs[0].shared_s > 0


@pytest.mark.parametrize(("keys", "field"), [({"transport": "tcp"}, "transport"), ({"ber": "0.5"}, "ber")])
def test_a_bad_transport_or_rate_is_refused_before_anything_runs(tmp_path, keys, field):
    with pytest.raises(FabricsimError) as caught:
        cluster_api.cluster(str(_spec(tmp_path, **keys)))
    assert caught.value.field == field


def test_the_spec_cc_params_reach_the_shared_packet_network(tmp_path):
    network = _network(_spec(tmp_path, transport="uet", cc_params={"classes": 2, "background_class": 1}))
    assert network.transport.params.classes == 2 and network.transport.params.background_class == 1
    assert _network(_spec(tmp_path, transport="uet")).transport.params.classes == 1


def test_traffic_classes_the_transport_cannot_run_are_refused_naming_cc_params(tmp_path):
    with pytest.raises(FabricsimError) as caught:
        cluster_api.cluster(str(_spec(tmp_path, transport="ib", cc_params={"classes": 2})))
    assert caught.value.field == "cc_params" and "transport: roce or uet" in caught.value.fix
