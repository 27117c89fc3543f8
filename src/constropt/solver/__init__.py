"""The solve stage: ``solve``, ``solve_batch`` and ``resume`` run the search driver,
polish the best point through the scipy bridge, check it and report a :class:`Result`;
options, checkpoints and the scipy cross-check live here too."""
