"""``ParallelLayout.pairs``: the result's ``layout`` keys in field order, short names, recompute as
its value and expert TP resolved (issue 27: built without a dict on the train hot path)."""

from fabricsim.specs import ParallelLayout, Recompute


def test_pairs_are_the_json_view_in_field_order() -> None:
    layouts = [
        ParallelLayout(),
        ParallelLayout(tensor_parallel=4, pipeline_parallel=2, recompute=Recompute.FULL, sequence_parallel=True),
        ParallelLayout(tensor_parallel=4, expert_parallel=8, expert_tensor_parallel=1, dtype="fp8", zero_stage=1),
    ]
    for layout in layouts:
        pairs = layout.pairs()
        assert [key for key, _ in pairs] == [
            "tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute", "sequence_parallel", "dtype",
            "expert_tp",
        ]
        assert dict(pairs) == layout.as_dict()
        assert dict(pairs)["recompute"] == layout.recompute.value
        assert dict(pairs)["expert_tp"] == layout.expert_tp
    assert dict(layouts[2].pairs())["expert_tp"] == 1
    assert dict(layouts[1].pairs())["expert_tp"] == 4


def test_pairs_are_built_once_and_are_no_part_of_the_value() -> None:
    """Issue 27: a layout keeps its pairs (layouts are shared per distinct tuple by api.train), but
    equality, hashing, copies and pickles see only its fields."""
    import copy
    import pickle

    layout = ParallelLayout(tensor_parallel=4, recompute=Recompute.FULL)
    assert layout.pairs() is layout.pairs()
    fresh = ParallelLayout(tensor_parallel=4, recompute=Recompute.FULL)
    assert layout == fresh and hash(layout) == hash(fresh)
    for copied in (copy.copy(layout), pickle.loads(pickle.dumps(layout))):
        assert copied == layout and copied.pairs() == layout.pairs()
    view = layout.as_dict()
    view["tp"] = 99  # a caller's copy
    assert layout.as_dict()["tp"] == 4
