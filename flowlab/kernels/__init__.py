"""Kernels by (op type, device type).  Importing this package registers all of them."""

from flowlab.kernels import (
    array_kernels,
    check_kernels,
    checkpoint_kernels,
    control_flow_kernels,
    conv_kernels,
    core_kernels,
    grad_kernels,
    io_kernels,
    math_kernels,
    nn_kernels,
    proximal_kernels,
    queue_kernels,
    random_kernels,
    sendrecv_kernels,
    sequence_kernels,
    slicing_kernels,
    stack_kernels,
    state_kernels,
    tensor_array_kernels,
    training_kernels,
)
