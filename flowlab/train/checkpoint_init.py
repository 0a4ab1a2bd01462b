"""Reading variables' starting values from a checkpoint: `tf.train.init_from_checkpoint`
(each mapped variable's initializer becomes an assign of a RestoreV2 of its tensor, so
the usual `global_variables_initializer()` loads it) and `tf.train.checkpoints_iterator`
(yields each new checkpoint of a directory as it appears, until a timeout).

The assignment map is TensorFlow's: {"ckpt/name": variable or "var/name"} one to one,
{"ckpt_scope/": "scope/"} for every variable of a scope ("/" for the root), sorted by
checkpoint name.  Partitioned variables are not handled here.
"""

from __future__ import annotations

import collections.abc
import os
import time
from collections.abc import Iterator
from typing import Any

from flowlab.platform import tf_logging as logging

__all__ = ["init_from_checkpoint", "checkpoints_iterator"]


def _checkpoint_file(ckpt_dir_or_file: str) -> str:
    from flowlab.train.checkpoint_management import latest_checkpoint

    if os.path.isdir(ckpt_dir_or_file):
        found = latest_checkpoint(ckpt_dir_or_file)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
        return found
    return ckpt_dir_or_file


def _set_initializer(variable: Any, ckpt_file: str, tensor_name: str) -> None:
    from flowlab.graph.graph import get_default_graph
    from flowlab.ops import state_ops
    from flowlab.ops.io_checkpoint_ops import restore_v2

    g = get_default_graph()
    with g.device(variable.device), g.device("/cpu:0"):
        restored = restore_v2(ckpt_file, [tensor_name], [""], [variable.dtype.base_dtype],
                              name="checkpoint_initializer")[0]
    restored.set_shape(variable.shape)
    variable._initializer_op = state_ops.assign(variable, restored).op
    variable._initial_value = restored


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: Any) -> None:
    """Make the mapped variables' initializers load them from the checkpoint.

    Raises:
      ValueError: a tensor missing from the checkpoint, a shape mismatch, or a scope
        mapped to a name without the trailing "/".
    """
    from flowlab.graph.tensor_shape import TensorShape
    from flowlab.ops.variable_scope import _variable_store
    from flowlab.ops.variables import Variable
    from flowlab.train.checkpoint_management import load_checkpoint

    ckpt_file = _checkpoint_file(ckpt_dir_or_file)
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    pairs = assignment_map.items() if isinstance(assignment_map, collections.abc.Mapping) else assignment_map
    store_vars = _variable_store()._vars
    for tensor_name, current in sorted(pairs, key=lambda p: p[0]):
        var = current if isinstance(current, Variable) else store_vars.get(current)
        if var is not None:
            if tensor_name not in variable_map:
                raise ValueError(f"Tensor {tensor_name} is not found in {ckpt_dir_or_file} checkpoint {variable_map}")
            if not var.shape.is_compatible_with(TensorShape(variable_map[tensor_name])):
                raise ValueError(f"Shape of variable {var.name} ({var.shape}) doesn't match with shape of tensor "
                                 f"{tensor_name} ({variable_map[tensor_name]}) from checkpoint reader.")
            _set_initializer(var, ckpt_file, tensor_name)
            continue
        scopes = current[:current.rindex("/")] if "/" in current else ""
        if not tensor_name.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scopes} should map to scope only "
                             f"{tensor_name}. Should be 'scope/': 'other_scope/'.")
        names = sorted(n for n in store_vars if not scopes or n.startswith(scopes + "/"))
        for var_name in names:
            full = var_name[len(scopes):]
            if current != "/":
                full = full[1:]
            if tensor_name != "/":
                full = tensor_name + full
            full = full[:-1] if full.endswith("/") else full
            if full not in variable_map:
                raise ValueError(f"Tensor {full} ({var_name[len(scopes) + 1:]} in {tensor_name}) is not found in "
                                 f"{ckpt_dir_or_file} checkpoint")
            _set_initializer(store_vars[var_name], ckpt_file, full)


def _wait_for_new_checkpoint(checkpoint_dir: str, last: str | None, seconds_to_sleep: float = 1,
                             timeout: float | None = None) -> str | None:
    from flowlab.train.checkpoint_management import latest_checkpoint

    logging.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is None or path == last:
            if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
                return None
            time.sleep(seconds_to_sleep)
        else:
            logging.info("Found new checkpoint at %s", path)
            return path


def checkpoints_iterator(checkpoint_dir: str, min_interval_secs: float = 0, timeout: float | None = None,
                         timeout_fn: Any = None) -> Iterator[str]:
    """Each new latest checkpoint of `checkpoint_dir`; stops after `timeout` seconds
    without one unless `timeout_fn()` says more may come."""
    path: str | None = None
    while True:
        new = _wait_for_new_checkpoint(checkpoint_dir, path, timeout=timeout)
        if new is None:
            if not timeout_fn:
                logging.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        path = new
        yield path
        wait = start + min_interval_secs - time.time()
        if wait > 0:
            time.sleep(wait)
