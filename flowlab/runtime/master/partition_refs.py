"""Variable reads across the devices of one process: the transfer shares the variable.

In TensorFlow 1.x reading a variable copies nothing: `v/read` (an Identity of the
variable's reference) forwards the variable's buffer, and an in-process `_Send`
hands the very same buffer to its `_Recv`.  A consumer on another device that runs
after an update (by a control edge) sees the updated value, because the update wrote
into that buffer.  flowlab's plan models the shared buffer on one device by reading
the variable when the *consumer* runs (`flowlab.runtime.task.plan.compile_plan`: an input
of ref dtype not taken by reference is read; an Identity of a reference aliases it).
Partitioning keeps that rule across devices by moving the variable itself (its
`VariableState`) through the rendezvous instead of its value:

* `Refs.holds_reference(t)`: whether partition tensor `t` holds a reference at run
  time -- a ref-typed output of the step's own ops (VariableV2, Assign*, RefEnter,
  ...), the output of a by-reference `_Recv`, or an Identity clone over one.  Such an
  Identity (a variable's `read`, or `tf.identity` of one) is converted on its
  partition's copy to take its input by reference and forward it with a ref output
  (`IDENTITY_OF_REF`), as TensorFlow's Identity forwards the buffer; its local
  consumers then read the variable when they run, exactly what the alias did.
* the `_Send` of such a tensor takes its input by reference (`by_reference`), so the
  plan hands the kernel the `VariableState`, and its `_Recv` declares a ref output
  (`<T>_ref`): every consumer on the receiving device reads the variable when it
  runs, and a receiving Identity becomes an alias as on one device.  An Enter or a
  Switch over such a Recv (a read made outside a loop or cond, used inside it on
  another device) forwards the variable into the frame or branch (`Refs.forward`), as
  TensorFlow's forward the buffer, so the readers there read it when they run.

What a GraphDef shows is TensorFlow's partition graph: the Send's input is `v/read`,
`T` and `tensor_type` are the base dtype (the ref-ness is in the op's declaration and
output dtype, which a NodeDef does not carry).  Invariants: only tensors of ops the
partitioner owns are converted (a fed tensor is a plain value), and only between
devices that share host memory (CPU devices); a transfer to or from an accelerator
copies the value at Send time, as TensorFlow's does.  `partition(...,
share_references=False)` is the explicit path for partitions that do not share a
process (a future Dask worker): every Send then reads the variable when it runs, and
`SendRecvPair.by_reference` says which transfers shared the variable.
"""

from __future__ import annotations

from dataclasses import replace

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.op_def import OpDef, get_op_def

__all__ = ["Refs", "by_reference", "IDENTITY_OF_REF"]


def by_reference(od: OpDef) -> OpDef:
    """`od` with its first input (a Send's) or its first output (a Recv's) a reference."""
    if od.inputs:
        return replace(od, inputs=[replace(od.inputs[0], is_ref=True), *od.inputs[1:]])
    return replace(od, outputs=[replace(od.outputs[0], is_ref=True), *od.outputs[1:]])


_IDENTITY = get_op_def("Identity")
# TensorFlow's Identity forwards its input's buffer; over a variable that buffer is the
# variable's, so this copy takes the reference and hands it on (kernel: the Identity's).
IDENTITY_OF_REF: OpDef = replace(
    _IDENTITY,
    inputs=[replace(_IDENTITY.inputs[0], is_ref=True)],
    outputs=[replace(_IDENTITY.outputs[0], is_ref=True)],
)


class Refs:
    """The partitioner's knowledge of which partition tensors hold a reference."""

    def __init__(self) -> None:
        self.owned: set[int] = set()  # ids of the ops the partitioner made (clones, Recvs)
        # Enter and Switch clones `forward` converted: id -> (clone, its op def before).
        self.forwarded: dict[int, tuple[Operation, OpDef]] = {}

    def own(self, op: Operation) -> None:
        self.owned.add(id(op))

    def holds_reference(self, t: Tensor) -> bool:
        """Whether `t` holds a variable at run time; an Identity clone over one is
        converted (see the module docstring) so that it does."""
        op = t.op
        if id(op) not in self.owned:
            return False  # a fed tensor: a plain value
        if t.dtype.is_ref_dtype:
            return True
        if op.type != "Identity" or len(op._inputs) != 1 or not self.holds_reference(op._inputs[0]):
            return False
        op._op_def = IDENTITY_OF_REF
        t._dtype = t.dtype._as_ref()
        return True

    def forward(self, op: Operation) -> None:
        """An Enter or Switch clone over a shared read received from another device
        forwards the variable (TensorFlow's forward the buffer): into the loop frame,
        or into the taken branch, whose readers then see the variable as of when they
        run (a loop's later iterations; a branch op after an update).  Not into a
        Merge, which takes its input as it arrives on the frame path (as the one-device
        plan, `flowlab.runtime.task.plan.FORWARDS_REFERENCE`): a Merge clone over such an
        output turns its producer back into a plain one, which reads the variable."""
        if op.type in ("Merge", "RefMerge"):
            for t in op._inputs:
                done = self.forwarded.pop(id(t.op), None)
                if done is not None:
                    done[0]._op_def = done[1]
                    for o in done[0]._outputs:
                        o._dtype = o.dtype.base_dtype
            return
        if op.type not in _FORWARDING or not op._inputs:
            return
        src = op._inputs[0]
        if not (src.dtype.is_ref_dtype and src.op.type in ("_Recv", "_HostRecv") and id(src.op) in self.owned):
            return
        od = op._op_def
        self.forwarded[id(op)] = (op, od)
        op._op_def = replace(
            od, inputs=[replace(od.inputs[0], is_ref=True), *od.inputs[1:]],
            outputs=[replace(a, is_ref=True) for a in od.outputs],
        )
        for t in op._outputs:
            t._dtype = t.dtype._as_ref()


# Ops that forward their first input unchanged (to a frame, to a branch).
_FORWARDING = frozenset({"Enter", "Switch"})
