"""Bill of materials, power, energy and price of a cluster and its fabric (layer L8).

Pure functions over specs: :mod:`~fabricsim.cost.spec` (the component data, built by
``fabricsim.api.cost`` from the catalog), :mod:`~fabricsim.cost.bom` (counts from a topology
inventory), :mod:`~fabricsim.cost.power` (watts by component group at a load),
:mod:`~fabricsim.cost.energy` (joules per step, token and byte) and :mod:`~fabricsim.cost.prices`.
"""
