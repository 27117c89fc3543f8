"""Shared test configuration.

Hypothesis profiles: the default draws new random examples on every run (developers'
runs keep exploring); ``ci`` (``CONSTROPT_HYPOTHESIS_PROFILE=ci``, set by ``.ci/run``)
draws a fixed, seed-independent set, so CI's verdict depends on the code only.  A
property a random run falsifies gets a deterministic regression test of its own.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("CONSTROPT_HYPOTHESIS_PROFILE", "default"))
