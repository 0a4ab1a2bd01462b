"""`tf.nn`: activations, losses and layers built from ops.

The ops with kernels come from `flowlab.ops.nn_ops`, the functions TensorFlow composes
from other ops from `flowlab.ops.nn_impl`.  TensorFlow 1.x also exposes a few math ops
here (`tf.nn.sigmoid`, `tf.nn.tanh`); they are the same functions as `tf.sigmoid` and
`tf.tanh`.
"""

from flowlab.nn import rnn_cell  # noqa: E402  (`tf.nn.rnn_cell.BasicLSTMCell`, ...)
from flowlab.nn.bidirectional_rnn import static_bidirectional_rnn  # noqa: F401,E402
from flowlab.nn.raw_rnn import *  # noqa: F401,F403,E402  (raw_rnn)
from flowlab.nn.rnn import *  # noqa: F401,F403,E402  (static_rnn, dynamic_rnn)
from flowlab.ops.batch_norm import *  # noqa: F401,F403,E402  (fused_batch_norm)
from flowlab.ops.candidate_sampling_ops import *  # noqa: F401,F403,E402  (log_uniform_candidate_sampler, ...)
from flowlab.ops.conv3d_ops import *  # noqa: F401,F403,E402  (conv3d)
from flowlab.ops.conv_ops import *  # noqa: F401,F403,E402  (registers conv kernels and gradients)
from flowlab.ops.convolution_ops import *  # noqa: F401,F403,E402  (convolution, atrous_conv2d, pool)
from flowlab.ops.ctc_decoder_ops import ctc_greedy_decoder  # noqa: F401,E402
from flowlab.ops.ctc_ops import collapse_repeated, ctc_unique_labels  # noqa: F401,E402
from flowlab.ops.depth_space_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401,E402
from flowlab.ops.depthwise_conv_ops import *  # noqa: F401,F403,E402  (depthwise_conv2d, separable_conv2d)
from flowlab.ops.embedding_ops import *  # noqa: F401,F403,E402  (embedding_lookup)
from flowlab.ops.embedding_sparse import *  # noqa: F401,F403,E402  (embedding_lookup_sparse, safe_...)
from flowlab.ops.lrn_ops import *  # noqa: F401,F403,E402  (lrn, local_response_normalization)
from flowlab.ops.math_composites import zero_fraction  # noqa: F401,E402
from flowlab.ops.math_ops import sigmoid, tanh  # noqa: F401
from flowlab.ops.morphology_ops import *  # noqa: F401,F403,E402  (dilation2d, erosion2d)
from flowlab.ops.nn_impl import *  # noqa: F401,F403
from flowlab.ops.nn_moments import *  # noqa: F401,F403,E402  (sufficient_statistics, weighted_moments)
from flowlab.ops.nn_ops import *  # noqa: F401,F403
from flowlab.ops.pool3d_ops import *  # noqa: F401,F403,E402  (max_pool3d, avg_pool3d)
from flowlab.ops.pool_transpose_ops import *  # noqa: F401,F403,E402  (max_pool2d, conv3d_transpose, ...)
from flowlab.ops.replica_losses import *  # noqa: F401,F403,E402  (compute_average_loss, ...)
from flowlab.ops.sampled_losses import *  # noqa: F401,F403,E402  (nce_loss, sampled_softmax_loss)
from flowlab.ops.space_to_batch_ops import batch_to_space_nd, space_to_batch_nd, with_space_to_batch  # noqa: F401,E402
