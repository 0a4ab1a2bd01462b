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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_opening_a_notebook_does_not_modify_it(path: pathlib.Path):
    """JupyterLab marks a notebook modified when, on opening, it adds a cell id or
    writes the kernel's `kernelspec`/`language_info` over different stored ones (it
    compares them as JSON): store them as the project's kernel reports them."""
    nbformat = pytest.importorskip("nbformat")
    ipkernel = pytest.importorskip("ipykernel.ipkernel")
    nb = nbformat.read(path, as_version=4)
    assert (nb.nbformat, nb.nbformat_minor) >= (4, 5)
    missing = [i for i, cell in enumerate(nb.cells) if not cell.get("id")]
    assert not missing, f"{path.name}: cells {missing} have no id"
    assert nb.metadata["kernelspec"] == {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3",
    }, f"{path.name}: kernelspec is not the python3 kernel's"
    assert nb.metadata["language_info"] == ipkernel.IPythonKernel.language_info, (
        f"{path.name}: language_info is not what this Python's kernel reports"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_use_the_public_names(path: pathlib.Path):
    """A tutorial writes TensorFlow's names (`tf.FIFOQueue`), not flowlab's modules;
    flowlab's own tools (`flowlab.viz`, `flowlab.debug`, `flowlab.profiler`) are public."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    internal = [
        line for cell in nb.cells if cell.cell_type == "code" for line in cell.source.splitlines()
        if re.match(r"\s*(from|import)\s+flowlab\.(ops|kernels|runtime|graph|train)\b", line)
    ]
    assert not internal, f"{path.name} imports internal modules: {internal}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_shows_a_picture_of_its_graph(path: pathlib.Path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    assert re.search(r"\b(tf|fl)\.show\(|viz\.graph\(|viz\.passes\(", code), (
        f"{path.name} never draws its graph"
    )
