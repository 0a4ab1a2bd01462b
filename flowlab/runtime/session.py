"""The local Session: a master and an in-process task (paper section 3.3).

A Session is the client of TensorFlow's design.  It owns

* a `Master` (flowlab.runtime.master): per step signature, prune, optimize, place,
  partition and register, cached;
* its task, a `LocalTask` (flowlab.runtime.task) holding the devices of
  `device_count` and through them all variable and queue state, which compiles and
  runs the partitions it is sent.  Master and task speak only the task interface
  (flowlab.runtime.interface); in one process the calls pass arrays without copying.

`run` maps the fetches, converts the feeds, asks the master for the step's plan and
the task for one step of it, and rebuilds the fetch structure.  It is safe to call
from many threads at once: a plan is read-only and each step has its own state.
The Stepper's `start_execution` compiles the placed step in the client to drive it
op by op (debugging runs here, next to the user; not for a session on a cluster,
whose state lives on its tasks).  The same Session runs on a cluster's tasks
(flowlab.distributed): they answer the same calls, each one a message.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from flowlab import errors
from flowlab.graph import graph as graph_mod
from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.tensor import Operation, Tensor, user_traceback
from flowlab.runtime.client.feeds import expand_feed, feed_converter
from flowlab.runtime.client.fetches import FetchMapper
from flowlab.runtime.client.run_metadata import fill_run_metadata, step_partitions, traced
from flowlab.runtime.client.step_stats import StepStatsCollector, session_resolver
from flowlab.runtime.config import ConfigProto, RunMetadata, RunOptions
from flowlab.runtime.master.master import Master, StepPlan
from flowlab.runtime.master.optimize import Optimization
from flowlab.runtime.master.partition import Partitions
from flowlab.runtime.master.placement import Placement
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.executor import Execution, Listener, chain_listeners
from flowlab.runtime.task.partitioned_plan import PartitionedPlan
from flowlab.runtime.task.plan import Plan, compile_plan, fed_fetch_value
from flowlab.runtime.task.step import Step, next_step_id
from flowlab.runtime.task.task import LocalTask


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

    def __init__(self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None,
                 *, tasks: list[Any] | None = None) -> None:
        """`target`: "" for this process, or a cluster -- a flowlab.distributed Cluster
        or LocalCluster, a Dask scheduler address ("tcp://host:8786"), a
        `tf.train.Server`'s target -- whose tasks are Dask workers (resolved by the
        layer above, see `register_target_resolver`).  `tasks`: in-process tasks to
        run on (flowlab.runtime.task.LocalTask), which outlive the session with their
        state, as TensorFlow's servers do.  With neither, the session makes and owns
        one task holding `config.device_count`'s devices."""
        self._target = target
        if target not in ("", None):
            if tasks is not None:
                raise ValueError("Give a Session either a target or tasks, not both.")
            tasks = resolve_target(target)
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config if config is not None else ConfigProto()
        self._owns_tasks = tasks is None
        self._tasks: list[Any] = list(tasks) if tasks is not None else [
            LocalTask("localhost", 0, self._config.device_count, self._config.inter_op_parallelism_threads,
                      self._config.intra_op_parallelism_threads)]
        self._task = self._tasks[0]
        self._master = Master(self._graph, self._config, self._tasks)
        self._devices: list[Device] = [d for t in self._tasks for d in t.devices]
        self._step_pool: ThreadPoolExecutor | None = None  # runs a step's tasks side by side
        self._closed = False
        # Steps started by start_execution (driven op by op, e.g. by a Stepper).
        self._stepped: weakref.WeakSet[Step] = weakref.WeakSet()
        self._steps_lock = threading.Lock()
        self._listener: Listener | None = None
        self._default_ctx: list[Any] = []
        self._closed_reason = "Attempted to use a closed Session."

    # --- properties -----------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def graph_def(self) -> dict[str, Any]:
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target if isinstance(self._target, str) else str(getattr(self._target, "target", ""))

    @staticmethod
    def reset(target: Any, containers: list[str] | None = None, config: ConfigProto | None = None) -> None:
        """Drop the state (variables, queues) of `containers` -- all of them when None --
        on every task of the cluster `target`, as TensorFlow's `Session.reset`: state on
        a cluster outlives sessions until this is called.  Open sessions on those
        tasks find their variables uninitialized."""
        for t in resolve_target(target):
            t.reset(list(containers) if containers is not None else None)

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    @property
    def _whole(self) -> Any:
        """The master's placement of the whole graph (None until a step needs it)."""
        return self._master.whole

    @property
    def _rendezvous(self) -> Any:
        """The task's rendezvous tables (the Stepper drives partitions through them)."""
        self._check_in_process()
        return self._task.rendezvous

    def _check_in_process(self) -> None:
        """Stepping op by op runs a step here, next to its state: not on a cluster."""
        if not all(getattr(t, "in_process", True) for t in self._tasks):
            raise errors.UnimplementedError(
                None, None, "Stepping a step op by op runs it in this process, but this session's variables and "
                "queues live on its cluster's tasks. Step the graph in a local session (tf.Session()), "
                "or trace a cluster step (flowlab.profiler.profile) to see every op it ran.")

    @property
    def _plans(self) -> dict[Any, Plan | PartitionedPlan]:
        """The compiled plans of the cached step signatures (for finding ops by name)."""
        return {k: self._compiled(sp) for k, sp in list(self._master.plans.items()) if sp.tasks}

    def list_devices(self) -> list[_DeviceAttributes]:
        """The session's devices (name, device_type, memory_limit_bytes, incarnation)."""
        return [_DeviceAttributes(d) for d in self._devices]

    def placement(self, fetches: Any, feed_dict: Any = None) -> Placement:
        """The `Placement` (op name -> device, with reasons) of the step that runs
        `fetches` with the tensors of `feed_dict` fed (its keys, or a list of them;
        values are not needed).  The same cached plan as `run` uses."""
        return self._step_plan_of(fetches, feed_dict).placement

    def optimization(self, fetches: Any, feed_dict: Any = None) -> Optimization:
        """What the graph optimization pass did to the step that runs `fetches` with
        `feed_dict`'s keys fed: folded, merged and removed ops and the optimized
        GraphDef (see `flowlab.runtime.master.optimize`)."""
        return self._step_plan_of(fetches, feed_dict).optimization  # type: ignore[return-value]

    def partitions(self, fetches: Any, feed_dict: Any = None) -> Partitions:
        """The per-device GraphDefs and Send/Recv pairs of the step that runs
        `fetches` with `feed_dict`'s keys fed (see `flowlab.runtime.master.partition`).
        A step on one device has one partition and no pairs.  Each GraphDef is a JSON
        dict that also reads as TensorFlow's proto (`gd.node[0].op`; see
        `flowlab.runtime.client.run_metadata`)."""
        return step_partitions(self._view_plan(self._step_plan_of(fetches, feed_dict)), self._devices)

    def _step_plan_of(self, fetches: Any, feed_dict: Any) -> StepPlan:
        self._check_open()
        mapper = FetchMapper(self._graph, fetches)
        keys = list(feed_dict.keys() if isinstance(feed_dict, dict) else feed_dict or [])
        feeds: list[Tensor] = []
        for k in keys:
            if hasattr(k, "_feed_parts"):
                feeds.extend(k._feed_parts())
            else:
                feeds.append(self._graph.as_graph_element(k, allow_tensor=True, allow_operation=False))
        return self._master.plan_for(feeds, mapper.tensors, mapper.targets)

    def _plan_of(self, fetches: Any, feed_dict: Any) -> Plan | PartitionedPlan:
        return self._compiled(self._step_plan_of(fetches, feed_dict))

    def _plan_for(self, feeds: list[Tensor], fetches: list[Tensor], targets: list[Operation]) -> Plan | PartitionedPlan:
        """The task's compiled plan of a signature, with the master's placement and
        optimization attached (for inspection, pictures and the Stepper)."""
        return self._compiled(self._master.plan_for(feeds, fetches, targets))

    def _compiled(self, sp: StepPlan) -> Plan | PartitionedPlan:
        plan: Plan | PartitionedPlan
        if not sp.tasks:  # every fetch is fed: nothing was registered
            plan = compile_plan([], {}, [], [], sp.graph_version)
        elif len(sp.tasks) > 1 and hasattr(sp.tasks[0], "view_of"):  # tasks elsewhere: one view of them all
            plan = sp.tasks[0].view_of(sp.tasks, sp.handle)
        else:
            plan = sp.tasks[0].compiled(sp.handle).plan
        plan.placement, plan.optimization = sp.placement, sp.optimization
        if isinstance(plan, PartitionedPlan):
            plan.ops, plan.fed_fetches, plan.master_partitions = sp.ops, sp.fed_fetches, sp.partitioned
        return plan

    def _view_plan(self, sp: StepPlan) -> Plan | PartitionedPlan:
        """What pictures and RunMetadata show of a step: the task's partitions with the
        master's views, or for a step on one device, the placed step compiled here
        from the client's ops (so names and inputs are the client's)."""
        if sp.multi_device:
            return self._compiled(sp)
        if sp.view is None:
            plan = compile_plan(sp.ops, sp.placement.device_of, sp.feeds, sp.fetches, sp.graph_version,
                                straight_line=False, optimization=sp.optimization)
            plan.placement, plan.optimization = sp.placement, sp.optimization
            sp.view = plan
        return sp.view

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
            steps = list(self._stepped)
        for s in steps:
            s.get_cancellation().cancel(errors.CancelledError(None, None, "Session has been closed."))
        if self._owns_tasks:
            for t in self._tasks:
                t.close()
        else:  # the tasks live on: take this session's registrations back
            for sp in list(self._master.plans.values()):
                for t in sp.tasks:
                    t.deregister_partitions({"handle": sp.handle})
        if self._step_pool is not None:
            self._step_pool.shutdown(wait=False)

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
            raise RuntimeError(self._closed_reason + _closed_advice())

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
        sp = self._master.plan_for(feed_tensors, mapper.tensors, mapper.targets)
        if run_metadata is None:
            runner = sp.runner if sp.runner is not False else self._bind_runner(sp)
            if runner is not None and self._listener is None:
                try:
                    return mapper.build(runner(feed_values))
                except errors.OpError as e:
                    self._client_error(e)
                    raise
            return mapper.build(self._execute(sp, feed_values, options, None, self._listener))
        return mapper.build(self._run_with_metadata(sp, feed_values, options, run_metadata))

    def _bind_runner(self, sp: StepPlan) -> Any:
        """The in-process fast runner of a one-task step (cached on its StepPlan)."""
        sp.runner = sp.tasks[0].runner(sp.handle) if len(sp.tasks) == 1 and not sp.fed_fetches else None
        return sp.runner

    def _run_with_metadata(
        self, sp: StepPlan, feed_values: list[Any], options: RunOptions | None, run_metadata: RunMetadata,
    ) -> list[Any]:
        """A step given a RunMetadata: traced only when `options` ask for a trace; then
        the metadata TensorFlow leaves (partition graphs when asked, traced or not)."""
        trace = traced(options, run_metadata)
        values = self._execute(sp, feed_values, options, run_metadata if trace else None, self._listener)
        fill_run_metadata(run_metadata, options, self._view_plan(sp), trace, self._devices)
        return values

    def make_callable(
        self, fetches: Any, feed_list: list[Any] | None = None, accept_options: bool = False
    ) -> Callable[..., Any]:
        """A function running this step with the feeds as positional arguments, with as
        little per-call work as the runtime allows."""
        self._check_open()
        if any(hasattr(f, "_feed_parts") for f in feed_list or []):
            # A composite feed (a SparseTensor): each value splits into its parts as in `run`.
            keys = list(feed_list or [])

            def call_composite(*args: Any, options: RunOptions | None = None,
                               run_metadata: RunMetadata | None = None) -> Any:
                if len(args) != len(keys):
                    raise TypeError(f"This callable takes {len(keys)} feed values, got {len(args)}.")
                return self.run(fetches, dict(zip(keys, args)), options, run_metadata)

            return call_composite
        mapper = FetchMapper(self._graph, fetches)
        feed_tensors = [self._graph.as_graph_element(f, allow_tensor=True, allow_operation=False) for f in feed_list or []]
        sp = self._master.plan_for(feed_tensors, mapper.tensors, mapper.targets)
        converters = [feed_converter(t) for t in feed_tensors]
        build = mapper.build
        n = len(converters)

        def call_general(*args: Any, options: RunOptions | None = None, run_metadata: RunMetadata | None = None) -> Any:
            self._check_open()
            if len(args) != n:
                raise TypeError(f"This callable takes {n} feed values, got {len(args)}.")
            vals = [c(a) for c, a in zip(converters, args)]
            if run_metadata is None:
                return build(self._execute(sp, vals, options, None, self._listener))
            return build(self._run_with_metadata(sp, vals, options, run_metadata))

        # The fast callable below was chosen with no listener set; one set later sends
        # the call to `call_general` (one attribute test per call).
        if accept_options or len(sp.tasks) != 1 or sp.fed_fetches or not sp.tasks[0].compiled(sp.handle).fast:
            return call_general
        session, handle = self, sp.handle
        runner = sp.runner if sp.runner is not False else self._bind_runner(sp)
        if runner is None:  # the fused partitions of one task: a run per call
            task_run = sp.tasks[0].run

            def runner(feeds: list[Any]) -> list[Any]:
                return task_run(handle, next_step_id(), feeds)

        def call(*args: Any) -> Any:
            if session._closed:
                raise RuntimeError(session._closed_reason + _closed_advice())
            if session._listener is not None:
                return call_general(*args)
            if len(args) != n:
                raise TypeError(f"This callable takes {n} feed values, got {len(args)}.")
            try:
                return build(runner([c(a) for c, a in zip(converters, args)]))
            except errors.OpError as e:
                session._client_error(e)
                raise

        return call

    def _execute(
        self,
        sp: StepPlan,
        feed_values: list[Any],
        options: RunOptions | None,
        run_metadata: RunMetadata | None,
        listener: Listener | None,
    ) -> list[Any]:
        """One step: `run` on the step's task, then the fetches a feed answers."""
        timeout_ms = (options.timeout_in_ms if options is not None else 0) or self._config.operation_timeout_in_ms
        collector = None
        if run_metadata is not None:
            collector = StepStatsCollector(session_resolver(self, self._compiled(sp)))
            listener = chain_listeners(collector.listen, listener)
        if sp.tasks:
            try:
                if len(sp.tasks) == 1:
                    values = sp.tasks[0].run(sp.handle, next_step_id(), feed_values, timeout_ms or 0, listener,
                                             traced=collector is not None)
                else:
                    values = self._run_on_tasks(sp, feed_values, timeout_ms or 0, listener, collector is not None)
            except errors.OpError as e:
                self._client_error(e)
                raise
        else:
            values = [None] * sp.num_fetches
        if sp.fed_fetches:
            for i, j in sp.fed_fetches:
                values[i] = fed_fetch_value(feed_values[j])
        if collector is not None and run_metadata is not None:
            collector.fill(run_metadata)
        return values

    def _run_on_tasks(self, sp: StepPlan, feed_values: list[Any], timeout_ms: int, listener: Listener | None,
                      traced: bool) -> list[Any]:
        """One step on several tasks at once.  When one fails, the step is aborted on
        every task (each rolls back its own writes) and the first real error -- not
        the cancellations it caused -- is raised."""
        step_id = next_step_id()
        together = getattr(sp.tasks[0], "run_together", None)
        if together is not None:  # tasks over a network: one message each, side by side
            results = together(sp.tasks, sp.handle, step_id, feed_values, timeout_ms, listener, traced)
            return [results[owner][i] if owner >= 0 else None for i, owner in enumerate(sp.fetch_owner)]
        if self._step_pool is None:
            self._step_pool = ThreadPoolExecutor(max(2, len(self._tasks)), "flowlab-step")
        futures = [self._step_pool.submit(t.run, sp.handle, step_id, feed_values, timeout_ms, listener, traced)
                   for t in sp.tasks]
        failed: list[BaseException] = []
        for f in as_completed(futures):
            e = f.exception()
            if e is not None:
                if not failed:  # stop the others now
                    for t in sp.tasks:
                        t.abort_step({"step_id": step_id, "reason": f"The step failed on another task: {e}"})
                failed.append(e)
        if failed:
            # Again, now that every task has ended: roll back those that finished anyway.
            for t in sp.tasks:
                t.abort_step({"step_id": step_id, "reason": "The step failed on another task."})
            raise next((e for e in failed if not isinstance(e, (errors.CancelledError, errors.AbortedError))),
                       failed[0])
        results = [f.result() for f in futures]
        for t in sp.tasks:
            t.commit_step({"step_id": step_id})
        return [results[owner][i] if owner >= 0 else None for i, owner in enumerate(sp.fetch_owner)]

    def _client_error(self, e: errors.OpError) -> None:
        """A task's error names its own copy of an op: name the client's op of that
        name instead, as TensorFlow's session does (`e.op` is an op of `sess.graph`)."""
        op = getattr(e, "_op", None)
        if op is not None and op.graph is not self._graph:
            e._op = self._graph._by_name.get(op.name, op)
        elif op is None and (name := getattr(e, "node_name", None)):  # it came over a network
            e._op = self._graph._by_name.get(name)

    def start_execution(
        self, fetches: Any, feed_dict: dict[Any, Any] | None = None, listener: Listener | None = None
    ) -> tuple[Execution, FetchMapper]:
        """Start a step on the dataflow executor without running it, for driving it one
        op at a time (the Stepper).  Call `execution.start()`, then `run_one()`.  The
        step's placed ops are compiled here, in the client, on the task's devices (in
        one process the values are those of the partitioned step)."""
        self._check_open()
        self._check_in_process()
        mapper = FetchMapper(self._graph, fetches)
        feed_tensors, feed_values = self._convert_feeds(feed_dict)
        sp = self._master.plan_for(feed_tensors, mapper.tensors, mapper.targets)
        plan = compile_plan(
            sp.ops, sp.placement.device_of, feed_tensors, mapper.tensors, sp.graph_version,
            optimization=sp.optimization,
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
                try:
                    values.append(feed_converter(t)(v))
                except ValueError as e:
                    raise ValueError(str(e) + _feed_advice(t)) from None
        return tensors, values


def _caller() -> str:
    """' (at Cell In[4], line 2)': the user's line that called into the session."""
    frames = user_traceback(limit=1)
    return f" (at {frames[0]})" if frames else ""


def _closed_advice() -> str:
    return (
        _caller() + " A session is closed by sess.close() or when its `with tf.Session() as "
        "sess:` block ends: run inside the block, or open a new session (the variables of a "
        "closed local session are gone: run the initializer or restore a checkpoint again)."
    )


def _feed_advice(t: Tensor) -> str:
    """Where the fed tensor was made and what value it takes (a feed's shape and dtype
    must agree with the placeholder's; NumPy converts the rest)."""
    where = t.op.defined_at()
    return (
        (f" ('{t.op.name}' defined at {where})" if where else "") + _caller().replace(" (at", " (fed at", 1)
        + f". Feed it a value of shape {t.shape} and dtype {t.dtype.name}, e.g. "
        + (f"np.asarray(value, np.{t.dtype.name})" if t.dtype.name != "string"
           else "np.asarray(value, object)  # bytes or str")
        + (".reshape(...)" if t.shape.rank is not None else "") + ", or change the placeholder's"
        " shape (None for a dimension that varies) or dtype."
    )


# --- targets ------------------------------------------------------------------------
# Who turns a Session target ("tcp://host:port", a cluster object) into tasks: the
# cluster layer above (flowlab.distributed) registers itself, so the runtime never
# imports it.
_target_resolvers: list[Callable[[Any], list[Any] | None]] = []


def register_target_resolver(resolve: Callable[[Any], list[Any] | None]) -> None:
    """`resolve(target)` returns the tasks of a target it knows (the session's own
    task first), or None for one it does not."""
    _target_resolvers.append(resolve)


def resolve_target(target: Any) -> list[Any]:
    for resolve in _target_resolvers:
        tasks = resolve(target)
        if tasks is not None:
            return tasks
    raise errors.InvalidArgumentError(
        None, None,
        f"Session target {target!r} is neither '' (this process) nor a cluster: give "
        "tf.Session a flowlab.distributed.LocalCluster or Cluster, a Dask scheduler address "
        "('tcp://host:port'), or a tf.train.Server's `target`.",
    )


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
