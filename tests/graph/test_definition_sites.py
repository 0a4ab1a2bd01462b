"""Where an op was defined, as error messages name it: `file.py:12`, and in a notebook
the cell as IPython names it (`Cell In[2], line 3`), never the temporary file IPython
compiles the cell to."""

from __future__ import annotations

import pytest

import flowlab as fl
from flowlab.graph.tensor import Frame, notebook_cell


@pytest.fixture
def shell():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    sh = interactiveshell.InteractiveShell.instance()
    yield sh
    interactiveshell.InteractiveShell.clear_instance()


def test_a_file_is_named_by_its_base_name():
    assert str(Frame("/home/me/project/model.py", 14, "build")) == "model.py:14"


def test_without_ipython_no_cell_is_named(monkeypatch):
    monkeypatch.delitem(__import__("sys").modules, "IPython", raising=False)
    assert notebook_cell("/tmp/ipykernel_1/1445306353.py") is None


def test_an_op_made_in_a_cell_is_defined_at_that_cell(shell):
    shell.run_cell("import flowlab as fl\n", store_history=True)
    shell.run_cell(
        "g = fl.Graph()\n"
        "with g.as_default():\n"
        "    x = fl.placeholder(fl.float32, [None, 3], name='x')\n",
        store_history=True,
    )
    x = shell.user_ns["x"]
    n = shell.execution_count - 1
    assert x.op.defined_at() == f"Cell In[{n}], line 3"
    assert not x.op.defined_at().endswith(".py")


def test_a_run_time_error_names_the_cell(shell):
    shell.run_cell("import flowlab as fl\n", store_history=True)
    shell.run_cell(
        "g = fl.Graph()\n"
        "with g.as_default():\n"
        "    x = fl.placeholder(fl.float32, [None, 3], name='x')\n"
        "    y = x * 2.0\n",
        store_history=True,
    )
    n = shell.execution_count - 1
    g, y = shell.user_ns["g"], shell.user_ns["y"]
    with fl.Session(graph=g) as sess, pytest.raises(fl.errors.InvalidArgumentError) as e:
        sess.run(y)
    assert f"Cell In[{n}], line 3" in str(e.value)


def test_a_build_time_shape_error_names_the_cell(shell):
    shell.run_cell("import flowlab as fl\n", store_history=True)
    result = shell.run_cell(
        "g = fl.Graph()\n"
        "with g.as_default():\n"
        "    x = fl.placeholder(fl.float32, [None, 3])\n"
        "    fl.matmul(x, fl.constant([[1.0, 2.0]]))\n",
        store_history=True,
    )
    n = shell.execution_count - 1
    assert isinstance(result.error_in_exec, ValueError)
    assert f"(defined at Cell In[{n}], line 4)" in str(result.error_in_exec)
