"""The Stepper: one step of a session, run one op at a time (tfdbg, for a notebook).

A Stepper drives the executions of one step (`flowlab.debug.drive`) through the
executor's single-op interface (`start`, `ready_nodes`, `run_one`, completions,
`finish`) and listens to their events.  Nothing is simulated: kernels run for real,
variables keep the values the ops actually wrote, asynchronous ops (queues, Recv)
complete through the executor as in a normal step.

A step placed on several devices is driven per partition by default: one Execution
per device with the partitions' `_Send`/`_Recv` ops, as a session runs it.  `ready()`
then lists every device's ready ops (`ready_by_device()` groups them), `step(device=)`
advances one partition, and a `_Recv` becomes ready once its `_Send` ran (`waiting()`
lists those whose Send has not), so each transfer shows as two steps.
`Stepper(..., partitioned=False)` steps the placed ops as one queue instead, without
the pairs.

State: the executions (values, pending counts, ready queues), what has run (in
order), the outputs of every op as produced (so `value("op:i")` works for outputs
nobody consumes), dead ops, the breakpoints and watches, and why the last command
stopped.

Commands stop at the first of: the step's end, an error (the step then rolls back its
variable writes and `result()` raises it), a breakpoint (checked *before* the op runs:
by name or name scope, by op type, or by a predicate on the Operation), a watch whose
condition holds or, with `stop_on_nan_or_inf`, an op that produced a NaN or an Inf
(checked *after* the op ran, naming the op and the output).  The op that a command
stopped before runs first on the next command, so `continue_()` never stops twice in
the same place.  `abort()` cancels the step and undoes its variable writes.

The next op to run is the head of a ready queue (the executor's FIFO order); with
several partitions the devices take turns, one op each.  `step(op="name")` runs
another ready op instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.debug.drive import Drive
from flowlab.debug.stops import (
    Breakpoint,
    Stop,
    Watch,
    error_op,
    fed_values,
    has_nan_or_inf,
    op_name,
    plain,
    snapshot,
    tensor_name,
)
from flowlab.kernels.registry import DEAD
from flowlab.profiler.trace import plural
from flowlab.runtime.task.fp_errors import enter_quiet, exit_quiet

__all__ = ["Stepper", "Stop", "Watch", "DEAD", "has_nan_or_inf"]


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
      partitioned: step a multi-device step partition by partition, with its
        Send/Recv pairs (the default when the step has several partitions); False:
        its placed ops as one queue.
    """

    def __init__(self, sess: Any, fetches: Any, feed_dict: dict[Any, Any] | None = None,
                 *, stop_on_nan_or_inf: bool = False, partitioned: bool | None = None) -> None:
        self._sess = sess
        drive = None
        if partitioned is not False:
            drive = Drive.per_partition(sess, fetches, feed_dict, self._on_event)
            if drive is None and partitioned:
                raise ValueError("partitioned=True: this step runs on one device (one partition).")
        if drive is None:
            drive = Drive.one_queue(sess, fetches, feed_dict, self._on_event)
        self._drive = drive
        self._mapper = drive.mapper
        self._node_of = {name: n for name, (_, n) in drive.node_of.items()}
        self._has_control_flow = any(ex.plan.has_control_flow for ex in drive.execs)
        self._turn = 0  # with several devices: the device whose op runs next
        self._fed = fed_values(sess.graph, feed_dict)
        self._outputs: dict[str, tuple[Any, ...]] = {}
        self._ran: list[str] = []
        self._dead: list[str] = []
        self._frame: tuple[str, int] = ("", 0)
        self._breakpoints: list[Breakpoint] = []
        self._next_bp_id = 1
        self._watches: dict[str, Watch] = {}
        self.stop_on_nan_or_inf = stop_on_nan_or_inf
        self._bad: dict[tuple[str, int], bool] = {}  # (op, output) -> has NaN/Inf, as last seen
        self._hit: Stop | None = None  # set by the listener when an op's output stops us
        self._skip_break: str | None = None  # op we stopped before: runs first next time
        self._status = "running"  # running, finished, failed, aborted
        self._values: list[Any] | None = None
        self._error: errors.OpError | None = None
        self.stop = Stop("start", None, f"not started: {plural(len(self._node_of), 'op')} to run")
        token = enter_quiet()
        try:
            drive.start()
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
                w.values.append(snapshot(v))
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
                        f"stopped after '{name}' ({node.op.type} on {_short(node.ctx.device.name)}): output "
                        f"{name}:{i} has {nan} NaN and {inf} Inf of {np.size(plain(v))} values; "
                        "its inputs had none",
                    )

    def _reads_nan_or_inf(self, name: str) -> bool:
        """Whether an input of op `name` (as last produced or fed) has a NaN or Inf: an
        op that only passes one on is not where it came from.  A Recv's input is its
        Send's."""
        send = self._drive.send_of.get(name)
        for t in self._node_of[send if send is not None else name].op.inputs:
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
            name = op_name(name)
            if name.endswith("/"):
                if not any(n.startswith(name) for n in self._node_of):
                    raise ValueError(f"No op of this step is in name scope '{name}'.")
            else:
                self._require_op(name)
        bp = Breakpoint(self._next_bp_id, name, op_type, when)
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
        name = tensor_name(tensor)
        op, _, idx = name.rpartition(":")
        node = self._require_op(op)
        if int(idx) >= node.num_outputs:
            raise ValueError(f"Op '{op}' has {node.num_outputs} outputs; there is no {name}.")
        w = self._watches.get(name)
        if w is None or condition is not None:
            w = self._watches[name] = Watch(name, condition)
        if op in self._outputs and not w.values and self._outputs[op][int(idx)] is not DEAD:
            w.values.append(snapshot(self._outputs[op][int(idx)]))
        return w

    @property
    def watches(self) -> dict[str, Watch]:
        return dict(self._watches)

    # --- commands -------------------------------------------------------------------
    def step(self, n: int = 1, *, op: Any = None, device: str | None = None) -> Stop:
        """Run the next `n` ops (stopping early at a breakpoint, a watch, an error or
        the end), or, with `op`, run that ready op now.  With `device` ("/cpu:1", or a
        full device name), only that device's ops run: the command stops ("waiting")
        when none of them is ready.  Returns why it stopped."""
        dev = self._device(device) if device is not None else None
        if op is not None:
            name = op_name(op)
            self._require_op(name)
            if name not in self.ready():
                raise ValueError(f"Op '{name}' is not ready; ready: {', '.join(self.ready()) or 'none'}.")
            return self._advance(1, target=name)
        if n < 1:
            raise ValueError(f"step(n) needs n >= 1, got {n}.")
        return self._advance(n, device=dev)

    def continue_(self) -> Stop:
        """Run until a breakpoint, a watch, an error or the end of the step."""
        return self._advance(None)

    def run_to(self, op: Any) -> Stop:
        """Run until `op` (a name like "scope/op", an Operation or a Tensor) has run
        (or was found dead); breakpoints and watches met on the way stop earlier."""
        name = op_name(op)
        self._require_op(name)
        if name in self._outputs and not self._has_control_flow:
            raise ValueError(f"Op '{name}' has already run in this step.")
        return self._advance(None, until=name)

    def result(self) -> Any:
        """Finish the step (ignoring breakpoints and watches) and return the fetched
        values, structured as `Session.run` returns them.

        Raises:
          The step's error, if an op failed (its variable writes are undone), or
          CancelledError after `abort()`.
        """
        if self._status == "running":
            self._advance(None, ignore_stops=True)
        if self._status == "aborted":
            raise errors.CancelledError(None, None, "The step was aborted by the Stepper.")
        if self._error is not None:
            raise self._error
        assert self._values is not None  # finished without an error
        return self._mapper.build(self._values)

    def abort(self) -> None:
        """Cancel the step: blocked ops give up and variable writes are undone."""
        if self._status != "running":
            return
        self._drive.abort(errors.CancelledError(None, None, "The step was aborted by the Stepper."))
        self._status = "aborted"
        self.stop = Stop("aborted", None, f"aborted after {plural(len(self._ran), 'op')}; variable writes undone")

    # --- the loop -------------------------------------------------------------------
    def _advance(self, n: int | None, target: str | None = None, until: str | None = None,
               ignore_stops: bool = False, device: str | None = None) -> Stop:
        if self._status != "running":
            return self.stop
        drive = self._drive
        ran = 0
        token = enter_quiet()
        try:
            while self._status == "running":
                if n is not None and ran >= n:
                    last = self._ran[-1] if self._ran else None
                    self.stop = Stop("step", last, f"stepped {ran} op{'s' if ran != 1 else ''}; last: '{last}'")
                    break
                pick = self._next(target, device)
                if pick is not None:
                    k, node = pick
                    name = node.op.name
                    if self._breakpoints and not ignore_stops and name != self._skip_break and target is None:
                        bp = self._breakpoint_for(node.op)
                        if bp is not None:
                            self._skip_break = name
                            self.stop = Stop("breakpoint", name,
                                             f"stopped before '{name}' ({node.op.type}): breakpoint {bp}")
                            break
                    self._skip_break = None
                    drive.run(k, node)  # an asynchronous op may complete later (pump)
                    target = None
                    ran += 1
                elif drive.outstanding and device is None:
                    # Nothing may run: only an asynchronous op's completion can help.
                    done_before = len(self._ran)
                    drive.pump(block=True)
                    ran += len(self._ran) - done_before
                elif device is not None and not drive.done:
                    # Never block for one device: what it waits for may need another.
                    if not drive.pump(block=False):
                        self.stop = self._waiting_stop(device)
                        break
                if drive.done:
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

    def _next(self, target: str | None, device: str | None) -> tuple[int, Any] | None:
        """(execution, op) to run next: `target`, or the head of a device's ready ops
        (`device`'s, or the devices in turn), or None when nothing may run now."""
        runnable = self._drive.runnable()
        if target is None and self._skip_break is not None:
            # The op the last command stopped before runs first (on its device's command).
            held = next((kn for kn in runnable if kn[1].op.name == self._skip_break), None)
            if held is not None and (device is None or held[1].ctx.device.name == device):
                return held
        if target is not None:
            return next((kn for kn in runnable if kn[1].op.name == target), None)
        if device is not None:
            return next((kn for kn in runnable if kn[1].ctx.device.name == device), None)
        if not runnable:
            return None
        devices = self._drive.devices
        if len(devices) > 1:
            heads: dict[str, tuple[int, Any]] = {}
            for kn in runnable:
                heads.setdefault(kn[1].ctx.device.name, kn)
            for i in range(len(devices)):
                d = devices[(self._turn + i) % len(devices)]
                if d in heads:
                    self._turn = (self._turn + i + 1) % len(devices)
                    return heads[d]
        return runnable[0]

    def _waiting_stop(self, device: str) -> Stop:
        waits = [r for r in self._drive.waiting() if r.ctx.device.name == device]
        if waits:
            sends = self._drive.send_of
            why = "; ".join(f"'{r.op.name}' waits for '{sends[r.op.name]}' on "
                            f"{_short(self._node_of[sends[r.op.name]].ctx.device.name)}" for r in waits[:3])
            return Stop("waiting", None, f"no op of {_short(device)} is ready: {why}")
        return Stop("waiting", None, f"no op of {_short(device)} is ready: its ops ran or wait for other devices")

    def _device(self, spec: str) -> str:
        """The full name of the step's device `spec` names ("/cpu:1", "CPU:1", ...)."""
        devices = self._drive.devices
        if spec in devices:
            return spec
        tail = spec.strip("/").lower().replace("device:", "")
        for d in devices:
            if d.lower().endswith("/device:" + tail) or d.lower().endswith("/" + tail):
                return d
        raise ValueError(f"No op of this step runs on '{spec}'; devices: {', '.join(devices)}.")

    def _breakpoint_for(self, op: Any) -> Breakpoint | None:
        for bp in self._breakpoints:
            if bp.matches(op):
                return bp
        return None

    def _check_end(self) -> None:
        drive = self._drive
        if not drive.done:
            return
        hit, self._hit = self._hit, None
        try:
            self._values = drive.finish()
        except errors.OpError as e:
            self._error = e
            self._status = "failed"
            self.stop = Stop("error", error_op(e), f"failed: {type(e).__name__}: {e.message}")
            return
        self._status = "finished"
        n = len(self._node_of)
        msg = f"finished: all {n} ops ran" if n != 1 else "finished: its one op ran"
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

    def ready(self, device: str | None = None) -> list[str]:
        """Names of the ops that may run now (`device`'s only, when given), per device
        the next to run first; a Recv whose Send has not run is not among them."""
        dev = self._device(device) if device is not None else None
        return [n.op.name for _, n in self._drive.runnable() if dev is None or n.ctx.device.name == dev]

    def ready_by_device(self) -> dict[str, list[str]]:
        """Per device of the step (full names), its ops that may run now."""
        out: dict[str, list[str]] = {d: [] for d in self._drive.devices}
        for _, n in self._drive.runnable():
            out[n.ctx.device.name].append(n.op.name)
        return out

    def waiting(self) -> dict[str, str]:
        """Recv -> its Send, for the Recvs that wait for a Send that has not run."""
        return {n.op.name: self._drive.send_of[n.op.name] for n in self._drive.waiting()}

    def devices(self) -> list[str]:
        """The devices the step's ops run on (full names)."""
        return list(self._drive.devices)

    @property
    def partitioned(self) -> bool:
        """Whether the step is stepped partition by partition (with Send/Recv ops)."""
        return self._drive.partitioned

    def device_of(self, op: Any) -> str:
        """The device op `op` runs on in this step."""
        return str(self._require_op(op_name(op)).ctx.device.name)

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
        name = tensor_name(tensor)
        if name in self._fed:
            return snapshot(self._fed[name])
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
        return snapshot(self._outputs[op][i])

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
        if self._has_control_flow and len(self._ran) > len(set(self._ran)):
            done = f"{plural(len(self._ran), 'op execution')} ({len(set(self._ran))} of {total} ops)"
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
        if len(self._drive.devices) > 1:
            for dev, ready in self.ready_by_device().items():
                lines.append(f"  ready on {_short(dev)} ({len(ready)}): " + (_listed(ready, self._node_of) or "-"))
            waiting = self.waiting()
            if waiting:
                lines.append(f"  waiting ({len(waiting)}): "
                             + ", ".join(f"{r} for {s}" for r, s in list(waiting.items())[:4])
                             + (", ..." if len(waiting) > 4 else ""))
        else:
            ready = self.ready()
            if ready:
                lines.append(f"  ready ({len(ready)}): {_listed(ready, self._node_of)}")
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

        nodes = list(self._node_of.values())
        ops = [n.op for n in nodes]
        pic = from_ops(ops, {n.op.name: n.ctx.device.name for n in nodes},
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
            if name in pic.by_name:
                pic.by_name[name].state = "next" if i == 0 else "ready"
        if self.stop.op is not None and self.stop.op in pic.by_name:
            pic.by_name[self.stop.op].state = "error" if self.stop.kind == "error" else "stopped"
        return pic

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self)}


def _short(device: str) -> str:
    """"CPU:1" of "/job:localhost/replica:0/task:0/device:CPU:1"."""
    return device.rsplit("/device:", 1)[-1]


def _listed(names: list[str], node_of: dict[str, Any], most: int = 6) -> str:
    shown = ", ".join(f"{n} ({node_of[n].op.type})" for n in names[:most])
    return shown + (", ..." if len(names) > most else "")
