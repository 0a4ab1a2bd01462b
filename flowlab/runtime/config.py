"""Session configuration and per-run options, with TensorFlow 1.x's names.

These are plain Python objects shaped like TensorFlow's protocol buffers, so that
`tf.ConfigProto(device_count={"CPU": 4}, allow_soft_placement=True)`,
`config.gpu_options.allow_growth = True` and
`tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=500)` work as
written in TensorFlow programs.
"""

from __future__ import annotations

from typing import Any


class _Message:
    """Keyword-constructed record with defaults; unknown fields are an error."""

    _fields: dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        for k, v in self._fields.items():
            object.__setattr__(self, k, v() if callable(v) else v)
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no field '{key}'")
        object.__setattr__(self, key, value)

    def __repr__(self) -> str:
        set_fields = ", ".join(
            f"{k}={getattr(self, k)!r}" for k, d in self._fields.items()
            if not callable(d) and getattr(self, k) != d
        )
        return f"{type(self).__name__}({set_fields})"


class GPUOptions(_Message):
    _fields = {
        "allow_growth": False,
        "per_process_gpu_memory_fraction": 0.0,
        "visible_device_list": "",
    }


class OptimizerOptions(_Message):
    """The classic graph optimizer's switches (TensorFlow's semantics).

    `opt_level=L1` (the default) turns on constant folding, common subexpression
    elimination and identity removal; `L0` turns them off, and then
    `do_constant_folding` / `do_common_subexpression_elimination` turn each back on.
    `max_folded_constant_in_bytes=0` means 10 MiB.
    """

    L1 = 0
    L0 = -1
    # GlobalJitLevel (global_jit_level); flowlab has no JIT and ignores it.
    DEFAULT = 0
    OFF = -1
    ON_1 = 1
    ON_2 = 2
    _fields = {
        "opt_level": 0,
        "do_constant_folding": False,
        "do_common_subexpression_elimination": False,
        "max_folded_constant_in_bytes": 0,
        "do_function_inlining": False,
        "global_jit_level": 0,
        "cpu_global_jit": False,
    }


class RewriterConfig(_Message):
    """Grappler's switches, as TensorFlow names them.  flowlab has one optimization
    pass; a pass runs only when both this config and `OptimizerOptions` allow it:
    `constant_folding=OFF`, `common_subgraph_elimination=OFF`,
    `dependency_optimization=OFF` (identity removal) or `disable_meta_optimizer=True`
    turn the matching parts off."""

    DEFAULT = 0
    ON = 1
    OFF = 2
    AGGRESSIVE = 3
    _fields = {
        "layout_optimizer": 0,
        "constant_folding": 0,
        "shape_optimization": 0,
        "remapping": 0,
        "common_subgraph_elimination": 0,
        "arithmetic_optimization": 0,
        "dependency_optimization": 0,
        "loop_optimization": 0,
        "function_optimization": 0,
        "debug_stripper": 0,
        "disable_model_pruning": False,
        "pin_to_host_optimization": 0,
        "memory_optimization": 0,
        "disable_meta_optimizer": False,
        "meta_optimizer_iterations": 0,
        "min_graph_nodes": 0,
    }


class GraphOptions(_Message):
    optimizer_options: OptimizerOptions
    rewrite_options: RewriterConfig
    _fields = {
        "optimizer_options": OptimizerOptions,
        "rewrite_options": RewriterConfig,
        "build_cost_model": 0,
        "build_cost_model_after": 0,
        "infer_shapes": False,
        "place_pruned_graph": False,
        "enable_bfloat16_sendrecv": False,
        "enable_recv_scheduling": False,
        "timeline_step": 0,
    }


class ConfigProto(_Message):
    """Session configuration.  `device_count={"CPU": 4}` makes 4 virtual CPU devices.

    Two fields are flowlab's own (TensorFlow has no such fields):
    `placement_strategy` is "first" (TensorFlow's choice: an unconstrained op goes to
    the first feasible device, so everything lands on /cpu:0 when only CPUs exist) or
    "greedy" (the white paper's simulated placement over the cost model, see
    flowlab.runtime.master.placement); `cost_model` is the
    `flowlab.runtime.master.cost_model.CostModel` the greedy strategy uses (None: defaults).

    `device_filters` (TensorFlow's partial device names a session keeps to, such as
    ["/job:ps", "/job:worker/task:0"]) is accepted so that between-graph programs run
    unchanged, and changes no value: a flowlab session contacts only the tasks its
    steps place ops on, so a worker's session never waits for the other workers.
    """

    device_count: dict[str, int]
    allow_soft_placement: bool
    log_device_placement: bool
    inter_op_parallelism_threads: int
    intra_op_parallelism_threads: int
    operation_timeout_in_ms: int
    gpu_options: GPUOptions
    graph_options: GraphOptions
    placement_strategy: str
    cost_model: Any
    device_filters: list[str]

    _fields = {
        "device_count": dict,
        "device_filters": list,
        "allow_soft_placement": False,
        "log_device_placement": False,
        "inter_op_parallelism_threads": 0,
        "intra_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "operation_timeout_in_ms": 0,
        "gpu_options": GPUOptions,
        "graph_options": GraphOptions,
        "isolate_session_state": False,
        "placement_strategy": "first",
        "cost_model": None,
    }


