"""Every YAML file shipped with the package parses to the same objects with libyaml's loader as with
the pure-Python safe loader (issue 27: the NCCL constants and the cost catalog are read with the C
loader, a third of a one-off train's parsing time)."""

from pathlib import Path

import pytest
import yaml

import fabricsim

SHIPPED = sorted(Path(fabricsim.__file__).parent.rglob("*.yaml"))


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
def test_libyaml_reads_every_shipped_file_as_the_safe_loader() -> None:
    assert len(SHIPPED) > 20
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        assert repr(yaml.load(text, Loader=yaml.CSafeLoader)) == repr(yaml.load(text, Loader=yaml.SafeLoader)), path
