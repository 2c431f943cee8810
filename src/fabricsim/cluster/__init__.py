"""Several jobs on one fabric: ``fabricsim cluster SPEC.yaml`` (layer L8).

:mod:`~fabricsim.cluster.spec` reads the spec (a fabric and its jobs, each written as the fabricsim
command a user would run alone), :mod:`~fabricsim.cluster.command` turns a job's command line into
the keywords of the public API function that command calls, :mod:`~fabricsim.cluster.run` places
the jobs and times each alone and all together through the engine, and
:mod:`~fabricsim.cluster.links` sums the links' load per switch tier. The catalog and the public API
sit above this layer: :mod:`fabricsim.api.cluster` passes in what needs them.
"""
