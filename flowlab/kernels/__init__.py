"""Kernels by (op type, device type).  Importing this package registers all of them."""

from flowlab.kernels import (  # noqa: F401
    array_kernels,
    core_kernels,
    io_kernels,
    math_kernels,
    nn_kernels,
    queue_kernels,
    random_kernels,
    state_kernels,
)