class RunOptions(_Message):
    trace_level: int
    timeout_in_ms: int
    output_partition_graphs: bool
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3
    _fields = {
        "trace_level": 0,
        "timeout_in_ms": 0,
        "inter_op_thread_pool": 0,
        "output_partition_graphs": False,
        "report_tensor_allocations_upon_oom": False,
    }


class AllocationDescription(_Message):
    """Where an output's bytes live: `requested_bytes` is the array's nbytes."""

    requested_bytes: int
    allocated_bytes: int
    allocator_name: str
    allocation_id: int

    _fields = {"requested_bytes": 0, "allocated_bytes": 0, "allocator_name": "", "allocation_id": 0}


class TensorShapeDim(_Message):
    size: int
    name: str
    _fields = {"size": -1, "name": ""}


class TensorShapeProto(_Message):
    """`shape.dim[i].size`, as TensorFlow's TensorShapeProto."""

    dim: list[TensorShapeDim]
    _fields = {"dim": list, "unknown_rank": False}

    def as_tuple(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dim)


class TensorDescription(_Message):
    dtype: Any
    shape: TensorShapeProto
    allocation_description: AllocationDescription
    _fields = {
        "dtype": None,
        "shape": TensorShapeProto,
        "allocation_description": AllocationDescription,
    }


class NodeOutput(_Message):
    slot: int
    tensor_description: TensorDescription
    _fields = {"slot": 0, "tensor_description": TensorDescription}


class NodeExecStats(_Message):
    """One execution of one node.  TensorFlow's fields, times in µs (and ns) of the
    process's monotonic clock (`time.perf_counter_ns`), not the epoch.  flowlab adds
    `op_type`, `inputs` (tensor names, `^op` for control inputs), `dead`, `error`,
    `frame` / `iteration` (loop frames; "" and 0 outside loops), `task`, `step_id`, and
    `attrs` (for `_Send`/`_Recv`: the rendezvous key and the two devices)."""

    node_name: str
    op_type: str
    all_start_micros: int
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    scheduled_micros: int
    all_start_nanos: int
    op_start_rel_nanos: int
    op_end_rel_nanos: int
    all_end_rel_nanos: int
    timeline_label: str
    thread_id: int
    output: list[NodeOutput]
    memory: list[Any]
    inputs: list[str]
    dead: bool
    error: str
    frame: str
    iteration: int
    task: str
    step_id: int
    attrs: dict[str, Any]
    _fields = {
        "node_name": "",
        "op_type": "",
        "all_start_micros": 0,
        "op_start_rel_micros": 0,
        "op_end_rel_micros": 0,
        "all_end_rel_micros": 0,
        "scheduled_micros": 0,
        "all_start_nanos": 0,
        "op_start_rel_nanos": 0,
        "op_end_rel_nanos": 0,
        "all_end_rel_nanos": 0,
        "timeline_label": "",
        "thread_id": 0,
        "output": list,
        "memory": list,
        # flowlab's additions
        "inputs": list,
        "dead": False,
        "error": "",
        "frame": "",
        "iteration": 0,
        "task": "",
        "step_id": 0,
        "attrs": dict,
    }


class DeviceStepStats(_Message):
    device: str
    node_stats: list[NodeExecStats]
    thread_names: dict[int, str]
    _fields = {"device": "", "node_stats": list, "thread_names": dict}


class StepStats(_Message):
    dev_stats: list[DeviceStepStats]
    _fields = {"dev_stats": list}


class RunMetadata(_Message):
    """Filled by `Session.run(..., run_metadata=md)`; `step_stats` under FULL_TRACE."""

    step_stats: StepStats
    partition_graphs: list[Any]
    _fields = {"step_stats": StepStats, "partition_graphs": list, "cost_graph": None}
