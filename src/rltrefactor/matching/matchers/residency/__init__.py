"""Device-residency matchers: syncs, copies and allocations in code that runs per step, and
what one function shows of where a tensor lives (``locations``, ``tensor_values``) and of
the loops that run a function once per layer (``layer_loops``, ``module_stacks``)."""
