"""Provisional names: a converted input takes its name from the op that reads it.

TensorFlow converts an op's Python-valued inputs inside the op's own name scope
(op_def_library: `with name_scope(name): convert_to_tensor(v, name=arg.name)`), so
`tf.reshape(x, [2, 3])` makes `Reshape/shape` and `tf.concat([a, b], 1)` makes
`concat/axis`.  flowlab's array builders convert shape-like arguments before they
call `apply_op` (they need the tensor's dtype or static value first), so the
constant is born as `shape`.  `provisional(g)` records such a conversion: the ops it
made and every name reservation they took (the graph's name journal).  When the op
that reads the value is built, `adopt(t, new_base)` renames those ops into its scope
(`shape` -> `Reshape/shape`, an autopacked `shape/1` -> `Reshape/shape/1`) and
releases the old names, so the graph is the one TensorFlow builds.

Invariants: a rename happens only while nothing but the new reader consumes the
ops, only once, and only when no later reservation touched the names being released
(otherwise the value keeps its first name: correct, just not TensorFlow's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowlab.graph.graph import Graph
    from flowlab.graph.tensor import Tensor


class _Record:
    """What a provisional conversion made: its ops and the names it reserved."""

    __slots__ = ("ops", "journal", "after", "scope")

    def __init__(self, ops: list[Any], journal: list[tuple[str, int | None]],
                 after: dict[str, int | None], scope: str) -> None:
        self.ops = ops
        self.journal = journal
        self.after = after
        self.scope = scope


@contextlib.contextmanager
def provisional(g: Graph) -> Iterator[list[Any]]:
    """Record the ops and name reservations made in the block; `mark(g, box, t)`
    then attaches them to the result `t`."""
    st = g._state()
    outer = st.name_journal
    journal: list[tuple[str, int | None]] = []
    st.name_journal = journal
    start = len(g._ops)
    box: list[Any] = [journal, start, st.name_stack]
    try:
        yield box
    finally:
        st.name_journal = outer
        if outer is not None:
            outer.extend(journal)


def mark(g: Graph, box: list[Any], t: Tensor) -> Tensor:
    journal, start, scope = box
    ops = g._ops[start:]
    # Only values made from Python data (constants, autopacked lists): a conversion
    # function that builds other ops (a variable's read, dense IndexedSlices) keeps
    # its own names.
    if ops and ops[-1] is t.op and journal and all(o.type in ("Const", "Pack") for o in ops):
        after = {k: g._names_in_use.get(k) for k, _ in journal}
        t.op._provisional = _Record(ops, journal, after, scope)
    return t


def adopt(g: Graph, t: Tensor, new_base: str, reader: Any) -> bool:
    """Rename the provisional value `t` (and the ops that built it) to `new_base`
    (a name free in `reader`'s scope), once `reader`, the op it is an input of, has
    been built.  False if it may not."""
    rec = t.op._provisional
    if rec is None:
        return False
    t.op._provisional = None
    old_base = t.op.name
    if t.op._graph is not g or reader.name.rpartition("/")[0] != rec.scope:
        return False
    members = {id(o) for o in rec.ops}
    members.add(id(reader))
    for o in rec.ops:
        if not (o.name == old_base or o.name.startswith(old_base + "/")):
            return False
        for out in o._outputs:
            if any(id(c) not in members for c in out._consumers):
                return False
        if any(id(c) not in members for c in o._control_outputs):
            return False
    with g._lock:
        if any(g._names_in_use.get(k) != v for k, v in rec.after.items()):
            return False
        for key, old in reversed(rec.journal):
            if old is None:
                g._names_in_use.pop(key, None)
            else:
                g._names_in_use[key] = old
        for o in rec.ops:
            new = new_base + o.name[len(old_base):]
            del g._by_name[o.name]
            o._name = new
            for out in o._outputs:
                out._name = f"{new}:{out._value_index}"
            g._by_name[new] = o
            g._names_in_use.setdefault(new.lower(), 1)
    return True
