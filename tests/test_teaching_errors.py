"""The ten mistakes a learner makes first, each answered with what went wrong, where
(the learner's line -- a notebook cell as IPython names it, `Cell In[3], line 2`, never
the temporary file IPython compiles the cell to) and what to do.

The cells run in a real IPython shell (`InteractiveShell`, the one ipykernel runs), so
the "where" is exactly what a notebook shows.  Where a message says what to do, the test
also does it and checks that it works.  TensorFlow's own words stay at the start of
each message (the differential tests match them); the advice follows.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as tf
from flowlab.debug import Stepper

IPython = pytest.importorskip("IPython")


@pytest.fixture(scope="module")
def shell():
    import sys

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # nothing written to ~/.ipython
    hooks = sys.displayhook, sys.excepthook
    sh = InteractiveShell.instance(config=config)
    sh.run_cell("import numpy as np\nimport flowlab as tf\n", store_history=True)
    yield sh
    InteractiveShell.clear_instance()
    sys.displayhook, sys.excepthook = hooks


class Cells:
    """Runs cells in the shell; `cell(i)` is IPython's name of the i-th one run."""

    def __init__(self, shell) -> None:
        self.shell = shell
        self.names: list[str] = []

    def run(self, *sources: str) -> BaseException | None:
        self.shell.run_cell("tf.reset_default_graph()", store_history=True)
        error = None
        for src in sources:
            result = self.shell.run_cell(src, store_history=True)
            self.names.append(f"Cell In[{result.execution_count}]")
            error = result.error_in_exec or result.error_before_exec
            if error is not None:
                break
        return error

    def cell(self, i: int) -> str:
        return self.names[i]


@pytest.fixture
def cells(shell):
    return Cells(shell)


def no_temp_file_names(message: str) -> None:
    assert not re.search(r"\b\d{6,}\.py\b|ipykernel_|<ipython-input", message), message


def test_a_shape_mismatch_names_the_op_the_cell_and_how_to_fix_it(cells):
    e = cells.run(
        "a = tf.ones([2, 3])\nb = tf.ones([4, 5])\n",
        "c = tf.matmul(a, b)\n",
    )
    assert isinstance(e, ValueError)
    msg = str(e)
    assert msg.startswith("Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') "
                          "with input shapes: [2,3], [4,5]")
    assert f"(defined at {cells.cell(1)}, line 1)" in msg
    assert "transpose_b=True" in msg and "tf.reshape" in msg
    no_temp_file_names(msg)


def test_feeding_the_wrong_shape_names_the_placeholder_both_cells_and_the_shape_to_feed(cells):
    e = cells.run(
        "x = tf.placeholder(tf.float32, [None, 3], name='x')\ny = x * 2\n",
        "sess = tf.Session()\nsess.run(y, {x: np.ones((2, 4))})\n",
    )
    assert isinstance(e, ValueError)
    msg = str(e)
    assert msg.startswith("Cannot feed value of shape (2, 4) for Tensor x:0, which has shape (?, 3)")
    assert f"'x' defined at {cells.cell(0)}, line 1" in msg
    assert f"fed at {cells.cell(1)}, line 2" in msg
    assert "Feed it a value of shape (?, 3) and dtype float32" in msg
    no_temp_file_names(msg)


def test_feeding_the_wrong_dtype_says_which_dtype_and_how_to_convert(cells):
    e = cells.run(
        "labels = tf.placeholder(tf.int32, [None], name='labels')\n",
        "sess = tf.Session()\nsess.run(labels + 1, {labels: ['3', 'seven']})\n",
    )
    assert isinstance(e, ValueError)
    msg = str(e)
    assert msg.startswith("Cannot feed value ['3', 'seven'] for Tensor labels:0 of dtype int32")
    assert f"'labels' defined at {cells.cell(0)}, line 1" in msg
    assert f"fed at {cells.cell(1)}, line 2" in msg
    assert "np.asarray(value, np.int32)" in msg
    no_temp_file_names(msg)


