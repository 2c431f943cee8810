"""fabricsim.engine (layer L6): turn a workload into times, one home per model.

* :mod:`fabricsim.engine.training` -- training step: closed form (``analytic``, ``step_time``,
  ``memory``, ``results``) and the simulated step (``simulate``).
* :mod:`fabricsim.engine.inference` -- inference: the replica step model (``step``), the static-batch
  closed form (``analytic``), the simulated batch (``simulate``), the request-level scheduler
  (``scheduler``) and its wiring to the step model (``serving``).
* :mod:`fabricsim.engine.simulate`, :mod:`fabricsim.engine.variability`,
  :mod:`fabricsim.engine.fabric_loop` -- shared: event-driven execution of an op graph, seeded
  variability, and the fabric in the loop (a step's collectives as flows or packets on the placed
  fabric, with everything else in flight; one or several jobs).

Submodules are imported on demand so that importing one engine does not load the others.
"""
