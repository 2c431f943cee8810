"""The API's own loaders of user files (failure rates, the component counts of a system YAML, a
prices file) re-read the file after it changes in the same process, as the catalog's loads do
(they were cached by the path string alone, so an edited file gave the old answer). Every rewrite
bumps the mtime explicitly, so no test passes by the clock's luck."""


from fabricsim import catalog
from fabricsim.api.cost import load_cost_catalog
from fabricsim.api.goodput import component_counts, load_rates

RATES = (catalog.data_root() / "reliability" / "llama3-h100.yaml").read_text()
SYSTEM = (catalog.data_root() / "systems" / "dgx-h100.yaml").read_text()



def test_an_edited_failure_rate_file_is_read_again(tmp_path, rewrite_file) -> None:
    path = tmp_path / "rates.yaml"
    rewrite_file(path, RATES)
    assert load_rates(str(path)).storage.pfs_bandwidth_Bps == 2.0e12
    assert load_rates(str(path)) is load_rates(str(path))  # unchanged: from the cache
    rewrite_file(path, RATES.replace("pfs_bandwidth_Bps: {value: 2.0e+12", "pfs_bandwidth_Bps: {value: 3.0e+12"))
    assert load_rates(str(path)).storage.pfs_bandwidth_Bps == 3.0e12


def test_the_component_counts_of_an_edited_system_yaml_are_counted_again(tmp_path, rewrite_file) -> None:
    path = tmp_path / "system.yaml"
    rewrite_file(path, SYSTEM)
    assert component_counts(str(path), 64).nics == 64
    rewrite_file(path, SYSTEM.replace("nics_per_node: {value: 8", "nics_per_node: {value: 4"))
    assert component_counts(str(path), 64).nics == 32
    assert component_counts("dgx-h100", 64).nics == 64  # the catalog name is another entry


def test_the_component_counts_see_an_edit_of_the_device_file_the_system_names(tmp_path, rewrite_file) -> None:
    device = tmp_path / "gpu.yaml"
    text = (catalog.data_root() / "devices" / "h100-sxm.yaml").read_text()
    rewrite_file(device, text)
    system = tmp_path / "system.yaml"
    rewrite_file(system, SYSTEM.replace("device: h100-sxm", f"device: {device}"))
    first = component_counts(str(system), 64)
    assert component_counts(str(system), 64) is first
    rewrite_file(device, text + "\n")  # any change of a file it was built from makes a new entry
    assert component_counts(str(system), 64) is not first


def test_an_edited_prices_file_is_read_again(tmp_path, rewrite_file) -> None:
    path = tmp_path / "prices.yaml"
    rewrite_file(path, "facility:\n  pue_air: 1.2\n")
    assert load_cost_catalog(str(path)).facility.pue_air == 1.2
    assert load_cost_catalog(str(path)) is load_cost_catalog(str(path))
    rewrite_file(path, "facility:\n  pue_air: 1.5\n")
    assert load_cost_catalog(str(path)).facility.pue_air == 1.5
    assert load_cost_catalog() is load_cost_catalog()  # the shipped data: cached for the process
    assert load_cost_catalog().facility.pue_air == 1.4