def test_mixing_dtypes_in_an_op_says_to_cast(cells):
    e = cells.run(
        "x = tf.placeholder(tf.float32, [2])\n",
        "n = tf.constant([1, 2])\ny = x + n\n",
    )
    assert isinstance(e, TypeError)
    msg = str(e)
    assert msg.startswith("Input 'y' of 'AddV2' Op has type int32 that does not match type float32 "
                          "of argument 'x'.")
    assert f"(at {cells.cell(1)}, line 2)" in msg
    assert "tf.cast(value, tf.float32)" in msg
    # What it says to do works.
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        y = x + tf.cast(tf.constant([1, 2]), tf.float32)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [0.5, 0.5]}), [1.5, 2.5])


def test_an_uninitialized_variable_says_to_run_the_initializer(cells):
    e = cells.run(
        "w = tf.Variable(tf.zeros([2]), name='w')\nloss = tf.reduce_sum(w * 2.0)\n",
        "sess = tf.Session()\nsess.run(loss)\n",
    )
    assert isinstance(e, tf.errors.FailedPreconditionError)
    msg = str(e)
    assert "Attempting to use uninitialized value w" in msg
    assert f"defined at {cells.cell(0)}, line 1" in msg
    assert "sess.run(tf.global_variables_initializer())" in msg
    no_temp_file_names(msg)


def test_fetching_from_another_graph_says_where_it_was_built_and_the_two_ways_out(cells):
    e = cells.run(
        "logits = tf.constant([1.0, 2.0], name='logits')\nsess = tf.Session()\n",
        # Re-running a model cell after tf.reset_default_graph() makes a new graph.
        "tf.reset_default_graph()\nsess2 = tf.Session()\nsess2.run(logits)\n",
    )
    assert isinstance(e, ValueError)
    msg = str(e)
    assert "cannot be interpreted as a Tensor" in msg and "is not an element of this graph." in msg
    assert f"'logits' was built in another tf.Graph (defined at {cells.cell(0)}, line 1)" in msg
    assert "tf.Session(graph=t.graph)" in msg and "re-run the cells that build the model" in msg
    no_temp_file_names(msg)


def test_running_a_closed_session_says_why_it_is_closed_and_what_to_do(cells):
    e = cells.run(
        "c = tf.constant(1.0)\nwith tf.Session() as sess:\n    sess.run(c)\n",
        "sess.run(c)\n",
    )
    assert isinstance(e, RuntimeError)
    msg = str(e)
    assert msg.startswith("Attempted to use a closed Session.")
    assert f"(at {cells.cell(1)}, line 1)" in msg
    assert "`with tf.Session() as sess:` block ends" in msg and "open a new session" in msg


def test_a_device_that_does_not_exist_lists_the_devices_and_offers_soft_placement(cells):
    e = cells.run(
        "with tf.device('/cpu:5'):\n    y = tf.constant(1.0) * 2.0\n",
        "with tf.Session() as sess:\n    sess.run(y)\n",
    )
    assert isinstance(e, tf.errors.InvalidArgumentError)
    msg = str(e)
    assert "was explicitly assigned to /device:CPU:5 but available devices are " in msg
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in msg
    assert f"(defined at {cells.cell(0)}, line 2)" in msg
    assert "allow_soft_placement=True" in msg
    no_temp_file_names(msg)
    # What it says to do works.
    g = tf.Graph()
    with g.as_default(), tf.device("/cpu:5"):
        y = tf.constant(1.0) * 2.0
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(y) == 2.0


def test_a_placeholder_not_fed_names_it_with_its_dtype_shape_and_cell(cells):
    e = cells.run(
        "x = tf.placeholder(tf.float32, [None, 2], name='x')\ny = x + 1.0\n",
        "with tf.Session() as sess:\n    sess.run(y)\n",
    )
    assert isinstance(e, tf.errors.InvalidArgumentError)
    msg = str(e)
    assert "You must feed a value for placeholder tensor 'x' with dtype float32 and shape [?,2]" in msg
    assert f"(defined at {cells.cell(0)}, line 1)" in msg
    no_temp_file_names(msg)


