"""The run: ``solve``, ``solve_batch``, :class:`Search` and ``resume`` build the search
(``_build``), run the driver, hand the best points to :mod:`constropt.finish` and, when
asked, to :mod:`constropt.certify`; options, checkpoints, progress and the search box's
expansion live here too."""
