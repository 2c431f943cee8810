"""Determinism across processes and hash seeds: the same command prints the same bytes.

Within one process a result could be stable while depending on ``PYTHONHASHSEED`` (set or dict
iteration order of strings) or on state left by an earlier call; two fresh interpreters with
different hash seeds rule both out.
"""

import os
import subprocess
import sys

import pytest

COMMANDS = {
    "train": ["train", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "64", "--global-batch", "64",
              "--seq-len", "4096", "--tp", "8", "--pp", "2", "--json"],
    "train-flow-variability": ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64",
                               "--global-batch", "16", "--seq-len", "2048", "--tp", "8", "--pp", "8", "--fidelity",
                               "flow", "--jitter", "0.05", "--seeds", "4", "--json"],
    "serve": ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "1",
              "--arrival-rate", "40", "--requests", "300", "--input-len", "uniform:100,2000", "--output-len", "128",
              "--seed", "3", "--json"],
    "traffic": ["traffic", "permutation", "--topology", "fat-tree:k=8", "--routing", "ecmp", "--seed", "5", "--json"],
    # the Monte-Carlo goodput, the simulated inference with jitter and the packet kernel with DCQCN and
    # spraying: each was checked only by calling it twice in one process
    "goodput": ["goodput", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1024", "--global-batch", "1024",
                "--seq-len", "4096", "--tp", "1", "--zero", "1", "--days", "30", "--link-failures", "stop", "--runs",
                "300", "--seed", "2", "--json"],
    "infer-simulate-jitter": ["infer", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8",
                              "--batch", "16", "--input-len", "512", "--output-len", "64", "--fidelity", "simulate",
                              "--jitter", "0.1", "--seeds", "4", "--seed", "3", "--json"],
    "traffic-packet-dcqcn": ["traffic", "all-to-all", "--topology", "fat-tree:k=4,gbps=400", "--fidelity", "packet",
                             "--cc", "dcqcn", "--lossless", "pfc", "--spray", "--size", "256KiB", "--seed", "5",
                             "--json"],
    "plan": ["plan", "train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "256", "--global-batch",
             "512", "--seq-len", "2048", "--top", "3", "--json"],
}


def _run(args: list[str], hash_seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-m", "fabricsim.cli.app", *args], capture_output=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_processes_with_different_hash_seeds_print_identical_bytes(name: str) -> None:
    first, second = _run(COMMANDS[name], "1"), _run(COMMANDS[name], "4242")
    assert first, "no output"
    if name == "plan":  # the planner reports its own wall time; everything else must match
        import json

        a, b = json.loads(first), json.loads(second)
        a.pop("elapsed_s"), b.pop("elapsed_s")
        assert a == b
    else:
        assert first == second
