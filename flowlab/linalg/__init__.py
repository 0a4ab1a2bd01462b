"""`tf.linalg`: TensorFlow's linear-algebra namespace over flowlab's builders.

The names follow TensorFlow 2.21's `tf.compat.v1.linalg` (`diag` is the V3 matrix
diagonal, `tensor_diag` the full-tensor Diag; `inv`, `det`, `solve`, `eigh` are the
matrix_* builders).  The LinearOperator classes, logm and sqrtm are not built.
"""

from __future__ import annotations

from flowlab.ops.clip_ops import global_norm, norm
from flowlab.ops.einsum_ops import einsum
from flowlab.ops.linalg_diag import (
    diag as tensor_diag,
)
from flowlab.ops.linalg_diag import (
    diag_part as tensor_diag_part,
)
from flowlab.ops.linalg_diag import (
    matrix_band_part as band_part,
)
from flowlab.ops.linalg_diag import (
    matrix_diag as diag,
)
from flowlab.ops.linalg_diag import (
    matrix_diag_part as diag_part,
)
from flowlab.ops.linalg_diag import (
    matrix_set_diag as set_diag,
)
from flowlab.ops.linalg_expm import matrix_exponential as expm
from flowlab.ops.linalg_lu import lu, lu_matrix_inverse, lu_reconstruct, lu_solve, normalize
from flowlab.ops.linalg_ops import (
    adjoint,
    cholesky,
    cholesky_solve,
    cross,
    logdet,
    lstsq,
    matrix_rank,
    matrix_transpose,
    matvec,
    pinv,
    qr,
    slogdet,
    svd,
    trace,
    triangular_solve,
)
from flowlab.ops.linalg_ops import (
    matrix_determinant as det,
)
from flowlab.ops.linalg_ops import (
    matrix_inverse as inv,
)
from flowlab.ops.linalg_ops import (
    matrix_solve as solve,
)
from flowlab.ops.linalg_ops import (
    self_adjoint_eig as eigh,
)
from flowlab.ops.linalg_ops import (
    self_adjoint_eigvals as eigvalsh,
)
from flowlab.ops.linalg_tridiagonal import tridiagonal_matmul, tridiagonal_solve
from flowlab.ops.math_ops import matmul
from flowlab.ops.nn_impl import l2_normalize
from flowlab.ops.tensordot_ops import eye, tensordot

transpose = matrix_transpose  # tf.linalg.transpose swaps the last two dimensions

__all__ = [
    "adjoint", "band_part", "cholesky", "cholesky_solve", "cross", "det", "diag", "diag_part", "eigh", "eigvalsh",
    "einsum", "expm", "eye", "global_norm", "inv", "l2_normalize", "logdet", "lstsq", "matmul", "matrix_transpose",
    "matrix_rank", "matvec", "norm", "pinv", "qr", "set_diag", "slogdet", "solve", "svd", "tensor_diag", "tensor_diag_part",
    "tensordot", "trace", "transpose", "triangular_solve",
    "lu", "lu_matrix_inverse", "lu_reconstruct", "lu_solve", "normalize", "tridiagonal_matmul", "tridiagonal_solve",
]
