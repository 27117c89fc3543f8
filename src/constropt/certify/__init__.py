"""Proven bounds: the interval branch-and-bound after the search (``_bnb``), its per-box
objective bounds (``_bounds``), node domains (``_nodes``), the second-order exclusion box
(``_exclusion``) and the fields a certificate adds to a Result (``_result``).
"""
