"""The documentation runs: README's first example, and notebooks fit for CI.

The notebooks themselves are executed by nbmake (`pytest --nbmake notebooks`, as
`./scripts/test` does); these tests check what nbmake does not: that the README's
example prints what its comments say, and that every notebook is stored the way CI
and Binder expect it (valid nbformat 4, the `python3` kernel -- which the scripts
resolve to the project's virtualenv -- and no stored outputs, so diffs stay readable
and results shown are always the ones CI computed).
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _readme_python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_first_example_runs_and_prints_what_it_says():
    blocks = _readme_python_blocks()
    assert blocks, "README.md has no ```python example"
    example = blocks[0]
    assert "import flowlab as tf" in example
    assert len(example.strip().splitlines()) <= 15, "the README's first example is kept short"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "README.md", "exec"), {"__name__": "__readme__"})
    assert out.getvalue() == "[[3.]\n [2.]]\n[[4.]]\n"


def test_there_is_a_first_notebook():
    assert ROOT / "notebooks" / "01-first-graph.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_clean(path: pathlib.Path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", (
        f"{path.name}: save it with the 'Python 3 (ipykernel)' kernel"
    )
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), (
        f"{path.name}: the first cell is a markdown title ('# ...')"
    )
    dirty = [
        i for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} have stored outputs; clear them with "
        f"`jupyter nbconvert --clear-output --inplace notebooks/{path.name}`"
    )
