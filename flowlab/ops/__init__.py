"""Op declarations and their Python builders (one module per op family), and their
gradient functions (`*_grad.py`, loaded by `gradients_impl`)."""

from flowlab.ops import (
    array_ops,
    check_ops,
    const_fold,
    control_flow_ops,
    conv_ops,
    core_ops,
    data_flow_ops,
    gradient_registry,
    init_ops,
    io_checkpoint_ops,
    io_ops,
    math_ops,
    nn_ops,
    operators,
    random_ops,
    sendrecv_ops,
    sequence_ops,
    stack_ops,
    state_ops,
    tensor_array_ops,
    training_ops,
    variable_scope,
    variables,
)
