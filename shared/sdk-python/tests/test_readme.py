"""The README's quick start, run as it is written."""

import contextlib
import io
import os
import re

from conftest import live

pytestmark = live

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_the_quick_start_runs_as_written():
    with open(README) as f:
        first = re.search(r"```python\n(.*?)```", f.read(), re.S)
    assert first, "the README has a Python block"
    code = first.group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 5, "the quick start is five lines"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().strip() == "42"
