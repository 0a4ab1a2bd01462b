"""`tf.train.SyncReplicasOptimizer`: synchronous replication from graph primitives
(paper section 4.4).

Built as TensorFlow 1.x builds it, from flowlab's own ops:

- one accumulator per trained variable, on the variable's device, shared under
  "<var name>/grad_accum": a ConditionalAccumulator for a dense gradient, a
  SparseConditionalAccumulator for an IndexedSlices one;
- a local variable "sync_rep_local_step" per replica (a graph), the global step the
  replica's gradients were computed at: accumulators drop gradients older than their
  own global step, so the n - m slowest of n replicas (backup workers) are absorbed;
- a token queue "sync_token_q" (shared) on the global step's device.

A replica's train op applies its gradients to the accumulators, then dequeues a token
(the barrier) and stores it in its local step.  The chief runs, in a queue runner, the
sync op: take `replicas_to_aggregate` gradients from every accumulator, apply their
average with the wrapped optimizer (incrementing the global step), then enqueue
`max(total_num_replicas, replicas_to_aggregate)` tokens holding the new global step.
`make_session_run_hook(is_chief)` runs the chief's init (accumulators' global steps,
initial tokens) and starts the queue runner when a session is created.
"""

from __future__ import annotations

import logging
from typing import Any

from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.kernels import accumulator_kernels as _accumulator_kernels  # noqa: F401 (registers the kernels)
from flowlab.ops import array_ops, core_ops, state_ops
from flowlab.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from flowlab.ops.data_flow_ops import FIFOQueue
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.ops.variables import Variable, global_variables, report_uninitialized_variables
from flowlab.train import stragglers  # noqa: F401 (see below)
from flowlab.train.optimizer import Optimizer
from flowlab.train.queue_runner import QueueRunner
from flowlab.train.session_run_hook import SessionRunHook

# `stragglers` (flowlab's own: delays injected into workers' steps, to study this
# optimizer's backup workers) loads with it, so `tf.train.stragglers` is there wherever
# `tf.train.SyncReplicasOptimizer` is.

__all__ = ["SyncReplicasOptimizer"]

_log = logging.getLogger(__name__)


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the gradients of `replicas_to_aggregate` replicas per update and
    applies their average with `opt`; stale gradients are dropped."""

    def __init__(self, opt: Any, replicas_to_aggregate: int, total_num_replicas: int | None = None,
                 variable_averages: Any = None, variables_to_average: Any = None,
                 use_locking: bool = False, name: str = "sync_replicas") -> None:
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        _log.info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
                  replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step: Any = None
        self._sync_token_queue: Any = None
        self._chief_queue_runner: Any = None
        self._accumulator_list: list[tuple[Any, str]] = []

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's compute_gradients (aggregation happens in
        apply_gradients, so per-replica clipping still works)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: str | None = None) -> Any:
        """Builds the accumulators, the token queue and the chief's sync op; returns
        the replica's train op (apply gradients, then wait for a token)."""
        grads_and_vars = list(grads_and_vars) if grads_and_vars is not None else []
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        g = get_default_graph()
        train_ops = []
        aggregated_grad: list[Any] = []
        var_list = []

        local_anchor = core_ops.no_op()
        with g.colocate_with(local_anchor):
            self._local_step = Variable(
                initial_value=0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

        with g.name_scope(self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with g.device(var.device):
                    if grad is None:
                        aggregated_grad.append(None)  # passed through
                        continue
                    if isinstance(grad, Tensor):
                        grad_accum: Any = ConditionalAccumulator(
                            grad.dtype, shape=var.get_shape(), shared_name=var.name + "/grad_accum")
                        train_ops.append(grad_accum.apply_grad(grad, local_step=self._local_step))
                        aggregated_grad.append(grad_accum.take_grad(self._replicas_to_aggregate))
                    else:
                        if not isinstance(grad, IndexedSlices):
                            raise ValueError("Unknown grad type!")
                        grad_accum = SparseConditionalAccumulator(
                            grad.dtype, shape=(), shared_name=var.name + "/grad_accum")
                        train_ops.append(grad_accum.apply_indexed_slices_grad(
                            grad, local_step=self._local_step))
                        aggregated_grad.append(grad_accum.take_indexed_slices_grad(
                            self._replicas_to_aggregate))
                    self._accumulator_list.append((grad_accum, var.device))

            aggregated_grads_and_vars = zip(aggregated_grad, var_list)
            with g.device(global_step.device), g.name_scope(""):
                update_op = self._opt.apply_gradients(aggregated_grads_and_vars, global_step)
            with g.device(global_step.device), g.name_scope(""):
                # shapes=[()]: one scalar component (TensorFlow also reads `shapes=()` so;
                # flowlab's FIFOQueue takes `()` as "no shapes").
                sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=[()],
                                             name="sync_token_q", shared_name="sync_token_q")
                self._sync_token_queue = sync_token_queue
            with g.device(global_step.device), g.name_scope(""):
                with g.control_dependencies(train_ops):
                    token = sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with g.control_dependencies([update_op]):
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with g.control_dependencies([sync_op]), g.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = QueueRunner(sync_token_queue, [sync_op])
            for accum, dev in self._accumulator_list:
                with g.device(dev):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = core_ops.group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner the chief runs: aggregate, apply, increment the global
        step, hand out tokens.  Only after apply_gradients()."""
        if self._gradients_applied is False:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def variables(self) -> list[Any]:
        """The wrapped optimizer's variables (not the local step)."""
        return self._opt.variables()

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._opt.get_slot_names(*args, **kwargs)

    def get_init_tokens_op(self, num_tokens: int = -1) -> Any:
        """The op filling the token queue at the start (num_tokens=-1:
        replicas_to_aggregate of them), so that the first step can proceed."""
        if self._gradients_applied is False:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(
                f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                f"{tokens_needed} (needed)")
        g = get_default_graph()
        if num_tokens > 0:
            with g.device(self._global_step.device), g.name_scope(""):
                tokens = array_ops.fill([num_tokens], self._global_step)
                return self._sync_token_queue.enqueue_many((tokens,))
        return core_ops.no_op(name="no_init_tokens")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """A hook running the init ops (and, on the chief, the init tokens and the
        chief queue runner) when a session is created."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int) -> None:
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self._local_init_op: Any = None
        self._q_runner: QueueRunner | None = None
        self._init_tokens_op: Any = None

    def begin(self) -> None:
        opt = self._sync_optimizer
        if opt._gradients_applied is False:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session: Any, coord: Any) -> None:
        names = session.run(self._ready_for_local_init_op)
        if names is not None and len(names):
            msg = "Variables not initialized: " + ", ".join(
                n.decode() if isinstance(n, bytes) else str(n) for n in names)
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                f"Init op: {self._local_init_op.name}, error: {msg}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
