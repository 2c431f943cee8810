"""``cost`` on the systems of issue 25: it prices what is sourced and refuses, in one line naming what
is missing, what is not -- no traceback, no silent zero. The accelerators' power is published for
AMD (750 / 1000 / 1400 W TBP), Gaudi 3 (900 W) and Blackwell Ultra, not for Google's TPUs or AWS's
Trainium2 (tdp_w); no OEM publishes the rated maximum of an 8-GPU AMD or Gaudi 3 server
(node_max_W), so those nodes refuse until a --prices file gives it."""

from __future__ import annotations

import pytest

from fabricsim import api
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError

PRICED = {"hgx-b300": 16, "gb300-nvl72": 72}
NO_NODE_POWER = {"mi300x-8": 16, "mi325x-8": 16, "mi355x-8": 16, "gaudi3-8": 16}
NO_CHIP_POWER = {"tpu-v5p": 64, "tpu-v6e": 16, "tpu7x": 64, "trn2": 32, "trn2-ultraserver": 64}


@pytest.mark.parametrize(("system", "gpus"), PRICED.items())
def test_blackwell_ultra_is_priced(system: str, gpus: int) -> None:
    power = api.cost(system, gpus).power
    assert power.gpus > 0 and power.hosts > 0 and power.total > power.it_W


@pytest.mark.parametrize(("system", "gpus", "missing"), [
    *((name, gpus, "node_max_W") for name, gpus in NO_NODE_POWER.items()),
    *((name, gpus, "tdp_w") for name, gpus in NO_CHIP_POWER.items()),
])  # fmt: skip
def test_a_system_without_published_power_refuses_in_one_line(capsys, system: str, gpus: int, missing: str) -> None:
    with pytest.raises(FabricsimError, match=missing):
        api.cost(system, gpus)
    assert main(["cost", "--system", system, "--gpus", str(gpus)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and missing in captured.err


def test_a_node_power_from_a_prices_file_prices_the_amd_node(tmp_path) -> None:
    """With the server's maximum supplied, the 8 GPUs draw their 750 W data-sheet TBP (device mi300x)
    and the rest of the nameplate is the host."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("systems:\n  mi300x-8: {node_max_W: 11000}\n")
    power = api.cost("mi300x-8", 8, prices=str(prices)).power
    assert power.gpus == pytest.approx(8 * 750)
    assert power.gpus + power.hosts + power.nics == pytest.approx(11000)


def test_an_adapter_without_power_data_is_refused_not_counted_as_zero(tmp_path) -> None:
    """gaudi3-8's scale-out ports (link roce-200) have no catalogued adapter power: refused by name;
    a prices file can state it (0 W: Gaudi 3's RoCE ports are on the die, inside its 900 W)."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("systems:\n  gaudi3-8: {node_max_W: 12000}\n")
    with pytest.raises(FabricsimError, match="roce-200"):
        api.cost("gaudi3-8", 16, prices=str(prices))
    stated = tmp_path / "stated.yaml"  # another file: the cost catalog is cached per path
    stated.write_text("systems:\n  gaudi3-8: {node_max_W: 12000}\nnics:\n  roce-200: {power_W: 0}\n")
    power = api.cost("gaudi3-8", 16, prices=str(stated)).power
    assert power.gpus == pytest.approx(16 * 900) and power.nics == 0
