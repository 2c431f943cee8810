"""Model figures derived once per model object (issue 27: api.train in a loop)."""

from fabricsim.catalog import load_model
from fabricsim.transformer.flops import model_dims
from fabricsim.transformer.parameters import parameter_counts


def test_figures_are_derived_once_per_model_object() -> None:
    model = load_model("llama3-8b")
    assert model_dims(model) is model_dims(model)
    assert parameter_counts(model) is parameter_counts(model)


def test_another_model_object_gets_its_own_figures() -> None:
    model = load_model("llama3-8b")
    wider = model.model_copy(update={"hidden_size": 2 * model.hidden_size, "intermediate_size": 7 * 4096})
    assert model_dims(wider).hidden == 2 * model.hidden_size
    assert model_dims(model).hidden == model.hidden_size
    assert parameter_counts(wider).total > parameter_counts(model).total
