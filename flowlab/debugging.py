"""`tf.debugging`: the run-time checks (Assert, check_numerics, assert_*)."""

from flowlab.ops.check_ops import *  # noqa: F401,F403
from flowlab.ops.check_ops import __all__  # noqa: F401
