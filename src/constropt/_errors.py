"""Exception types raised by constropt.

Every error constropt raises on purpose derives from :class:`ConstroptError`, so a
caller can catch them all with one ``except`` clause and still tell a bad problem
declaration from a bad option or an unusable device.
"""

from __future__ import annotations

__all__ = [
    "ConstroptError",
    "ProblemError",
    "UnsupportedExpressionError",
    "OptionError",
    "DeviceError",
    "ParseError",
    "CheckpointError",
    "SolveFailedError",
]


class ConstroptError(Exception):
    """Base class of every error raised by constropt."""


class ProblemError(ConstroptError, ValueError):
    """A problem declaration is invalid: objective, constraint, variable or bound.

    The message names the offending item and shows its value.
    """


class UnsupportedExpressionError(ProblemError):
    """A sympy construct has no lowering; the message names the node."""


class OptionError(ConstroptError, ValueError):
    """A solver option is unknown or has an invalid value."""


class DeviceError(ConstroptError, RuntimeError):
    """The requested device or dtype cannot be used on this machine."""


class ParseError(ProblemError):
    """A problem file or expression string could not be parsed safely.

    Attributes
    ----------
    text : str
        The source text that was rejected.
    lineno, col_offset : int or None
        1-based line and 0-based column of the offending construct, when known.
    """

    def __init__(self, message: str, *, text: str = "", lineno: int | None = None,
                 col_offset: int | None = None) -> None:
        where = ""
        if lineno is not None:
            column = f", column {col_offset + 1}" if col_offset is not None else ""
            where = f" (line {lineno}{column})"
        super().__init__(message + where)
        self.text = text
        self.lineno = lineno
        self.col_offset = col_offset


class CheckpointError(ConstroptError):
    """A checkpoint file is corrupt, unreadable or belongs to another problem."""


class SolveFailedError(ConstroptError):
    """Raised by ``solve(..., throw=True)`` when the run did not succeed.

    Attributes
    ----------
    result : Result
        The full result of the failed run.
    """

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result
