"""The Stepper: one step of a session, run one op at a time (tfdbg, for a notebook).

A Stepper drives one `Execution` of the session's compiled plan for (fetches, feeds)
through the executor's single-op interface (`Session.start_execution`: `start`,
`ready_nodes`, `run_one`, `wait_one`, `finish`) and listens to its events.  Nothing
is simulated: kernels run for real, variables keep the values the ops actually wrote,
asynchronous ops (queues, Recv) complete through the executor as in a normal step.

State: the execution (values, pending counts, ready queue), what has run (in order),
the outputs of every op as produced (so `value("op:i")` works for outputs nobody
consumes), dead ops, the breakpoints and watches, and why the last command stopped.

Commands stop at the first of: the step's end, an error (the step then rolls back its
variable writes and `result()` raises it), a breakpoint (checked *before* the op runs:
by name or name scope, by op type, or by a predicate on the Operation), a watch whose
condition holds or, with `stop_on_nan_or_inf`, an op that produced a NaN or an Inf
(checked *after* the op ran, naming the op and the output).  The op that a command
stopped before runs first on the next command, so `continue_()` never stops twice in
the same place.  `abort()` cancels the step and undoes its variable writes.

The next op to run is the head of the ready queue (the executor's FIFO order);
`step(op="name")` runs another ready op instead.  A step whose plan spans several
partitions is one execution per partition; this Stepper drives single-partition
(single-executor) plans, which is every plan of the local session today.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import DEAD
from flowlab.kernels.resources import VariableState
from flowlab.runtime.fp_errors import enter_quiet, exit_quiet

__all__ = ["Stepper", "Stop", "Watch", "DEAD"]


@dataclass(frozen=True)
class Stop:
    """Why a command stopped: `kind` is one of "start", "step", "breakpoint", "watch",
    "nan_or_inf", "run_to", "finished", "error", "aborted"; `op` the op it concerns
    (the op about to run for a breakpoint, the op that ran otherwise)."""

    kind: str
    op: str | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class _Breakpoint:
    id: int
    name: str | None
    op_type: str | None
    when: Callable[[Any], bool] | None

    def matches(self, op: Any) -> bool:
        if self.name is not None:
            if self.name.endswith("/"):
                if not op.name.startswith(self.name):
                    return False
            elif op.name != self.name:
                return False
        if self.op_type is not None and op.type != self.op_type:
            return False
        if self.when is not None and not self.when(op):
            return False
        return True

    def __str__(self) -> str:
        parts = []
        if self.name is not None:
            parts.append(f"scope '{self.name}'" if self.name.endswith("/") else f"op '{self.name}'")
        if self.op_type is not None:
            parts.append(f"type {self.op_type}")
        if self.when is not None:
            parts.append(f"when {getattr(self.when, '__name__', 'predicate')}")
        return f"#{self.id} " + " and ".join(parts)


class Watch:
    """A watched tensor: every value it took in this step (`values`, newest last), and an
    optional condition that stops the Stepper when it holds for a new value."""

    def __init__(self, tensor: str, condition: Callable[[Any], bool] | None) -> None:
        self.tensor = tensor
        self.condition = condition
        self.values: list[Any] = []

    @property
    def value(self) -> Any:
        """The latest value (None before the tensor is produced)."""
        return self.values[-1] if self.values else None

    def __repr__(self) -> str:
        cond = f", stops when {getattr(self.condition, '__name__', 'condition')}" if self.condition else ""
        return f"<Watch {self.tensor}: {len(self.values)} value(s){cond}>"


def has_nan_or_inf(value: Any) -> tuple[int, int]:
    """(number of NaNs, number of Infs) in a float or complex value; (0, 0) otherwise."""
    if isinstance(value, VariableState):
        value = value.value
    dt = getattr(value, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return 0, 0
    if dt.kind == "f":
        # One pass and no temporary: a finite sum means every element is finite (an
        # overflowing sum falls through to the exact count, quietly).
        token = enter_quiet()
        try:
            if np.isfinite(np.add.reduce(value, axis=None)):
                return 0, 0
        finally:
            exit_quiet(token)
    finite = np.isfinite(value)
    if finite.all():
        return 0, 0
    nan = int(np.count_nonzero(np.isnan(value)))
    return nan, int(np.size(value)) - int(np.count_nonzero(finite)) - nan


class Stepper:
    """Run one step of `sess` op by op.

    Example:
      st = flowlab.debug.Stepper(sess, loss, {x: batch}, stop_on_nan_or_inf=True)
      st.continue_()          # stops after the first op that produced a NaN or Inf
      print(st)               # what ran, what is ready, where it stopped and why
      st.value("layer2/Log:0")
      st.abort()              # or st.result() to finish the step

    Args:
      sess: a flowlab Session.
      fetches, feed_dict: the step, as `Session.run` takes them.
      stop_on_nan_or_inf: stop after any op whose float output has a NaN or an Inf.
    """

    def __init__(self, sess: Any, fetches: Any, feed_dict: dict[Any, Any] | None = None,
                 *, stop_on_nan_or_inf: bool = False) -> None:
        self._sess = sess
        self._exec, self._mapper = sess.start_execution(fetches, feed_dict, listener=self._on_event)
        plan = self._exec.plan
        self._plan = plan
        self._node_of = {n.op.name: n for n in plan.nodes}
        self._fed = _fed_values(sess.graph, feed_dict)
        self._outputs: dict[str, tuple[Any, ...]] = {}
        self._ran: list[str] = []
        self._dead: list[str] = []
        self._frame: tuple[str, int] = ("", 0)
        self._breakpoints: list[_Breakpoint] = []
        self._next_bp_id = 1
        self._watches: dict[str, Watch] = {}
        self.stop_on_nan_or_inf = stop_on_nan_or_inf
        self._bad: dict[tuple[str, int], bool] = {}  # (op, output) -> has NaN/Inf, as last seen
        self._hit: Stop | None = None  # set by the listener when an op's output stops us
        self._skip_break: int | None = None  # node we stopped before: runs first next time
        self._status = "running"  # running, finished, failed, aborted
        self._values: list[Any] | None = None
        self._error: errors.OpError | None = None
        self.stop = Stop("start", None, f"not started: {len(plan.nodes)} ops to run")
        token = enter_quiet()
        try:
            self._exec.start()
        finally:
            exit_quiet(token)
        self._check_end()

    # --- events ---------------------------------------------------------------------
    def _on_event(self, ev: Any) -> None:
        kind = ev.kind
        if kind == "op_end":
            outs = tuple(ev.info) if ev.info is not None else ()
            self._outputs[ev.node] = outs
            self._ran.append(ev.node)
            self._note_frame(ev)
            self._check_outputs(ev.node, outs)
        elif kind == "op_dead":
            node = self._node_of.get(ev.node)
            self._outputs[ev.node] = (DEAD,) * (node.num_outputs if node is not None else 0)
            self._ran.append(ev.node)
            self._dead.append(ev.node)
            self._note_frame(ev)

    def _note_frame(self, ev: Any) -> None:
        frame = getattr(ev, "frame", None)  # executors with loop frames set these
        if frame is not None:
            self._frame = (str(getattr(frame, "name", frame)), int(getattr(ev, "iteration", 0) or 0))

    def _check_outputs(self, name: str, outs: tuple[Any, ...]) -> None:
        bad = self._bad
        for i in range(len(outs)):
            bad.pop((name, i), None)  # a new value (the op ran again in a loop)
        for i, v in enumerate(outs):
            if v is DEAD:
                continue
            w = self._watches.get(f"{name}:{i}")
            if w is not None:
                w.values.append(_snapshot(v))
                if w.condition is not None and self._hit is None and w.condition(w.values[-1]):
                    self._hit = Stop("watch", name, f"stopped after '{name}': watch on {w.tensor} "
                                     f"({getattr(w.condition, '__name__', 'condition')}) holds")
            if self.stop_on_nan_or_inf and self._hit is None:
                nan, inf = has_nan_or_inf(v)
                bad[(name, i)] = bool(nan or inf)
                if (nan or inf) and not self._reads_nan_or_inf(name):
                    node = self._node_of[name]
                    self._hit = Stop(
                        "nan_or_inf", name,
                        f"stopped after '{name}' ({node.op.type} on {node.ctx.device.name}): output "
                        f"{name}:{i} has {nan} NaN and {inf} Inf of {np.size(_plain(v))} values; "
                        "its inputs had none",
                    )

    def _reads_nan_or_inf(self, name: str) -> bool:
        """Whether an input of op `name` (as last produced or fed) has a NaN or Inf: an
        op that only passes one on is not where it came from."""
        for t in self._node_of[name].op.inputs:
            key = (t.op.name, t.value_index)
            b = self._bad.get(key)
            if b is None:
                outs = self._outputs.get(key[0])
                if outs is not None:
                    v = outs[key[1]]
                else:
                    v = self._fed.get(t.name, DEAD)
                b = self._bad[key] = v is not DEAD and any(has_nan_or_inf(v))
            if b:
                return True
        return False

    # --- breakpoints and watches --------------------------------------------------
    def add_breakpoint(self, name: Any = None, *, op_type: str | None = None,
                       when: Callable[[Any], bool] | None = None) -> int:
        """Stop before an op runs when it matches: its `name` (an op name, an Operation
        or Tensor, or a name scope ending in "/"), its `op_type`, and `when(op)` -- all
        of those given.  Returns the breakpoint's id.

        Raises:
          ValueError: nothing given, or a name or scope with no op in this step.
        """
        if name is None and op_type is None and when is None:
            raise ValueError("add_breakpoint needs a name, an op_type or a when= predicate.")
        if name is not None:
            name = _op_name(name)
            if name.endswith("/"):
                if not any(n.startswith(name) for n in self._node_of):
                    raise ValueError(f"No op of this step is in name scope '{name}'.")
            else:
                self._require_op(name)
        bp = _Breakpoint(self._next_bp_id, name, op_type, when)
        self._next_bp_id += 1
        self._breakpoints.append(bp)
        return bp.id

    def remove_breakpoint(self, bp_id: int) -> None:
        before = len(self._breakpoints)
        self._breakpoints = [b for b in self._breakpoints if b.id != bp_id]
        if len(self._breakpoints) == before:
            raise ValueError(f"No breakpoint #{bp_id}.")

    def clear_breakpoints(self) -> None:
        self._breakpoints.clear()

    @property
    def breakpoints(self) -> list[str]:
        return [str(b) for b in self._breakpoints]

    def watch(self, tensor: Any, condition: Callable[[Any], bool] | None = None) -> Watch:
        """Record every value `tensor` ("op:i", a Tensor) takes in this step; with
        `condition`, stop after the op that produced a value for which it is true."""
        name = _tensor_name(tensor)
        op, _, idx = name.rpartition(":")
        node = self._require_op(op)
        if int(idx) >= node.num_outputs:
            raise ValueError(f"Op '{op}' has {node.num_outputs} outputs; there is no {name}.")
        w = self._watches.get(name)
        if w is None or condition is not None:
            w = self._watches[name] = Watch(name, condition)
        if op in self._outputs and not w.values and self._outputs[op][int(idx)] is not DEAD:
            w.values.append(_snapshot(self._outputs[op][int(idx)]))
        return w

    @property
    def watches(self) -> dict[str, Watch]:
        return dict(self._watches)

    # --- commands -------------------------------------------------------------------
    def step(self, n: int = 1, *, op: Any = None) -> Stop:
        """Run the next `n` ops (stopping early at a breakpoint, a watch, an error or
        the end), or, with `op`, run that ready op now.  Returns why it stopped."""
        if op is not None:
            name = _op_name(op)
            node = self._require_op(name)
            if node.index not in (n.index for n in self._exec.ready_nodes()):
                raise ValueError(f"Op '{name}' is not ready; ready: {', '.join(self.ready()) or 'none'}.")
            return self._drive(1, target=node.index)
        if n < 1:
            raise ValueError(f"step(n) needs n >= 1, got {n}.")
        return self._drive(n)

    def continue_(self) -> Stop:
        """Run until a breakpoint, a watch, an error or the end of the step."""
        return self._drive(None)

    def run_to(self, op: Any) -> Stop:
        """Run until `op` (a name like "scope/op", an Operation or a Tensor) has run
        (or was found dead); breakpoints and watches met on the way stop earlier."""
        name = _op_name(op)
        self._require_op(name)
        if name in self._outputs and not self._plan.has_control_flow:
            raise ValueError(f"Op '{name}' has already run in this step.")
        return self._drive(None, until=name)

    def result(self) -> Any:
        """Finish the step (ignoring breakpoints and watches) and return the fetched
        values, structured as `Session.run` returns them.

        Raises:
          The step's error, if an op failed (its variable writes are undone), or
          CancelledError after `abort()`.
        """
        if self._status == "running":
            self._drive(None, ignore_stops=True)
        if self._status == "aborted":
            raise errors.CancelledError(None, None, "The step was aborted by the Stepper.")
        if self._error is not None:
            raise self._error
        return self._mapper.build(self._values)

    def abort(self) -> None:
        """Cancel the step: blocked ops give up and variable writes are undone."""
        if self._status != "running":
            return
        ex = self._exec
        cm = ex.step.get_cancellation()
        cm.deregister(ex._cancel_token)
        cm.cancel(errors.CancelledError(None, None, "The step was aborted by the Stepper."))
        ex.step.rollback()
        self._status = "aborted"
        self.stop = Stop("aborted", None, f"aborted after {len(self._ran)} ops; variable writes undone")

    # --- the loop -------------------------------------------------------------------
    def _drive(self, n: int | None, target: int | None = None, until: str | None = None,
               ignore_stops: bool = False) -> Stop:
        if self._status != "running":
            return self.stop
        ex = self._exec
        ran = 0
        token = enter_quiet()
        try:
            while self._status == "running":
                if n is not None and ran >= n:
                    last = self._ran[-1] if self._ran else None
                    self.stop = Stop("step", last, f"stepped {ran} op{'s' if ran != 1 else ''}; last: '{last}'")
                    break
                if ex.ready:
                    # The head of the ready queue (a node index, or with loop frames a
                    # node in some iteration: the public view is ready_nodes()).
                    head = ex.ready[0]
                    idx = target if target is not None else (
                        head if type(head) is int else ex.ready_nodes()[0].index)
                    if self._breakpoints and not ignore_stops and idx != self._skip_break and target is None:
                        bp = self._breakpoint_for(idx)
                        if bp is not None:
                            self._skip_break = idx
                            node = self._plan.nodes[idx]
                            self.stop = Stop("breakpoint", node.op.name,
                                             f"stopped before '{node.op.name}' ({node.op.type}): breakpoint {bp}")
                            break
                    self._skip_break = None
                    ex.run_one(idx)  # an asynchronous op may complete later, in wait_one
                    target = None
                    ran += 1
                elif ex.outstanding:
                    done_before = len(self._ran)
                    ex.wait_one()
                    ran += len(self._ran) - done_before
                if ex.error is not None or (not ex.ready and not ex.outstanding):
                    self._check_end()
                    break
                if self._hit is not None:
                    hit, self._hit = self._hit, None
                    if not ignore_stops:
                        self.stop = hit
                        break
                if until is not None and self._ran and self._ran[-1] == until:
                    self.stop = Stop("run_to", until, f"stopped after '{until}' (run_to)")
                    break
        finally:
            exit_quiet(token)
        return self.stop

    def _breakpoint_for(self, idx: int) -> _Breakpoint | None:
        op = self._plan.nodes[idx].op
        for bp in self._breakpoints:
            if bp.matches(op):
                return bp
        return None

    def _check_end(self) -> None:
        ex = self._exec
        if ex.error is None and (ex.ready or ex.outstanding):
            return
        hit, self._hit = self._hit, None
        try:
            self._values = ex.finish()
        except errors.OpError as e:
            self._error = e
            self._status = "failed"
            self.stop = Stop("error", _error_op(e), f"failed: {type(e).__name__}: {e.message}")
            return
        self._status = "finished"
        msg = f"finished: all {len(self._plan.nodes)} ops ran"
        if hit is not None:
            msg = f"{hit.message}; the step has finished"
        self.stop = Stop("finished" if hit is None else hit.kind, hit.op if hit else None, msg)

    # --- inspection -----------------------------------------------------------------
    @property
    def status(self) -> str:
        """"running" (more ops to run), "finished", "failed" or "aborted"."""
        return self._status

    @property
    def finished(self) -> bool:
        return self._status != "running"

    def ready(self) -> list[str]:
        """Names of the ops in the ready queue, the next to run first."""
        return [n.op.name for n in self._exec.ready_nodes()]

    def ran(self) -> list[str]:
        """Names of the ops that ran (or were found dead), in order."""
        return list(self._ran)

    def dead(self) -> list[str]:
        """Names of the ops skipped as dead (an input came from an untaken branch), in
        the order they were first found dead (in a loop: in any iteration)."""
        return list(dict.fromkeys(self._dead))

    def ops(self) -> list[str]:
        """Every op of this step, in the plan's topological order."""
        return list(self._node_of)

    def frame(self) -> tuple[str, int]:
        """(frame name, iteration) of the last op that ran; ("", 0) outside loops."""
        return self._frame

    def value(self, tensor: Any) -> Any:
        """The value `tensor` ("op:i", "op" for output 0, a Tensor) took in this step:
        a fed value, or the latest output of its op (`DEAD` if the output is dead).
        A variable's output reads the variable's current value.

        Raises:
          ValueError: the op is not part of this step or has not run yet.
        """
        name = _tensor_name(tensor)
        if name in self._fed:
            return _snapshot(self._fed[name])
        op, _, idx = name.rpartition(":")
        node = self._require_op(op)
        i = int(idx)
        if i >= node.num_outputs:
            raise ValueError(f"Op '{op}' has {node.num_outputs} outputs; there is no {name}.")
        if op not in self._outputs:
            raise ValueError(
                f"'{op}' has not run yet; ready: {', '.join(self.ready()[:5]) or 'none'} "
                f"({len(self._ran)} of {len(self._node_of)} ops ran)."
            )
        return _snapshot(self._outputs[op][i])

    def _require_op(self, name: str) -> Any:
        node = self._node_of.get(name)
        if node is None:
            try:
                self._sess.graph.get_operation_by_name(name)
            except (KeyError, ValueError):
                raise ValueError(f"No op named '{name}' in the graph.") from None
            raise ValueError(
                f"Op '{name}' is not part of this step: the fetches do not need it, or graph "
                "optimization folded or merged it away."
            )
        return node

    # --- display --------------------------------------------------------------------
    def __repr__(self) -> str:
        total = len(self._node_of)
        if self._plan.has_control_flow and len(self._ran) > len(set(self._ran)):
            done = f"{len(self._ran)} op executions ({len(set(self._ran))} of {total} ops)"
        else:
            done = f"{len(self._ran)} of {total} ops run"
        lines = [f"<flowlab.debug.Stepper: {done}, {self._status}"]
        lines.append(f"  stopped: {self.stop.message}")
        if self._frame != ("", 0):
            lines.append(f"  frame: {self._frame[0]}, iteration {self._frame[1]}")
        if self._ran:
            last = self._ran[-5:]
            more = f"... ({len(self._ran) - 5} more) " if len(self._ran) > 5 else ""
            lines.append("  last run: " + more + ", ".join(f"{n} ({self._node_of[n].op.type})" for n in last))
        ready = self.ready()
        if ready:
            shown = ", ".join(f"{n} ({self._node_of[n].op.type})" for n in ready[:6])
            lines.append(f"  ready ({len(ready)}): {shown}{', ...' if len(ready) > 6 else ''}")
        dead = self.dead()
        if dead:
            lines.append(f"  dead ({len(dead)}): {', '.join(dead[:6])}{', ...' if len(dead) > 6 else ''}")
        if self._breakpoints:
            lines.append(f"  breakpoints: {'; '.join(self.breakpoints)}")
        if self._watches:
            lines.append(f"  watches: {', '.join(self._watches)}")
        if self.stop_on_nan_or_inf:
            lines.append("  stops on NaN/Inf")
        return "\n".join(lines) + ">"

    def _flowlab_picture_(self) -> Any:
        """The step's ops colored by device, outlined by state (flowlab.viz)."""
        from flowlab.viz.model import from_ops

        placement = self._plan.placement
        ops = [n.op for n in self._plan.nodes]
        pic = from_ops(ops, placement.device_of if placement is not None else None,
                       title=f"step: {len(self._ran)} of {len(ops)} ops run")
        done = set(self._ran)
        dead = set(self._dead)
        ready = self.ready()
        for n in pic.nodes:
            if n.name in dead:
                n.state = "dead"
            elif n.name in done:
                n.state = "done"
        for i, name in enumerate(ready):
            pic.by_name[name].state = "next" if i == 0 else "ready"
        if self.stop.op is not None and self.stop.op in pic.by_name:
            pic.by_name[self.stop.op].state = "error" if self.stop.kind == "error" else "stopped"
        return pic

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self)}


