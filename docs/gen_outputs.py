"""Regenerate the program outputs quoted in the docs.

A quoted output is a ```text block right after an HTML comment naming its generator::

    <!-- gen_outputs: demo-blog_example3 -->
    ```text
    ...
    ```

``python docs/gen_outputs.py`` prints every generator's output; ``--write`` replaces
the quoted blocks in docs/*.md with it.  ``tests/edge/test_doc_outputs.py`` checks that the
quoted text is what the generators print now (numbers compared with a tolerance, so the
check holds on any CPU).  Timings vary from run to run and are shown as ``…``.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
MARKER = re.compile(r"(<!--\s*gen_outputs:\s*([\w.-]+)\s*-->\s*\n```text\n)(.*?)(^```)",
                    re.S | re.M)
_SECONDS = re.compile(r"(?<![\w.])\d+\.\d+(?=\s?s\b)")


def mask_timings(text: str) -> str:
    """Seconds (``0.123s``, ``0.944 s``) and the cross-check table's seconds column
    become ``…``: they differ on every run."""
    out = []
    for line in text.splitlines():
        line = _SECONDS.sub("…", line)
        if re.match(r"^(constropt|SLSQP|differential_evolution)\b", line):
            line = re.sub(r"\d+\.\d+\s*$", "…", line.rstrip())
        out.append(line.rstrip())
    return "\n".join(out)


def demo_blog_example3() -> str:
    """``constropt demo``'s second example (seed 0, CPU)."""
    from constropt.interface._demo import run_demo

    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_demo(device="cpu", seed=0, echo=lines.append, names=("blog_example3",))
    return mask_timings("\n".join(lines).rstrip())


GENERATORS = {"demo-blog_example3": demo_blog_example3}


def quoted(page: Path):
    """``(name, quoted text, match)`` for every generated block of ``page``."""
    return [(m.group(2), m.group(3).rstrip("\n"), m) for m in MARKER.finditer(page.read_text())]


def write() -> None:
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        new = MARKER.sub(lambda m: m.group(1) + GENERATORS[m.group(2)]() + "\n" + m.group(4),
                         text)
        if new != text:
            page.write_text(new)
            print(f"updated {page.name}")


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    else:
        for name, fn in GENERATORS.items():
            print(f"== {name}\n{fn()}\n")
