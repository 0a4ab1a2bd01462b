"""Step-by-step execution of a step: the Stepper, its breakpoints and tensor watches.

`flowlab.debug.Stepper(sess, fetches, feed_dict)` runs one step op by op on the real
executor (see `flowlab.debug.stepper`): `step()`, `step(n)`, `continue_()`,
`run_to("scope/op")`, breakpoints by name, scope, type or predicate, `ready()`,
`value("op:0")`, `dead()`, `frame()`, watches, `stop_on_nan_or_inf`, `abort()` and
`result()`.  Its text repr says what ran, what is ready, and where it stopped and why.
A step on several devices is stepped partition by partition (`ready_by_device()`,
`step(device=...)`, `waiting()`: a Recv is ready once its Send ran).
"""

from flowlab.debug.stepper import DEAD, Stepper, Stop, Watch, has_nan_or_inf

__all__ = ["Stepper", "Stop", "Watch", "DEAD", "has_nan_or_inf"]