def _snapshot(v: Any) -> Any:
    """A value as the user sees it: a variable's current array; arrays copied so that
    editing them cannot change the step."""
    if isinstance(v, VariableState):
        v = v.value
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, VariableState) else v


def _op_name(x: Any) -> str:
    """An op's name from a name, an Operation, a Tensor or a Variable."""
    if isinstance(x, str):
        return x
    op = getattr(x, "op", None)
    return str(op.name if op is not None else x.name)


def _tensor_name(x: Any) -> str:
    """"op:i" from "op:i", "op" (output 0), a Tensor or a Variable."""
    name = x if isinstance(x, str) else str(x.name)
    _, sep, idx = name.rpartition(":")
    return name if sep and idx.isdigit() else f"{name}:0"


def _fed_values(graph: Any, feed_dict: Any) -> dict[str, Any]:
    """Fed tensor name -> the value as fed (in the tensor's dtype)."""
    out: dict[str, Any] = {}
    for key, value in (feed_dict or {}).items():
        if hasattr(key, "_feed_parts"):
            pairs = list(zip(key._feed_parts(), key._split_feed_value(value)))
        else:
            pairs = [(graph.as_graph_element(key, allow_tensor=True, allow_operation=False), value)]
        for t, v in pairs:
            dt = t.dtype.base_dtype
            out[t.name] = np.asarray(v, dtype=object if dt.name == "string" else dt.as_numpy_dtype)
    return out


def _error_op(e: errors.OpError) -> str | None:
    op = getattr(e, "op", None)
    return getattr(op, "name", None)
