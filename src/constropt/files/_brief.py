"""Short, bounded text for values echoed in error messages.

A value read from a problem file may be huge (a long list, a deeply nested table);
echoing its full ``repr`` in an error message could take gigabytes.  :func:`brief` shows
at most a few elements per container, a few levels deep, and :data:`MAX_ECHO`
characters in all.
"""

from __future__ import annotations

import reprlib

__all__ = ["brief", "MAX_ECHO"]

#: The longest text :func:`brief` returns.
MAX_ECHO = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlong = 60


def brief(value) -> str:
    """``repr(value)`` cut to a bounded size (containers elided with ``...``)."""
    text = _REPR.repr(value)
    return text if len(text) <= MAX_ECHO else text[:MAX_ECHO - 3] + "..."
