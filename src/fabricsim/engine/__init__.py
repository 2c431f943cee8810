"""fabricsim.engine (layer L6): turn a workload into times.

* :mod:`fabricsim.engine.analytic` -- closed-form training step, µs per layout:
  ``estimate_training(model, system, layout, global_batch, seq_len)``, ``training_memory(...)``
  (memory only, for pruning) and ``check_layout(...)`` (raises ``FabricsimError``).
* :mod:`fabricsim.engine.simulate` -- event-driven execution of an op graph.

Submodules are imported on demand so that importing one engine does not load the others.
"""