def test_a_while_loop_whose_shape_changes_gives_the_invariant_that_fits(cells):
    e = cells.run(
        "i0 = tf.constant(0)\nx0 = tf.ones([1])\n",
        "body = lambda i, x: (i + 1, tf.concat([x, x], 0))\n"
        "i, x = tf.while_loop(lambda i, x: i < 3, body, [i0, x0])\n",
    )
    assert isinstance(e, ValueError)
    msg = str(e)
    assert msg.startswith("Input tensor 'ones:0' enters the loop with shape (1,), but has shape "
                          "(2,) after one iteration.")
    assert f"(tf.while_loop at {cells.cell(1)}, line 2)" in msg
    assert "shape_invariants=tf.TensorShape([None])" in msg
    no_temp_file_names(msg)
    # What it says to do works: 1 -> 8 elements.
    g = tf.Graph()
    with g.as_default():
        _, x = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                             [tf.constant(0), tf.ones([1])],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
        with tf.Session() as sess:
            assert sess.run(x).shape == (8,)


def test_a_nan_in_training_names_the_check_and_how_to_find_its_first_op(cells):
    e = cells.run(
        "w = tf.Variable(0.0, name='w')\n"
        "loss = tf.sqrt(w - 1.0, name='root')\n"
        "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
        "checked = tf.check_numerics(loss, 'loss')\n",
        "sess = tf.Session()\nsess.run(w.initializer)\nsess.run([train, checked])\n",
    )
    assert isinstance(e, tf.errors.InvalidArgumentError)
    msg = str(e)
    assert "loss : Tensor had NaN values" in msg
    assert f"(defined at {cells.cell(0)}, line 4)" in msg
    assert "Stepper(sess, fetches, feed_dict, stop_on_nan_or_inf=True).continue_()" in msg
    assert "learning rate" in msg
    no_temp_file_names(msg)
    # What it says to do works: the Stepper stops at the op that made the NaN.
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(0.0, name="w")
        loss = tf.sqrt(w - 1.0, name="root")
        with tf.Session() as sess:
            sess.run(w.initializer)
            stop = Stepper(sess, loss, stop_on_nan_or_inf=True).continue_()
            assert stop.op == "root"


@pytest.mark.slow
def test_a_cluster_task_that_is_missing_says_which_tasks_there_are_and_how_to_start_it():
    from flowlab.distributed import LocalCluster

    with LocalCluster(ps=1, worker=1) as cluster:
        g = tf.Graph()
        with g.as_default(), tf.device("/job:worker/task:3"):
            y = tf.constant(1.0) * 2.0
        line = y.op.traceback[0].lineno
        with tf.Session(cluster, graph=g) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(y)
        msg = str(e.value)
        assert "was explicitly assigned to /job:worker/task:3 but available devices are [ " in msg
        assert f"(defined at test_teaching_errors.py:{line})" in msg
        assert "No task worker/3 is in this session's cluster (its tasks: ps/0, worker/0)" in msg
        assert "dask worker SCHEDULER --name worker/3" in msg
        # Asking the cluster for the task names the scheduler and the workers it found.
        with pytest.raises(ValueError) as e:
            cluster.task("worker", 3)
        msg = str(e.value)
        assert f"The cluster at {cluster.scheduler_address} has no task worker/3" in msg
        assert "'worker/0' at tcp://127.0.0.1:" in msg and "'ps/0' at tcp://127.0.0.1:" in msg
        assert f"dask worker {cluster.scheduler_address} --name worker/3" in msg


def test_a_nan_loss_in_a_monitored_session_says_how_to_find_the_op():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        loss = tf.log(w - 1.0) * 0.0  # log(0) * 0: NaN
        hook = tf.train.NanTensorHook(loss)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            with pytest.raises(tf.train.NanLossDuringTrainingError) as e:
                sess.run(loss)
    text = str(e.value)
    assert text.startswith("NaN loss during training.")  # TensorFlow's words first
    assert "stop_on_nan_or_inf=True" in text and "sparse_softmax_cross_entropy_with_logits" in text


def test_a_matmul_of_fed_values_that_do_not_fit_says_what_to_check():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, None])
        b = tf.placeholder(tf.float32, [None, None])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(tf.matmul(a, b), {a: np.ones((2, 3)), b: np.ones((4, 3))})
    text = str(e.value)
    assert "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,3]" in text  # TensorFlow's words first
    assert "transpose_a/transpose_b" in text and "print the fed values' shapes" in text
