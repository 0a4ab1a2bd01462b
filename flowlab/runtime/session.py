"""The local Session: prune, place, compile, cache, execute (paper section 3.2).

A Session owns its devices (and through them all variable and queue state), a cache
of compiled plans keyed by (graph version, feeds, fetches, targets, path), and the set
of running steps (so that `close()` can cancel them).  `run` is safe to call from
many threads at once; a plan is read-only and each step has its own state.

Paths: a plan whose ops are all plain kernels runs as a generated straight-line
function; anything else (asynchronous or control-flow kernels, a listener, a full
trace) runs on the dataflow executor.  Both give the same values.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flowlab import errors
from flowlab.graph import graph as graph_mod
from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels.sendrecv_kernels import LocalRendezvous
from flowlab.runtime.config import ConfigProto, RunMetadata, RunOptions
from flowlab.runtime.device import Device, local_devices
from flowlab.runtime.executor import Execution, Listener, chain_listeners
from flowlab.runtime.feeds import check_outside_loops, expand_feed, feed_converter
from flowlab.runtime.fetches import FetchMapper
from flowlab.runtime.optimize import Optimization
from flowlab.runtime.partition import (
    PartitionedPlan,
    Partitions,
    compile_partitions,
    needs_unpartitioned,
    partition,
    run_partitioned,
)
from flowlab.runtime.placement import GraphPlacement, Placement, optimize_and_place
from flowlab.runtime.plan import Plan, compile_plan, run_straight_line
from flowlab.runtime.prune import prune
from flowlab.runtime.rendezvous import RendezvousManager
from flowlab.runtime.run_metadata import fill_run_metadata, step_partitions, traced
from flowlab.runtime.step import Step
from flowlab.runtime.step_stats import StepStatsCollector, session_resolver

_MAX_CACHED_PLANS = 256


class _DeviceAttributes:
    """What `Session.list_devices()` returns per device, as TensorFlow's."""

    def __init__(self, device: Device) -> None:
        self.name = device.name
        self.device_type = device.device_type
        self.memory_limit_bytes = device.memory_limit_bytes
        self.incarnation = device.incarnation

    def __repr__(self) -> str:
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes}, {self.incarnation})"


