"""`tf.switch_case(branch_index, branch_fns, default=None)`: run the branch numbered
`branch_index` (an int32 scalar tensor); an index out of range runs `default`, or the
last branch when there is none.  TensorFlow builds one Case op; flowlab builds the
same selection from its `tf.case` (one cond per branch), so values, shapes and
gradients agree while the op types differ."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.ops import math_ops
from flowlab.ops.builder import convert_to_tensor

__all__ = ["switch_case"]


def _canonical(branch_fns: Any, default: Any) -> list[Any]:
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("branch_fns must be a list, tuple, or dict")
    if isinstance(branch_fns, dict):
        keys = sorted(branch_fns)
        if keys != list(range(len(keys))):
            raise ValueError("branch indices (keys) must form contiguous range of [0 to {}) but found {{{}}}"
                             .format(len(keys), ",".join(map(str, keys))))
        fns = [branch_fns[k] for k in keys]
    else:
        fns = list(branch_fns)
        if fns and isinstance(fns[0], (tuple, list)):
            keys = [k for k, _ in fns]
            if sorted(keys) != list(range(len(keys))):
                raise ValueError("branch indices (keys) must form contiguous range of [0 to {}) but found {{{}}}"
                                 .format(len(keys), ",".join(map(str, keys))))
            fns = [f for _, f in sorted(fns, key=lambda kv: kv[0])]
    for f in fns:
        if not callable(f):
            raise TypeError(f"fn for key {fns.index(f)} must be callable.")
    if not fns:
        raise ValueError("Must provide at least one item in branch_fns")
    if default is not None:
        fns.append(default)
    return fns


def switch_case(branch_index: Any, branch_fns: Any, default: Any = None, name: str = "switch_case") -> Any:
    """branch_fns[branch_index]() (default() or the last one for other indices)."""
    from flowlab.ops.cond import case

    with get_default_graph().name_scope(name):
        index = convert_to_tensor(branch_index, name="branch_index")
        if index.dtype.base_dtype != dtypes.int32:
            raise TypeError("branch_index must an int32 Tensor")
        fns = _canonical(branch_fns, default)
        pairs = [(math_ops.equal(index, i), fn) for i, fn in enumerate(fns[:-1])]
        if not pairs:
            return fns[-1]()
        return case(pairs, default=fns[-1], exclusive=False)
