"""Op declarations and their Python builders (one module per op family)."""

from flowlab.ops import (  # noqa: F401
    array_ops,
    core_ops,
    init_ops,
    math_ops,
    nn_ops,
    operators,
    random_ops,
    state_ops,
    variable_scope,
    variables,
)
from flowlab.ops import const_fold, gradient_registry  # noqa: F401,E402
