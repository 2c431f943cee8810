"""A bad key inside a ``--topology`` string is one line naming ``topology`` (the option the user
typed), with the builder and key in the message, and exit status 2, on every command that takes
one; a bare ``dims:`` or ``twisted:`` named no option, and ``gpus:`` (of ``dgx-h100:gpus=0``)
named another one."""

import pytest

from fabricsim.cli.app import main

TPU = ["--system", "tpu-v5p", "--gpus", "64"]
COMMANDS = {
    "plan infer": ["plan", "infer", "--model", "llama3-70b", *TPU, "--input-len", "128", "--output-len", "16"],
    "plan train": ["plan", "train", "--model", "llama3-70b", *TPU, "--global-batch", "64", "--seq-len", "2048",
                   "--refine", "1"],
    "train": ["train", "--model", "llama3-70b", *TPU, "--global-batch", "64", "--seq-len", "2048",
              "--fidelity", "flow"],
    "collective": ["collective", "all-reduce", *TPU, "--size", "1MiB", "--fidelity", "flow"],
    "traffic": ["traffic", "all-to-all"],
}  # fmt: skip
BAD = {
    "ocs-torus:0x4x4": "ocs-torus dims: an OCS slice is 3 dimensions of whole 4x4x4 cubes",
    "ocs-torus:4x4x4,twisted=1": "ocs-torus twisted: a 4x4x4 slice has no twisted form",
    "ocs-torus:4x4x8,twisted=2": "ocs-torus twisted: must be 0 or 1",
}


@pytest.mark.parametrize("topology", sorted(BAD))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_ocs_slice_names_the_topology_option(command, topology, capsys) -> None:
    assert main([*COMMANDS[command], "--topology", topology]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: topology: {BAD[topology]}"), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("topology", "message"),
    [("fat-tree:k=0", "fat-tree k: must be positive"), ("dgx-h100:gpus=0", "dgx-h100 gpus: must be positive"),
     ("torus:dims=8xq", "torus dims: must look like"), ("fat-tree:k=4,latency=fast", "fat-tree latency: ")],
)  # fmt: skip
def test_a_bad_key_of_any_builder_names_the_topology_option(topology, message, capsys) -> None:
    assert main([*COMMANDS["traffic"], "--topology", topology]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: topology: {message}") and len(err.splitlines()) == 1, err
