"""Every notebook's exercises have checked answers, and the checks are right.

An exercise is an *answer cell* (`answer_1 = None  # your answer`, left for the learner;
its metadata `flowlab.solution` holds the right answer) followed by a *check cell*
(metadata `flowlab.check`) that prints "not answered yet", "right..." or "not quite...".
nbmake runs the notebooks as stored (unanswered: the checks must say so and not fail);
tests/binder/test_binder.py runs every notebook again in JupyterLab with the solutions
filled in and requires each check to say "right".  This test checks the exercises'
form: an answer left for the learner, a solution that sets it, a check after it that
knows the unanswered case.  Notebooks without exercise metadata are not this test's.
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
    for c in checks:
        # The check itself, or the helper it calls, says so when the answer is still None.
        helpers = "".join(cell.source for cell in nb.cells[:c + 1] if cell.cell_type == "code")
        assert "not answered yet" in helpers, f"{path.name} cell {c}: no 'not answered yet' case"