class Session:
    """Runs graphs: `sess.run(fetches, feed_dict)`.  Use as a context manager."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None) -> None:
        if target not in ("", None):
            raise errors.UnimplementedError(
                None, None,
                f"Session target {target!r} is not a local session; use "
                "flowlab.distributed to run on a Dask cluster.",
            )
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config if config is not None else ConfigProto()
        self._devices: list[Device] = local_devices(self._config.device_count)
        # Step signature -> compiled plan: a Plan (one device) or a PartitionedPlan.
        self._plans: collections.OrderedDict[Any, Plan | PartitionedPlan] = collections.OrderedDict()
        self._plans_lock = threading.Lock()
        self._rendezvous = RendezvousManager()
        self._closed = False
        self._active_steps: set[Step] = set()
        # Steps started by start_execution (driven op by op, e.g. by a Stepper).
        self._stepped: weakref.WeakSet[Step] = weakref.WeakSet()
        self._steps_lock = threading.Lock()
        n_threads = self._config.inter_op_parallelism_threads
        self._pool = ThreadPoolExecutor(n_threads, "flowlab-op") if n_threads > 1 else None
        self._listener: Listener | None = None
        self._default_ctx: list[Any] = []
        self._closed_reason = "Attempted to use a closed Session."
        # The placement of the whole graph (per graph version) that every step's
        # placement reads; made on the first step, only with several devices.
        self._whole: GraphPlacement | None = None

    # --- properties -----------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def graph_def(self) -> dict[str, Any]:
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return ""

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def list_devices(self) -> list[_DeviceAttributes]:
        """The session's devices (name, device_type, memory_limit_bytes, incarnation)."""
        return [_DeviceAttributes(d) for d in self._devices]

    def placement(self, fetches: Any, feed_dict: Any = None) -> Placement:
        """The `Placement` (op name -> device, with reasons) of the step that runs
        `fetches` with the tensors of `feed_dict` fed (its keys, or a list of them;
        values are not needed).  The same cached plan as `run` uses."""
        return self._plan_of(fetches, feed_dict).placement

    def optimization(self, fetches: Any, feed_dict: Any = None) -> Optimization:
        """What the graph optimization pass did to the step that runs `fetches` with
        `feed_dict`'s keys fed: folded, merged and removed ops and the optimized
        GraphDef (see `flowlab.runtime.optimize`)."""
        return self._plan_of(fetches, feed_dict).optimization

    def partitions(self, fetches: Any, feed_dict: Any = None) -> Partitions:
        """The per-device GraphDefs and Send/Recv pairs of the step that runs
        `fetches` with `feed_dict`'s keys fed (see `flowlab.runtime.partition`).  A
        step on one device has one partition and no pairs.  Each GraphDef is a JSON
        dict that also reads as TensorFlow's proto (`gd.node[0].op`; see
        `flowlab.runtime.run_metadata`)."""
        return step_partitions(self._plan_of(fetches, feed_dict), self._devices)

    def _plan_of(self, fetches: Any, feed_dict: Any) -> Plan | PartitionedPlan:
        self._check_open()
        mapper = FetchMapper(self._graph, fetches)
        keys = list(feed_dict.keys() if isinstance(feed_dict, dict) else feed_dict or [])
        feeds: list[Tensor] = []
        for k in keys:
            if hasattr(k, "_feed_parts"):
                feeds.extend(k._feed_parts())
            else:
                feeds.append(self._graph.as_graph_element(k, allow_tensor=True, allow_operation=False))
        return self._plan_for(feeds, mapper.tensors, mapper.targets)

    def set_listener(self, listener: Listener | None) -> Listener | None:
        """Receive `ExecEvent`s of every step (the profiler and live views use this);
        None stops.  Returns the listener it replaces.  To watch beside an existing
        listener: `sess.set_listener(chain_listeners(sess.listener, mine))`, and put the
        returned one back afterwards."""
        previous = self._listener
        self._listener = listener
        return previous

    @property
    def listener(self) -> Listener | None:
        """The listener set by `set_listener` (None when steps are not watched)."""
        return self._listener

    # --- lifetime -------------------------------------------------------------------
    def close(self) -> None:
        """Cancel running steps and release all state (variables, queues)."""
        if self._closed:
            return
        self._closed = True
        with self._steps_lock:
            steps = list(self._active_steps) + list(self._stepped)
        for s in steps:
            s.get_cancellation().cancel(errors.CancelledError(None, None, "Session has been closed."))
        for d in self._devices:
            d.resources.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __enter__(self) -> Session:
        ctx = contextlib.ExitStack()
        ctx.enter_context(self._graph.as_default())
        ctx.enter_context(self.as_default())
        self._default_ctx.append(ctx)
        return self

    def __exit__(self, *exc: Any) -> None:
        ctx = self._default_ctx.pop()
        ctx.close()
        self.close()

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Session]:
        stack = _session_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.remove(self)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(self._closed_reason)

    # --- running --------------------------------------------------------------------
    def run(
        self,
        fetches: Any,
        feed_dict: dict[Any, Any] | None = None,
        options: RunOptions | None = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Compute `fetches` (any nesting of tensors, ops, names), feeding `feed_dict`."""
        self._check_open()
        mapper = FetchMapper(self._graph, fetches)
        feed_tensors, feed_values = self._convert_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, mapper.tensors, mapper.targets)
        if run_metadata is None:
            return mapper.build(self._execute(plan, feed_values, options, None, self._listener))
        return mapper.build(self._run_with_metadata(plan, feed_values, options, run_metadata))

    def _run_with_metadata(
        self, plan: Plan | PartitionedPlan, feed_values: list[Any], options: RunOptions | None,
        run_metadata: RunMetadata,
    ) -> list[Any]:
        """A step given a RunMetadata: traced only when `options` ask for a trace; then
        the metadata TensorFlow leaves (partition graphs when asked, traced or not)."""
        trace = traced(options, run_metadata)
        values = self._execute(plan, feed_values, options, run_metadata if trace else None, self._listener)
        fill_run_metadata(run_metadata, options, plan, trace, self._devices)
        return values

    def make_callable(
        self, fetches: Any, feed_list: list[Any] | None = None, accept_options: bool = False
    ) -> Callable[..., Any]:
        """A function running this step with the feeds as positional arguments, with as
        little per-call work as the runtime allows."""
        self._check_open()
        mapper = FetchMapper(self._graph, fetches)
        feed_tensors = [self._graph.as_graph_element(f, allow_tensor=True, allow_operation=False) for f in feed_list or []]
        plan = self._plan_for(feed_tensors, mapper.tensors, mapper.targets)
        converters = [feed_converter(t) for t in feed_tensors]
        build = mapper.build
        n = len(converters)
        fn = plan.straight_line

        def call_general(*args: Any, options: RunOptions | None = None, run_metadata: RunMetadata | None = None) -> Any:
            self._check_open()
            if len(args) != n:
                raise TypeError(f"This callable takes {n} feed values, got {len(args)}.")
            vals = [c(a) for c, a in zip(converters, args)]
            if run_metadata is None:
                return build(self._execute(plan, vals, options, None, self._listener))
            return build(self._run_with_metadata(plan, vals, options, run_metadata))

        # The fast callables below were chosen with no listener set; one set later
        # sends the call to `call_general` (one attribute test per call).
        if (fn is not None and isinstance(plan, Plan) and not accept_options and not plan.has_async
                and self._straight(plan, self._listener, None)):
            session, straight = self, plan
            if n == 0:
                def call0() -> Any:
                    if session._closed:
                        raise RuntimeError(session._closed_reason)
                    if session._listener is not None:
                        return call_general()
                    return build(run_straight_line(straight, Step(session), []))

                return call0

            def call(*args: Any) -> Any:
                if session._closed:
                    raise RuntimeError(session._closed_reason)
                if session._listener is not None:
                    return call_general(*args)
                if len(args) != n:
                    raise TypeError(f"This callable takes {n} feed values, got {len(args)}.")
                return build(run_straight_line(straight, Step(session), [c(a) for c, a in zip(converters, args)]))

            return call

        fused = plan.fused if type(plan) is PartitionedPlan else None
        if fused is not None and not accept_options and self._straight(fused, self._listener, None):
            session = self

            def call_fused(*args: Any) -> Any:
                if session._closed:
                    raise RuntimeError(session._closed_reason)
                if session._listener is not None:
                    return call_general(*args)
                if len(args) != n:
                    raise TypeError(f"This callable takes {n} feed values, got {len(args)}.")
                step = Step(session)
                step.rendezvous = LocalRendezvous(step.step_id)
                return build(run_straight_line(fused, step, [c(a) for c, a in zip(converters, args)]))

            return call_fused

        return call_general

    def _execute(
        self,
        plan: Plan | PartitionedPlan,
        feed_values: list[Any],
        options: RunOptions | None,
        run_metadata: RunMetadata | None,
        listener: Listener | None,
    ) -> list[Any]:
        timeout_ms = (options.timeout_in_ms if options is not None else 0) or self._config.operation_timeout_in_ms
        if type(plan) is PartitionedPlan:
            return self._execute_partitioned(plan, feed_values, options, run_metadata, listener, timeout_ms)
        assert isinstance(plan, Plan)
        straight = self._straight(plan, listener, run_metadata)
        if straight and not plan.has_async:
            return run_straight_line(plan, Step(self), feed_values)
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms and timeout_ms > 0 else None
        step = Step(self, deadline)
        if straight:
            # May wait (a queue): register the step so that close() can cancel it.
            with self._steps_lock:
                self._active_steps.add(step)
            try:
                if self._closed:
                    raise errors.CancelledError(None, None, "Session has been closed.")
                return run_straight_line(plan, step, feed_values)
            finally:
                with self._steps_lock:
                    self._active_steps.discard(step)
        collector = StepStatsCollector(session_resolver(self, plan)) if run_metadata is not None else None
        if collector is not None:
            listener = chain_listeners(collector.listen, listener)
        with self._steps_lock:
            self._active_steps.add(step)
        try:
            if self._closed:  # closed while this step was starting
                raise errors.CancelledError(None, None, "Session has been closed.")
            result = Execution(plan, step, feed_values, listener, self._pool, deadline).run()
        finally:
            with self._steps_lock:
                self._active_steps.discard(step)
        if collector is not None and run_metadata is not None:
            collector.fill(run_metadata)
        return result

    def _execute_partitioned(
        self,
        plan: PartitionedPlan,
        feed_values: list[Any],
        options: RunOptions | None,
        run_metadata: RunMetadata | None,
        listener: Listener | None,
        timeout_ms: int,
    ) -> list[Any]:
        """One step over several devices.  Unwatched, and when the plan has one, the
        fused straight-line function (its Recvs never wait: the step's own table is
        enough).  Otherwise every partition an Execution of one Step, whose table in
        the session's rendezvous manager is dropped at the end."""
        fused = plan.fused
        if fused is not None and self._straight(fused, listener, run_metadata):
            step = Step(self)
            step.rendezvous = LocalRendezvous(step.step_id)
            return run_straight_line(fused, step, feed_values)
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms and timeout_ms > 0 else None
        collector = None
        if run_metadata is not None:
            collector = StepStatsCollector(session_resolver(self, plan))
            listener = chain_listeners(collector.listen, listener)
        step = Step(self, deadline)
        rdv = step.rendezvous = self._rendezvous.find_or_create(step.step_id)
        cm = step.get_cancellation()
        cm.register(lambda: rdv.abort(errors.CancelledError(
            None, None, "A Recv was cancelled: the step was aborted (an op failed, the deadline "
            "passed or the session was closed)."
        )))
        with self._steps_lock:
            self._active_steps.add(step)
        try:
            if self._closed:
                raise errors.CancelledError(None, None, "Session has been closed.")
            result = run_partitioned(plan, step, feed_values, listener, self._pool, deadline)
        finally:
            with self._steps_lock:
                self._active_steps.discard(step)
            self._rendezvous.cleanup(step.step_id)
        if collector is not None and run_metadata is not None:
            collector.fill(run_metadata)
        return result

    def _straight(self, plan: Plan, listener: Listener | None, run_metadata: RunMetadata | None) -> bool:
        """Whether a step of `plan` may take the generated straight-line path: nobody
        watches its ops, and no op pool should overlap its expensive kernels."""
        return (
            plan.straight_line is not None and listener is None and run_metadata is None
            and not (self._pool is not None and plan.num_expensive >= 2)
        )

    def start_execution(
        self, fetches: Any, feed_dict: dict[Any, Any] | None = None, listener: Listener | None = None
    ) -> tuple[Execution, FetchMapper]:
        """Start a step on the dataflow executor without running it, for driving it one
        op at a time (the Stepper).  Call `execution.start()`, then `run_one()`."""
        self._check_open()
        mapper = FetchMapper(self._graph, fetches)
        feed_tensors, feed_values = self._convert_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, mapper.tensors, mapper.targets)
        if isinstance(plan, PartitionedPlan):
            # Stepping goes op by op in one Execution: the placed ops without the
            # Send/Recv pairs (in one process the values are the same).
            plan = compile_plan(
                plan.ops, plan.placement.device_of, feed_tensors, mapper.tensors, plan.graph_version,
                optimization=plan.optimization,
            )
        step = Step(self)
        with self._steps_lock:
            self._stepped.add(step)
        return Execution(plan, step, feed_values, listener), mapper

    # --- feeds ----------------------------------------------------------------------
    def _convert_feeds(self, feed_dict: dict[Any, Any] | None) -> tuple[list[Tensor], list[Any]]:
        if not feed_dict:
            return [], []
        tensors: list[Tensor] = []
        values: list[Any] = []
        for key, value in feed_dict.items():
            for t, v in expand_feed(self._graph, key, value):
                if isinstance(v, Tensor):
                    raise TypeError(
                        "The value of a feed cannot be a tf.Tensor object. Acceptable feed values "
                        "include Python scalars, strings, lists, numpy ndarrays, or TensorHandles. "
                        f"For reference, the tensor object was {v!r} which was passed to the "
                        f"argument `feed_dict` with key {t!r}."
                    )
                tensors.append(t)
                values.append(feed_converter(t)(v))
        return tensors, values

    # --- plans ----------------------------------------------------------------------
    def _plan_for(
        self, feeds: list[Tensor], fetches: list[Tensor], targets: list[Operation]
    ) -> Plan | PartitionedPlan:
        g = self._graph
        key = (
            g.version,
            tuple(t.name for t in feeds),
            tuple(t.name for t in fetches),
            tuple(op.name for op in targets),
        )
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._plans_lock:
            plan = self._plans.get(key)
            if plan is not None:
                return plan
            for t in list(feeds) + list(fetches):
                if t.graph is not g:
                    raise ValueError(f"Tensor {t.name} is not an element of this session's graph.")
            check_outside_loops(feeds, fetches, targets)
            ops = prune(fetches, targets, feeds)
            opt, placement = optimize_and_place(
                ops, feeds, fetches, targets, self._devices, self._config, self._graph_placement()
            )
            plan = self._compile(opt.ops, placement, feeds, fetches, g.version, opt)
            self._plans[key] = plan
            while len(self._plans) > _MAX_CACHED_PLANS:
                self._plans.popitem(last=False)
            return plan

    def _graph_placement(self) -> GraphPlacement | None:
        """The placement of the whole graph as it is now (None with one device: every
        op goes there, step by step -- unless `log_device_placement` asks to see it).
        With `log_device_placement`, each new placement of the graph is printed as
        TensorFlow prints it: every op, generators (constants, placeholders) last."""
        cfg = self._config
        if len(self._devices) <= 1 and not cfg.log_device_placement:
            return None
        if self._whole is None:
            self._whole = GraphPlacement(
                self._devices, cfg.allow_soft_placement, cfg.placement_strategy, cfg.cost_model
            )
        builds = self._whole.builds
        whole = self._whole.update(self._graph)
        if cfg.log_device_placement and whole.builds != builds:
            ops = [op for op in self._graph.get_operations() if op.name in whole.device_of]
            generator = [not op._inputs and len(op._outputs) == 1 and not op._outputs[0].dtype.is_ref_dtype
                         for op in ops]
            for op in [o for o, gen in zip(ops, generator) if not gen] + [o for o, gen in zip(ops, generator) if gen]:
                print(f"{op.name}: ({op.type}): {whole.device_of[op.name].name}")
        return whole

    def _compile(
        self, ops: list[Operation], placement: Placement, feeds: list[Tensor], fetches: list[Tensor],
        version: int, opt: Optimization | None = None,
    ) -> Plan | PartitionedPlan:
        """A Plan when the step uses one device (keeping the straight-line and
        make_callable fast paths), else one Plan per device joined by Send/Recv (loops
        across devices get control-loop skeletons) -- except for a hand-built loop
        without a LoopCond spanning devices, which runs as one placed Plan (see
        `partition.needs_unpartitioned`)."""
        used = {id(d) for d in placement.device_of.values()}
        if len(used) <= 1 or needs_unpartitioned(ops, placement.device_of, opt):
            plan = compile_plan(ops, placement.device_of, feeds, fetches, version, optimization=opt)
            plan.placement = placement
            plan.optimization = opt
            return plan
        pg = partition(ops, placement.device_of, feeds, fetches, self._devices, optimization=opt)
        pplan = compile_partitions(pg, version, placement)
        pplan.ops, pplan.optimization = ops, opt
        return pplan

    def __del__(self) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
        except Exception:
            pass


