"""Op declarations and their Python builders (one module per op family)."""

from flowlab.ops import (  # noqa: F401  # noqa: F401,E402
    array_ops,
    const_fold,
    core_ops,
    gradient_registry,
    init_ops,
    math_ops,
    nn_ops,
    operators,
    random_ops,
    state_ops,
    variable_scope,
    variables,
)
