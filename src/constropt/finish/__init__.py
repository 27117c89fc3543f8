"""The finishing path of every mode: from the search's best points to a :class:`Result`.

The one path (``_finish``: stage 1 ``refine``, stage 2 ``judge``, for one instance or a
batch) carrying an instance's ``Budget`` and ``Incumbent`` (``_budget``); the polish
(``_polishing``), integer, flip and piece moves (``_intsearch``, ``_flips``,
``_intbnb``, ``_pieces``, ``_snap``), dead genes (``_deadgenes``), the status of the
final point (``_status``, with the probes of ``_verdict``, ``_rays``, ``_poles`` and the
defined-point rules of ``_defined``), its exact check (``_verify``, ``_repair``), the
reference cross-checks (``_crosscheck``, ``_scip``), Ctrl-C after the search
(``_interrupt``) and the typed results (``_result``).
"""