# --- default session ---------------------------------------------------------------
_local = threading.local()


def _session_stack() -> list[Session]:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def get_default_session() -> Session | None:
    s = _session_stack()
    if s:
        return s[-1]
    return _interactive[-1] if _interactive else None


_interactive: list[Session] = []


class InteractiveSession(Session):
    """A Session that installs itself as the default (for notebooks and shells)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None) -> None:
        super().__init__(target, graph, config)
        _interactive.append(self)
        # Its graph becomes the default graph too, until it is closed (TensorFlow).
        self._graph_stack: list[Graph] | None = graph_mod._default_stack()
        self._graph_stack.append(self._graph)

    def close(self) -> None:
        super().close()
        if self in _interactive:
            _interactive.remove(self)
        stack = getattr(self, "_graph_stack", None)
        if stack is not None:
            # Remove our entry (the last one for this graph), wherever it is now.
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is self._graph:
                    del stack[i]
                    break
            self._graph_stack = None


def _eval_with_default_session(element: Any, feed_dict: Any, session: Session | None) -> Any:
    if session is None:
        session = get_default_session()
        if session is None:
            what = "Tensor.eval()" if isinstance(element, Tensor) else "`eval(session=sess)`"
            raise ValueError(
                f"Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                f"`with sess.as_default()` or pass an explicit session to {what}."
                if not isinstance(element, Operation) else
                "Cannot execute operation using `run()`: No default session is registered. Use "
                "`with sess.as_default():` or pass an explicit session to `run(session=sess)`"
            )
    if session.graph is not element.graph:
        raise ValueError(
            "Cannot use the given session to evaluate tensor: the tensor's graph is different "
            "from the session's graph."
        )
    return session.run(element, feed_dict)


graph_mod._eval_function.append(_eval_with_default_session)
