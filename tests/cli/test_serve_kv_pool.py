"""``fabricsim serve --kv-pool [--pool-sharing N]``: a shared CXL pool for preempted KV (JSON
``kv_pool`` block, contention among the GPUs sharing it, bad input => exit 2)."""

import json

import pytest

from fabricsim.cli.app import main

# 2 replicas of llama3-8b at a load that overflows their KV caches: requests are preempted
BASE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "2", "--tp", "1", "--requests", "400",
        "--arrival-rate", "40", "--input-len", "uniform:1000,4000", "--output-len", "1024", "--seed", "1"]


def pool_file(tmp_path, capacity_bytes=1e13, bandwidth_Bps=40e9):
    """A pool of fixed bandwidth behind one CXL 3 port, as a user's YAML file."""
    path = tmp_path / f"pool-{capacity_bytes:g}.yaml"
    path.write_text(f"name: test-pool\nlink: cxl3\nswitch: one CXL switch\nports: 1\nhosts: 1\n"
                    f"capacity_bytes: {capacity_bytes}\nbandwidth_Bps: {bandwidth_Bps}\nlatency_s: 600.0e-9\n",
                    encoding="utf-8")
    return str(path)


def serve_json(capsys, *extra):
    assert main([*BASE, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_doubling_the_gpus_that_share_a_pool_raises_the_stall(tmp_path, capsys):
    pool = pool_file(tmp_path)
    alone = serve_json(capsys, "--kv-pool", pool, "--pool-sharing", "2")["kv_pool"]
    shared = serve_json(capsys, "--kv-pool", pool, "--pool-sharing", "4")["kv_pool"]
    assert alone["readmissions"] > 0 and alone["hit_rate"] == shared["hit_rate"] == 1.0
    assert shared["stall_s"] > 1.5 * alone["stall_s"]
    # per byte moved too (the runs differ a little in what they preempt)
    assert shared["stall_s"] / shared["bytes_moved"] > 1.5 * alone["stall_s"] / alone["bytes_moved"]
    assert shared["capacity_bytes"] == alone["capacity_bytes"] / 2 == 1e13 / 2  # the deployment's share


def test_hit_rate_and_bytes_on_a_preempting_run(tmp_path, capsys):
    roomy = serve_json(capsys, "--kv-pool", "cxl-pool-cmm-b")
    block = roomy["kv_pool"]
    assert roomy["preemptions"] > 0
    assert 0 < block["readmissions"] <= roomy["preemptions"] and block["hit_rate"] == 1.0
    # llama3-8b bf16 KV: 32 layers x 2 x 8 heads x 128 x 2 B = 128 KiB per token; each hit is written
    # and read back, at least 1,000 prompt tokens each
    assert block["bytes_moved"] >= 2 * block["readmissions"] * 1000 * 131072
    assert block["sharing_gpus"] == 24 and block["name"] == "cxl-pool-cmm-b"  # 3 hosts x 8 GPUs
    # a pool with room for a few requests serves some re-admissions and recomputes the others
    small = serve_json(capsys, "--kv-pool", pool_file(tmp_path, capacity_bytes=3e9))["kv_pool"]
    assert 0 < small["hit_rate"] < 1
    assert small["bytes_moved"] < block["bytes_moved"]


def test_without_a_pool_nothing_changes_but_the_null_block(tmp_path, capsys):
    plain = serve_json(capsys)
    assert plain["kv_pool"] is None and plain["preemptions"] > 0
    # a pool too small for any request's KV: every preempted request is recomputed, as without one
    useless = serve_json(capsys, "--kv-pool", pool_file(tmp_path, capacity_bytes=1e3))
    assert useless.pop("kv_pool")["hit_rate"] == 0.0
    plain.pop("kv_pool")
    assert json.dumps(useless, sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_the_table_shows_the_pool(capsys):
    assert main([*BASE, "--kv-pool", "cxl-pool-cmm-b"]) == 0
    assert "KV pool" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "words"), [
    (["--kv-pool", "cxl-pool-nope"], ("kv-pool", "cxl-pool-cmm-b")),
    (["--kv-pool", "cxl-pool-cmm-b", "--pool-sharing", "0"], ("pool-sharing",)),
    (["--kv-pool", "cxl-pool-cmm-b", "--pool-sharing", "1"], ("pool-sharing", "2 or more")),
    (["--pool-sharing", "4"], ("pool-sharing", "--kv-pool")),
    (["--gpus", "32", "--kv-pool", "cxl-pool-cmm-b"], ("pool-sharing", "24 GPUs", "32")),
])
def test_bad_pool_input_is_one_line_and_exit_2(capsys, extra, words):
    assert main([*BASE, *extra, "--json"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err and captured.out == ""
    assert all(word in lines[0] for word in words), lines[0]
