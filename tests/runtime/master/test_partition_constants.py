"""TensorFlow's ReplicateConstants (flowlab/runtime/master/partition_constants.py): a small
constant read on several CPUs is copied onto each as `<name>/replicate/_<n>`; large ones,
ones with a control consumer, and ones read on one device are sent or kept."""

from __future__ import annotations

import re

import numpy as np

from tests.programs.hidden_support import same_results
from tests.runtime.master.test_partition_client import _nodes


def _program(size: int, control: bool = False):
    def program(tf):
        v = tf.Variable(np.arange(size, dtype=np.float32), name="v")
        x = tf.constant(np.full(size, 2.0, np.float32), name="x")
        with tf.device("/cpu:1"):
            a = tf.multiply(x, v, name="a")
        with tf.device("/cpu:2"):
            b = tf.add(x, v, name="b")
        deps = [x.op] if control else []
        with tf.control_dependencies(deps):
            c = tf.add(a + b, x, name="c")
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 4})) as s:
            s.run(v.initializer)
            md = tf.RunMetadata()
            val = s.run(c, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
        # Send/Recv names and edge ids carry each runtime's own counter: drop them.
        recv = re.compile(r"^(?!.*/replicate/_\d+$).*/_\d+$")
        keep = [
            [(n[0], n[1], n[2], ["<recv>" if recv.match(i) else i for i in n[3]]) for n in p if n[1] not in ("_Send", "_Recv")]
            for p in _nodes(md)
        ]
        return val, keep

    program.__name__ = f"replicate_{size}_{control}"
    return program


def test_a_small_constant_is_copied_onto_each_reading_cpu(tf1):
    same_results(tf1, _program(16))


def test_a_constant_over_sixteen_elements_is_sent(tf1):
    same_results(tf1, _program(17))

