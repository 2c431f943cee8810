"""Training step models (layer L6): closed form (:mod:`.analytic` composing :mod:`.step_time` and
:mod:`.memory` into :mod:`.results`) and the simulated step (:mod:`.simulate`)."""
