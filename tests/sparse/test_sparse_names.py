"""The sparse builders name their ops as TensorFlow's do (node names matter to
GraphDef exchange, to `get_tensor_by_name` and to the viewer)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl

IND = np.array([[0, 1], [1, 0]], np.int64)
VAL = np.array([1.0, 2.0], np.float32)

BUILDS = {
    "matmul": lambda tf, s: tf.sparse_tensor_dense_matmul(s, np.ones((3,2),np.float32)),
    "rsum": lambda tf, s: tf.sparse.reduce_sum(s, 1),
    "rsums": lambda tf, s: tf.sparse.reduce_sum_sparse(s, 1),
    "reorder": lambda tf, s: tf.sparse.reorder(s),
    "reshape": lambda tf, s: tf.sparse.reshape(s, [3,2]),
    "concat": lambda tf, s: tf.sparse.concat(0,[s,s]),
    "slice": lambda tf, s: tf.sparse.slice(s,[0,0],[1,1]),
    "split": lambda tf, s: tf.sparse.split(sp_input=s,num_split=2,axis=0),
    "fill": lambda tf, s: tf.sparse.fill_empty_rows(s, 0.),
    "add": lambda tf, s: tf.sparse.add(s,s),
    "addd": lambda tf, s: tf.sparse.add(s,np.ones((2,3),np.float32)),
    "softmax": lambda tf, s: tf.sparse.softmax(s),
    "max": lambda tf, s: tf.sparse.maximum(s,s),
    "mul": lambda tf, s: s*2.0,
    "div": lambda tf, s: s/2.0,
    "todense": lambda tf, s: tf.sparse.to_dense(s),
    "retain": lambda tf, s: tf.sparse.retain(s,[True,False]),
    "seg": lambda tf, s: tf.sparse.segment_sum(np.ones((3,2),np.float32),[0,1],[0,0]),
    "transpose": lambda tf, s: tf.sparse.transpose(s),
    "emb": lambda tf, s: tf.nn.embedding_lookup_sparse(np.ones((3,2),np.float32), tf.SparseTensor(IND, np.array([0,1],np.int64), [2,3]), None),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_op_names_are_tensorflows(tf1, name):
    got = []
    for tf in (tf1, fl):
        with tf.Graph().as_default() as g:
            s = tf.SparseTensor(IND, VAL, [2, 3])
            before = {o.name for o in g.get_operations()}
            BUILDS[name](tf, s)
            got.append(sorted((o.name, o.type) for o in g.get_operations()
                              if o.name not in before and o.type.startswith("Sparse")))
    assert got[1] == got[0]
