"""Reading TOML and YAML problem files into plain Python data, with positioned errors."""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

from constropt._errors import ParseError

from ._brief import brief

__all__ = ["read_toml", "read_yaml", "MAX_FILE_BYTES", "MAX_NESTING"]

#: Problem files larger than this are refused before parsing.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: Deepest nesting of lists and tables a problem file may hold (a problem needs 3).
MAX_NESTING = 32

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_YAML_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


def _too_deep(source: str, where: str = "") -> ParseError:
    return ParseError(f"{source}: values nested too deeply{where} (more than {MAX_NESTING} "
                      "levels of lists and tables)")


def _bracket_depth(text: str) -> tuple[int, int]:
    """Deepest ``[``/``{`` nesting outside strings and comments, and its line (TOML)."""
    depth = deepest = 0
    line = at = 1
    quote = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            if quote in ("'", '"'):
                quote = None  # a basic or literal string ends at its line (or is an error)
        elif quote is not None:
            if ch == "\\" and quote in ('"', '"""'):
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote) - 1
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, line
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return deepest, at


def read_toml(text: str, source: str) -> Any:
    """Parse TOML text; a syntax error becomes a ParseError naming ``source``.

    Values nested deeper than :data:`MAX_NESTING` are refused before parsing (the TOML
    parser recurses into them)."""
    deepest, line = _bracket_depth(text)
    if deepest > MAX_NESTING:
        raise _too_deep(source, f" at line {line}")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise _too_deep(source) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_AT.search(message)
        lineno = col = None
        if match:
            message = message[: match.start()]
            lineno, col = int(match.group(1)), int(match.group(2)) - 1
        raise ParseError(f"{source}: invalid TOML: {message}", text=text,
                         lineno=lineno, col_offset=col) from None


def _yaml_loader(yaml):
    """A SafeLoader that rejects duplicate keys and reads ``1e-4`` as a float."""

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            # aliases let a few hundred bytes expand to billions of nodes ("billion
            # laughs"); a problem file never needs them
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                mark = event.start_mark
                raise ParseError(f"YAML aliases are not allowed in problem files "
                                 f"(*{str(event.anchor)[:40]})", lineno=mark.line + 1,
                                 col_offset=mark.column)
            # the composer and the constructor recurse into nested values
            self.depth += 1
            try:
                if self.depth > MAX_NESTING + 1:
                    mark = self.peek_event().start_mark
                    raise ParseError(f"values nested too deeply (more than {MAX_NESTING} "
                                     "levels of lists and mappings)", lineno=mark.line + 1,
                                     col_offset=mark.column)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # unhashable key: let SafeLoader report it
                    continue
                if duplicate:
                    mark = key_node.start_mark
                    raise ParseError(f"duplicate key {brief(key)}", lineno=mark.line + 1,
                                     col_offset=mark.column)
                seen[key] = True
            return super().construct_mapping(node, deep=deep)

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789."))
    return Loader


def read_yaml(text: str, source: str) -> Any:
    """Parse YAML text safely (never ``yaml.load`` with a full loader).

    PyYAML is an optional dependency and is imported only here.
    """
    try:
        import yaml
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParseError(f"{source}: reading YAML problem files needs PyYAML "
                         "(pip install pyyaml); TOML files need nothing extra") from None
    try:
        return yaml.load(text, Loader=_yaml_loader(yaml))  # noqa: S506 - a SafeLoader subclass
    except ParseError as exc:
        raise ParseError(f"{source}: invalid YAML: {exc.args[0]}") from None
    except RecursionError:
        raise _too_deep(source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParseError(f"{source}: invalid YAML: {problem}", text=text,
                         lineno=mark.line + 1 if mark else None,
                         col_offset=mark.column if mark else None) from None
