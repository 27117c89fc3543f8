"""The finishing path of every mode: from the search's best points to a :class:`Result`.

Polish and restoration (``_finish``), integer and piece moves (``_intsearch``,
``_intbnb``, ``_pieces``, ``_snap``), dead genes, the verdict on the final point
(``_verdict``, ``_rays``, ``_poles``, ``_defined``), its exact verification
(``_verify``), the reference cross-checks (``_crosscheck``, ``_scip``), Ctrl-C after the
search (``_interrupt``) and the typed results (``_result``).
"""
