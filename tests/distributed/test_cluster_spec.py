"""tf.train.ClusterSpec and replica_device_setter against TensorFlow's."""

from __future__ import annotations

import pytest

import flowlab as fl

SPEC = {"ps": ["ps0:2222", "ps1:2222"], "worker": {0: "w0:2222", 3: "w3:2222"}}


def test_cluster_spec_matches_tensorflow(tf1):
    ours, theirs = fl.train.ClusterSpec(SPEC), tf1.train.ClusterSpec(SPEC)
    assert ours.jobs == theirs.jobs
    assert ours.as_dict() == theirs.as_dict()
    for job in ours.jobs:
        assert ours.num_tasks(job) == theirs.num_tasks(job)
        assert ours.task_indices(job) == theirs.task_indices(job)
        assert ours.job_tasks(job) == theirs.job_tasks(job)
    assert ours.task_address("worker", 3) == theirs.task_address("worker", 3)
    assert bool(fl.train.ClusterSpec({})) == bool(tf1.train.ClusterSpec({}))
    assert fl.train.ClusterSpec(ours) == ours
    for call in (lambda s: s.num_tasks("chief"), lambda s: s.task_address("worker", 1)):
        with pytest.raises(ValueError) as e_tf:
            call(theirs)
        with pytest.raises(ValueError) as e_fl:
            call(ours)
        assert str(e_fl.value) == str(e_tf.value)


def _placed(tf, setter_kwargs):
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(**setter_kwargs)):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b")
            with tf.device("/job:ps/task:0"):
                c = tf.Variable(3.0, name="c")
            d = tf.Variable(4.0, name="d")
            with tf.device("/cpu:0"):
                tf.add(a, b, name="s")
            tf.multiply(c, d, name="t")
    return {op.name: op.device for op in g.get_operations() if op.name in ("a", "b", "c", "d", "s", "t")}


@pytest.mark.parametrize("kwargs", [
    {"ps_tasks": 2},
    {"ps_tasks": 3, "worker_device": "/job:worker/task:1"},
    {"cluster": SPEC, "worker_device": "/job:worker/task:0"},
    {"cluster": {"worker": ["w:1"]}},
])
def test_replica_device_setter_matches_tensorflow(tf1, kwargs):
    assert _placed(fl, kwargs) == _placed(tf1, kwargs)
    if "cluster" in kwargs and "ps" not in kwargs["cluster"]:
        assert fl.train.replica_device_setter(**kwargs) is None
