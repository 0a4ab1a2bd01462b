"""`tf.train`: optimizers, savers, input pipelines (filled by later work)."""

from flowlab.graph.graph_def_pb import write_graph  # TensorFlow's GraphDef proto, text or binary
from flowlab.summary.summary_iterator import summary_iterator  # reads event files back

__all__ = ["summary_iterator", "write_graph"]

# Queues and input pipelines (issue 6).  Importing the kernels registers them.
from flowlab.kernels import io_kernels as _io_kernels  # noqa: E402,F401
from flowlab.kernels import queue_kernels as _queue_kernels  # noqa: E402,F401
from flowlab.train.coordinator import Coordinator, LooperThread  # noqa: E402
from flowlab.train.input import (  # noqa: E402
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from flowlab.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners  # noqa: E402

__all__ += [
    "Coordinator", "LooperThread", "QueueRunner", "add_queue_runner", "start_queue_runners",
    "batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once", "range_input_producer",
    "shuffle_batch", "shuffle_batch_join", "slice_input_producer", "string_input_producer",
]
from flowlab.train.saver import *  # noqa: E402,F401,F403
from flowlab.train.saver import __all__ as _saver_all  # noqa: E402

__all__ += _saver_all

# Optimizers, learning-rate schedules and the global step (issue 3).
from flowlab.kernels import training_kernels as _training_kernels  # noqa: E402,F401
from flowlab.train.adadelta import AdadeltaOptimizer  # noqa: E402
from flowlab.train.adagrad import AdagradOptimizer  # noqa: E402
from flowlab.train.adam import AdamOptimizer  # noqa: E402
from flowlab.train.gradient_descent import GradientDescentOptimizer  # noqa: E402
from flowlab.train.learning_rate_decay import *  # noqa: E402,F401,F403
from flowlab.train.learning_rate_decay import __all__ as _lrd_all  # noqa: E402
from flowlab.train.momentum import MomentumOptimizer  # noqa: E402
from flowlab.train.moving_averages import ExponentialMovingAverage  # noqa: E402
from flowlab.train.optimizer import Optimizer  # noqa: E402
from flowlab.train.rmsprop import RMSPropOptimizer  # noqa: E402
from flowlab.train.training_util import *  # noqa: E402,F401,F403
from flowlab.train.training_util import __all__ as _tu_all  # noqa: E402

__all__ += ["AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "ExponentialMovingAverage",
            "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "RMSPropOptimizer", *_lrd_all, *_tu_all]
from flowlab.train.lbfgs import LBFGSOptimizer  # noqa: E402,F401  (flowlab's graph L-BFGS)

__all__ += ["LBFGSOptimizer"]
from flowlab.train.basic_session_run_hooks import *  # noqa: E402,F401,F403
from flowlab.train.basic_session_run_hooks import __all__ as _hooks_all  # noqa: E402
from flowlab.train.checkpoint_init import checkpoints_iterator, init_from_checkpoint  # noqa: E402,F401
from flowlab.train.monitored_session import *  # noqa: E402,F401,F403
from flowlab.train.monitored_session import __all__ as _monitored_all  # noqa: E402
from flowlab.train.session_run_hook import *  # noqa: E402,F401,F403
from flowlab.train.session_run_hook import __all__ as _hook_all  # noqa: E402

__all__ += [*_hooks_all, *_monitored_all, *_hook_all, "checkpoints_iterator", "init_from_checkpoint"]
piecewise_constant_decay = piecewise_constant  # noqa: F405 - TensorFlow exports this one function under both names
__all__ += ["piecewise_constant_decay"]

# The proximal family (FTRL, proximal GD/Adagrad, Adagrad dual averaging).
from flowlab.kernels import proximal_kernels as _proximal_kernels  # noqa: E402,F401
from flowlab.train.adagrad_da import AdagradDAOptimizer  # noqa: E402
from flowlab.train.ftrl import FtrlOptimizer  # noqa: E402
from flowlab.train.proximal_adagrad import ProximalAdagradOptimizer  # noqa: E402
from flowlab.train.proximal_gradient_descent import ProximalGradientDescentOptimizer  # noqa: E402

__all__ += ["AdagradDAOptimizer", "FtrlOptimizer", "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer"]

# `tf.train.Example` and its parts: protobuf messages wire-compatible with TensorFlow's.
from flowlab.kernels.example_proto import (  # noqa: E402
    BytesList,
    Example,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
    SequenceExample,
)

__all__ += ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features",
            "FloatList", "Int64List", "SequenceExample"]

# Clusters (flowlab.distributed): a process as one task; variables on ps tasks.
from flowlab.distributed.cluster_spec import ClusterSpec  # noqa: E402
from flowlab.distributed.server import Server  # noqa: E402
from flowlab.train.device_setter import replica_device_setter  # noqa: E402

__all__ += ["ClusterSpec", "Server", "replica_device_setter"]

# Synchronous replication (paper section 4.4): accumulators and SyncReplicasOptimizer.
from flowlab.kernels import accumulator_kernels as _accumulator_kernels  # noqa: E402,F401
from flowlab.train import stragglers  # noqa: E402,F401  (flowlab's own: injected stragglers)
from flowlab.train.sync_replicas_optimizer import SyncReplicasOptimizer  # noqa: E402

__all__ += ["SyncReplicasOptimizer"]

# The older training wrapper the classic distributed scripts use.
from flowlab.train.basic_loops import basic_train_loop  # noqa: E402
from flowlab.train.supervisor import Supervisor  # noqa: E402

__all__ += ["Supervisor", "basic_train_loop"]
