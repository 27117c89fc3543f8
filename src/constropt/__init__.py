"""constropt: constrained optimization problems declared in sympy, lowered to fused,
vectorized torch code, searched by an evolutionary engine on CPU or CUDA, polished with
exact derivatives and cross-checked against scipy.

>>> import sympy as sp, constropt
>>> x, y = sp.symbols("x y")
>>> res = constropt.solve((x - 1)**2 + (y - 2)**2, [x + y <= 2], seed=0)  # doctest: +SKIP

Messages of the solver (the search's setup at INFO, progress snapshots at DEBUG) go to
the ``constropt`` logger, which has only a ``NullHandler``: configure logging in your
application (``logging.basicConfig(level=logging.INFO)``) to see them.
"""

import logging

from . import benchmarks, files
from ._errors import (
    CheckpointError,
    ConstroptError,
    DeviceError,
    OptionError,
    ParseError,
    ProblemError,
    SolveFailedError,
    UnsupportedExpressionError,
)
from .certify._bnb import Certificate
from .engine._memory import MemoryWarning
from .finish._crosscheck import CrossCheck, ReferenceRun, Verdict, cross_check
from .finish._result import History, Result, Status
from .finish._verify import Verification
from .interface import _plot  # noqa: F401  (registers the plots of Problem.plot, Result.plot)
from .parallel._islands import DistributedError, solve_islands
from .parallel._shard import solve_batch
from .problem._fbbt import InfeasibilityProof
from .problem._fitness import CompileWarning, Fitness
from .problem._problem import DEFAULT_BOUND, BoundsWarning, Evaluation, Problem
from .problem._scipy import ScipyProblem
from .solver._batch import BatchResult
from .solver._options import SolveOptions
from .solver._progress import Progress
from .solver._search import BestPoint, Search
from .solver._solve import resume, solve

__version__ = "0.1.0"

# a library adds a NullHandler and configures nothing else (no level, no output)
logging.getLogger("constropt").addHandler(logging.NullHandler())

__all__ = [
    # solving
    "solve", "solve_batch", "solve_islands", "resume", "cross_check", "Search", "BestPoint",
    # problems and results
    "Problem", "Evaluation", "Fitness", "Result", "BatchResult", "Status", "History", "Progress",
    "SolveOptions", "CrossCheck", "ReferenceRun", "Verdict", "ScipyProblem", "DEFAULT_BOUND",
    "Verification",
    "Certificate", "InfeasibilityProof",
    # errors and warnings
    "ConstroptError", "ProblemError", "UnsupportedExpressionError", "OptionError",
    "DeviceError", "ParseError", "CheckpointError", "SolveFailedError", "DistributedError",
    "BoundsWarning", "MemoryWarning", "CompileWarning",
    # sub-packages
    "benchmarks", "files", "__version__",
]
