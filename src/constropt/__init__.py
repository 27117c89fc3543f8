"""constropt: constrained optimization problems declared in sympy, lowered to fused,
vectorized torch code, searched by an evolutionary engine on CPU or CUDA, polished with
exact derivatives and cross-checked against scipy.

>>> import sympy as sp, constropt
>>> x, y = sp.symbols("x y")
>>> res = constropt.solve((x - 1)**2 + (y - 2)**2, [x + y <= 2], seed=0)  # doctest: +SKIP
"""

from ._batch import BatchResult, solve_batch
from ._crosscheck import CrossCheck, ReferenceRun, Verdict, cross_check
from ._errors import (CheckpointError, ConstroptError, DeviceError, OptionError, ParseError,
                      ProblemError, SolveFailedError, UnsupportedExpressionError)
from ._options import SolveOptions
from ._interop import ScipyProblem
from ._memory import MemoryWarning
from ._problem import DEFAULT_BOUND, BoundsWarning, Evaluation, Problem
from ._progress import Progress
from ._result import History, Result, Status
from ._solve import resume, solve
from ._distributed import DistributedError, solve_islands

from . import benchmarks, files

__version__ = "0.1.0"

__all__ = [
    "solve", "solve_islands", "DistributedError", "solve_batch", "BatchResult", "resume", "cross_check", "CrossCheck", "ReferenceRun", "Verdict", "Problem", "Evaluation", "Result", "Status", "History", "SolveOptions", "Progress", "ScipyProblem",
    "ConstroptError", "ProblemError", "UnsupportedExpressionError", "OptionError",
    "DeviceError", "ParseError", "CheckpointError", "SolveFailedError", "BoundsWarning", "MemoryWarning",
    "DEFAULT_BOUND", "benchmarks", "files", "__version__",
]
