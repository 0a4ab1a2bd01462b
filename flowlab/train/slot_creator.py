"""Making a slot variable beside its primary (TensorFlow's slot_creator), for
optimizers' slots and moving averages' shadows.

Two rules of TensorFlow's that the call sites share:
* a slot is never partitioned itself: the current scope's partitioner is switched
  off while the slot is made (a `minimize` inside a partitioned variable_scope gives
  one slot per shard, not shards of shards);
* a slot of a shard is a shard of the slot: it gets a `save_slice_info` named
  "<full name>/<slot>" ("emb/Adam", "emb/ExponentialMovingAverage") with the
  primary's offset and shape (cut to the slot's rank; none for a scalar slot), so
  the Saver writes one entry per slot of a PartitionedVariable, as TensorFlow does.
"""

from __future__ import annotations

from typing import Any

from flowlab.ops import variable_scope as vs
from flowlab.ops.slice_spec import SaveSliceInfo
from flowlab.ops.variables import Variable

__all__: list[str] = []


def get_slot_variable(primary: Any, **get_variable_args: Any) -> Variable:
    """`get_variable("", **get_variable_args)` in the current (slot) scope, with the
    scope's partitioner off; a shard's slot gets its slice of the full slot."""
    scope = vs.get_variable_scope()
    partitioner = scope.partitioner
    scope.set_partitioner(None)
    try:
        slot = vs.get_variable("", **get_variable_args)
    finally:
        scope.set_partitioner(partitioner)
    info = primary._get_save_slice_info() if isinstance(primary, Variable) else None
    if info is not None:
        real_slot_name = slot.name[len(primary.op.name + "/"):-2]
        n = slot.shape.ndims
        if n is None or n > 0:
            slot._set_save_slice_info(SaveSliceInfo(
                info.full_name + "/" + real_slot_name, list(info.full_shape[:n]),
                list(info.var_offset[:n]), list(info.var_shape[:n])))
    return slot
