"""Every ```python block of the README and of docs/*.md runs as written.

The blocks of one page run in order in one namespace (a page reads as one session),
in a temporary folder that links ``examples/`` (so relative paths in the docs resolve
and files the snippets write land nowhere in the repository).  Two HTML comments,
invisible on the rendered pages, steer this test:

* ``<!-- doc-test: skip (why) -->`` right before a block: the block is not run (it needs a
  GPU or torchrun);
* ``<!-- doc-test: slow (why) -->`` anywhere on a page: the page's test is marked ``slow``
  (it runs in the full suite, not in ``-m "not slow"``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\b[^>]*-->\s*$")
SLOW = re.compile(r"<!--\s*doc-test:\s*slow\b[^>]*-->")


def blocks(text: str):
    """``(line, code, skipped)`` for each python block of a page."""
    out = []
    for m in BLOCK.finditer(text):
        before = text[:m.start()].rstrip("\n")
        skipped = bool(SKIP.search(before.rsplit("\n", 1)[-1]))
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1), skipped))
    return out


def _params():
    out = []
    for page in PAGES:
        text = page.read_text()
        if not blocks(text):
            continue
        marks = [pytest.mark.slow] if SLOW.search(text) else []
        out.append(pytest.param(page, marks=marks, id=str(page.relative_to(ROOT))))
    return out


def test_block_extraction_and_markers():
    text = ("intro\n```python\na = 1\n```\n<!-- doc-test: skip -->\n```python\nb = 2\n```\n"
            "```bash\nls\n```\n")
    got = blocks(text)
    assert [(c, s) for _, c, s in got] == [("a = 1\n", False), ("b = 2\n", True)]
    assert got[0][0] == 2
    assert SLOW.search("<!-- doc-test: slow (1,000 instances) -->")
    assert blocks("<!-- doc-test: skip (needs torchrun) -->\n```python\nc = 3\n```\n")[0][2]


@pytest.mark.parametrize("page", _params())
def test_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    namespace = {"__name__": "__doc_snippets__"}
    for line, code, skipped in blocks(page.read_text()):
        if skipped:
            continue
        where = f"{page.relative_to(ROOT)}, block at line {line}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # default-box warnings and the like are shown
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code, where, "exec"), namespace)  # noqa: S102 - our docs
            except Exception as exc:
                pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
    assert os.getcwd() == str(tmp_path)
