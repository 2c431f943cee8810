"""Inference models (layer L6): the replica step model (:mod:`.step`), a static batch in closed form
(:mod:`.analytic`) or simulated (:mod:`.simulate`), and serving: the continuous-batching request
scheduler (:mod:`.scheduler`) wired to the step model (:mod:`.serving`)."""
