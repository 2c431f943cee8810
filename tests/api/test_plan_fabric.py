"""``plan train --refine K`` on a fabric: the refined plans run with every collective on it (issue 23)."""

import pytest

from fabricsim import api
from fabricsim.errors import FabricsimError

ARGS = ("gpt3-175b", "dgx-h100", 1024, 512, 2048)
FABRIC = "leaf-spine:leaves=32,spines=8,hosts_per_leaf=32,oversubscription=4"


def test_refined_plans_are_slower_spread_on_a_4_to_1_fabric_than_on_the_systems_own():
    constraints = {"tp": 8, "pp": 8}
    own = api.plan_train(*ARGS, top=1, refine=1, constraints=constraints).to_json()
    spread = api.plan_train(*ARGS, top=1, refine=1, constraints=constraints, topology=FABRIC,
                            placement="spread").to_json()
    assert own["refined"] == spread["refined"] == 1
    assert spread["plans"][0]["step_time_s"] > 1.2 * own["plans"][0]["step_time_s"]


def test_fabric_options_need_refined_plans():
    with pytest.raises(FabricsimError) as err:
        api.plan_train(*ARGS, top=1, constraints={"tp": 8, "pp": 8}, placement="spread")
    assert err.value.field == "placement" and "--refine" in str(err.value)
