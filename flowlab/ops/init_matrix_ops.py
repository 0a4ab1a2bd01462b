"""Matrix initializers of TensorFlow 1.x: `tf.orthogonal_initializer` /
`tf.initializers.orthogonal` (the Q of a QR factorization of a seeded normal matrix,
its columns' signs fixed by R's diagonal, times `gain`; shapes of rank > 2 are
flattened to [prod(shape[:-1]), shape[-1]]) and `tf.initializers.identity` (gain * I,
2-D only).  Built from the same ops as TensorFlow's, so a seed gives TensorFlow's
values."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.init_ops import Initializer, _float_dtype

__all__ = ["Orthogonal", "Identity", "orthogonal_initializer"]


class Orthogonal(Initializer):
    """An orthogonal matrix (or a reshaped one), times `gain`."""

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.linalg_diag import diag_part
        from flowlab.ops.linalg_ops import matrix_transpose, qr
        from flowlab.ops.random_ops import random_normal

        dt = _float_dtype(dtype) if dtype is not None else self.dtype
        shape = TensorShape(shape).as_list()
        if len(shape) < 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must be at least "
                             f"two-dimensional. Received shape={shape}")
        rows = 1
        for d in shape[:-1]:
            rows *= d
        cols = int(shape[-1])
        flat = (cols, rows) if rows < cols else (rows, cols)
        a = random_normal(flat, dtype=dt, seed=self.seed)
        q, r = qr(a, full_matrices=False)
        q = q * math_ops.sign(diag_part(r))
        if rows < cols:
            q = matrix_transpose(q)
        return self.gain * array_ops.reshape(q, shape)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """gain * the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0, dtype: Any = dtypes.float32) -> None:
        self.gain = gain
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.tensordot_ops import eye

        full = TensorShape(shape).as_list()
        if len(full) != 2:
            # TensorFlow 2.21's message (its wording predates the 2-D-only check).
            raise ValueError("The tensor to initialize, specified by argument `shape` must be at least "
                             f"two-dimensional. Received shape={full}")
        dt = _float_dtype(dtype) if dtype is not None else self.dtype
        return self.gain * eye(*full, dtype=dt)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


orthogonal_initializer = Orthogonal
