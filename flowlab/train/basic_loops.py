"""`tf.train.basic_train_loop`: the simplest loop over a Supervisor's session."""

from __future__ import annotations

from typing import Any

from flowlab import errors

__all__ = ["basic_train_loop"]


def basic_train_loop(supervisor: Any, train_step_fn: Any, args: Any = None, kwargs: Any = None,
                     master: str = "") -> None:
    """Call `train_step_fn(sess, *args, **kwargs)` until `supervisor` says stop, in
    a session of its `managed_session(master)`; a new session after AbortedError
    (a server of the cluster restarted), as TensorFlow's does."""
    args = list(args or [])
    kwargs = dict(kwargs or {})
    while True:
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
            return
        except errors.AbortedError:
            continue
