"""mkdocs hook: Sphinx cross-reference roles in docstrings become links; the function
list of ``constropt.files`` comes from the function table.

constropt's docstrings are numpydoc, written with Sphinx roles (``:class:`Problem```,
``:func:`~constropt.solve```).  mkdocstrings renders them as the literal role followed by
code; this hook turns each into an autorefs cross-reference to the API reference page
that documents the target, or into plain code when no page does (no warning: the
reference is marked optional).
"""

from __future__ import annotations

import html
import re

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj|const):<code>(~?)([\w.]+)</code>")


def _replace(match: re.Match) -> str:
    tilde, target = match.group(1), match.group(2)
    shown = target.rsplit(".", 1)[-1] if tilde else target
    ident = target if target.startswith("constropt") else f"constropt.{target}"
    return (f'<autoref identifier="{html.escape(ident)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>")


def _function_list() -> str:
    """``constropt.files``'s ``{FUNCTIONS}`` as rendered HTML (the docstring is read
    from the source; the package fills the list in when imported)."""
    from constropt.files._names import function_list

    text = " ".join(function_list().split())
    return re.sub(r"``([^`]+)``", lambda m: f"<code>{html.escape(m.group(1))}</code>", text)


def on_page_content(html_text: str, **kwargs) -> str:
    """Rewrite ``:role:<code>target</code>`` left in a rendered page, and fill in the
    function list of ``constropt.files``."""
    if "{FUNCTIONS}" in html_text:
        html_text = html_text.replace("{FUNCTIONS}", _function_list())
    return _ROLE.sub(_replace, html_text)
