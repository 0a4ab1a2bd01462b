"""Every notebook's exercises have checked answers, and the checks are right.

An exercise is an *answer cell* (`answer_1 = None  # your answer`, left for the learner;
its metadata `flowlab.solution` holds the right answer) followed by a *check cell*
(metadata `flowlab.check`) that prints "not answered yet", "right..." or "not quite...".
nbmake runs the notebooks as stored (unanswered: the checks must say so and not fail);
this test runs each notebook that has exercises with the solutions filled in and reads
what its checks print.  Notebooks without exercise metadata are not this test's.
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat")


def _exercises(path: pathlib.Path) -> tuple[list[int], list[int]]:
    nb = nbformat.read(path, as_version=4)
    answers = [i for i, c in enumerate(nb.cells) if "solution" in c.metadata.get("flowlab", {})]
    checks = [i for i, c in enumerate(nb.cells) if "check" in c.metadata.get("flowlab", {})]
    return answers, checks


WITH_EXERCISES = [p for p in NOTEBOOKS if _exercises(p)[1]]


def _text(cell) -> str:
    """What the cell printed (stdout; a library's logging goes to stderr)."""
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_each_answer_cell_is_left_for_the_learner_and_each_check_follows_one(path):
    nb = nbformat.read(path, as_version=4)
    answers, checks = _exercises(path)
    assert len(answers) == len(checks) >= 1
    for a in answers:
        unanswered = re.search(r"^(\w+) = None\b", nb.cells[a].source, flags=re.M)
        assert unanswered, f"{path.name} cell {a}: the answer cell starts unanswered (answer = None)"
        variable = unanswered.group(1)
        assert re.search(rf"^{variable} = ", nb.cells[a].metadata["flowlab"]["solution"], flags=re.M), (
            f"{path.name} cell {a}: the solution does not set {variable}")
        assert any(nb.cells[c].metadata["flowlab"]["check"] == variable for c in checks if c > a), (
            f"{path.name}: no check cell for {variable} after cell {a}")


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_the_right_answers_are_checked_right(path):
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    answers, checks = _exercises(path)
    for a in answers:
        nb.cells[a].source = nb.cells[a].metadata["flowlab"]["solution"]
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    for c in checks:
        said = _text(nb.cells[c])
        assert said.startswith("right"), f"{path.name} cell {c} with the solution says: {said!r}"
