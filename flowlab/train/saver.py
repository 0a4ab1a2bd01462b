"""`tf.train.Saver`: save and restore variables through SaveV2/RestoreV2 ops.

The paper's section 4.3: checkpointing is built from graph ops.  A Saver adds to the
graph, under a name scope "save" (then "save_1", ...), the same ops as TensorFlow:

    save/filename/input, save/filename, save/Const    the checkpoint prefix (fed)
    save/SaveV2 (+ tensor_names, shape_and_slices)     writes the variables' values
    save/control_dependency                            the prefix, after the write
    save/RestoreV2, save/Assign, save/Assign_1, ...    reads and assigns them
    save/restore_all                                   groups the assigns

With `sharded=True` (TensorFlow's default is False, whatever the devices) there is one
SaveV2 per device of the variables, placed on that device and writing that device's variables to a part
checkpoint, then one MergeV2Checkpoints combines the parts into
`<prefix>.data-0000i-of-0000n` + `<prefix>.index`; restore has one RestoreV2 per
device.  The files are flowlab.kernels.checkpoint_format's (no pickle; checksums).

Fault tolerance (docs/notes/checkpoints.md): a save is atomic whatever the path
(flowlab.kernels.checkpoint_commit): new files under fresh names, one rename of the
index as the switch, under the directory's lock, so the newest complete checkpoint
restores at every instant and two saves to one path take turns.  The `checkpoint`
state file (TensorFlow's text format) is rewritten, also atomically and under the
same lock, only after the checkpoint is complete; old checkpoints are deleted after
that.  A process killed at any point leaves `latest_checkpoint(dir)` naming a
complete checkpoint, and the next save removes what it left.  A sharded save writes
its parts to a fresh `<prefix>_temp_<random>/` that `save` holds (its `.live` file
locked) until the merge is done.  A restore is one step whose Assign writes go
through the step's undo log: if any tensor is missing (NotFoundError) or corrupt
(DataLossError), no variable changes.

Meta graphs (`<prefix>.meta`, JSON) are flowlab.train.meta_graph's.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from tensorboard.compat.proto.saver_pb2 import SaverDef

import flowlab.kernels.checkpoint_kernels  # noqa: F401  (registers the checkpoint kernels)
from flowlab import errors
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels import checkpoint_commit as commit
from flowlab.kernels import checkpoint_format as fmt
from flowlab.ops import io_checkpoint_ops as io
from flowlab.ops.array_ops import stack
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import group, identity, placeholder_with_default
from flowlab.ops.partitioned_variables import PartitionedVariable
from flowlab.ops.slice_spec import SaveSliceInfo
from flowlab.ops.state_ops import assign
from flowlab.ops.variables import Variable
from flowlab.train.checkpoint_management import *  # noqa: F403
from flowlab.train.checkpoint_management import __all__ as _management_all
from flowlab.train.checkpoint_management import (
    checkpoint_exists,
    meta_graph_filename,
    update_checkpoint_state,
)
from flowlab.train.meta_graph import export_meta_graph, import_meta_graph

__all__ = [
    "Saver", "SaverDef", "SaveSliceInfo", "export_meta_graph", "import_meta_graph",
    *_management_all,
]


@dataclass
class _Saveable:
    name: str  # the tensor name in the checkpoint
    var: Any  # a Variable (or a VariableV2 ref tensor)
    spec: str  # shape_and_slices entry ("": the whole tensor)

    @property
    def ref(self) -> Tensor:
        return self.var._ref() if isinstance(self.var, Variable) else self.var

    @property
    def saved(self) -> Tensor:
        """What SaveV2 reads: as TensorFlow, a slice's snapshot ("<shard>/read"), a
        whole variable's reference."""
        return self.var.value() if self.spec and isinstance(self.var, Variable) else self.ref

    @property
    def device(self) -> str:
        d = self.ref.device or ""
        return DeviceSpec.from_string(d).to_string() if d else ""


def _sharded_temp_of(saver_def: SaverDef) -> str:
    """The name of the sharded save's part-prefix placeholder (`<scope>/sharded_temp:0`,
    beside the filename tensor in the Saver's name scope), or "" when the default graph
    has none: a saver def TensorFlow built, whose parts go to `<prefix>_temp/` as there."""
    if not saver_def.sharded or "/" not in saver_def.filename_tensor_name:
        return ""
    name = saver_def.filename_tensor_name.rsplit("/", 1)[0] + "/sharded_temp"
    try:
        op = get_default_graph().get_operation_by_name(name)
    except KeyError:
        return ""
    return f"{name}:0" if op.type == "PlaceholderWithDefault" else ""


def _op_name(v: Any) -> str:
    return v.op.name


def _saveables(var_list: Any) -> list[_Saveable]:
    """Checkpoint names for `var_list` (list: the variables' names, or their
    save_slice_info full name; dict: its keys), sorted by name as TensorFlow."""
    if var_list is None:
        g = get_default_graph()
        var_list = g.get_collection(GraphKeys.GLOBAL_VARIABLES) + g.get_collection(
            GraphKeys.SAVEABLE_OBJECTS if hasattr(GraphKeys, "SAVEABLE_OBJECTS") else "saveable_objects"
        )
    items: list[tuple[str, Any, bool]] = []  # (checkpoint name, variable, saved as a slice)
    if isinstance(var_list, dict):
        for key, v in var_list.items():
            if isinstance(v, (list, tuple, PartitionedVariable)):
                items.extend((key, part, True) for part in _checked_slices(list(v)))
            else:  # one variable is saved whole under the key, slice info or not (as TF)
                items.append((key, v, False))
    else:
        if not isinstance(var_list, (list, tuple, set)):
            var_list = [var_list]
        # As TensorFlow: by name (so shard part_10 comes before part_2), a
        # PartitionedVariable as its shards in offset order, slices of one tensor
        # under its full name.
        for v in sorted(var_list, key=lambda x: str(getattr(x, "name", ""))):
            if isinstance(v, PartitionedVariable):
                items.extend((v.name, part, True) for part in v)
                continue
            info = v._get_save_slice_info() if isinstance(v, Variable) else None
            if info is not None:
                items.append((info.full_name, v, True))
            else:
                items.append((_checked(v).op.name, v, False))
    out: list[_Saveable] = []
    seen: dict[str, bool] = {}
    seen_vars: set[int] = set()
    for name, v, sliced in items:
        _checked(v)
        if id(v) in seen_vars and name not in seen:
            raise ValueError(f"The same saveable will be restored with two names: {name}")
        seen_vars.add(id(v))
        if name in seen and not (seen[name] and sliced):
            raise ValueError(f"At least two variables have the same name: {name}")
        seen[name] = sliced
        out.append(_Saveable(name, v, v._get_save_slice_info().spec if sliced else ""))
    out.sort(key=lambda s: s.name)
    return out


def _checked_slices(parts: list[Any]) -> list[Any]:
    """The shards of one saved tensor, checked as TensorFlow checks a dict value."""
    full_name = None
    for v in parts:
        if not isinstance(v, Variable):
            raise ValueError(f"Slices must all be Variables: {v}")
        info = v._get_save_slice_info()
        if not info:
            raise ValueError(f"Slices must all be slices: {v}")
        if full_name is None:
            full_name = info.full_name
        elif full_name != info.full_name:
            raise ValueError(f"Slices must all be from the same tensor: {full_name} != {info.full_name}")
    return parts


def _checked(v: Any) -> Any:
    if isinstance(v, Variable):
        return v
    if isinstance(v, Tensor) and v.dtype.is_ref_dtype:
        return v
    raise TypeError(
        f"Variable to save is not a Variable: {v!r}. Pass tf.Variable objects (or a dict "
        "of name -> Variable) as var_list."
    )


class Saver:
    """Saves and restores variables (`tf.train.Saver`).

        saver = tf.train.Saver(max_to_keep=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, "/tmp/run/model.ckpt", global_step=100)
            saver.restore(sess, tf.train.latest_checkpoint("/tmp/run"))

    `var_list`: None (all global variables), a list of variables (saved under their
    names; a PartitionedVariable or a shard under its full name, one slice per
    shard) or a dict name -> variable (or -> a PartitionedVariable or list of slices
    of one).  A checkpoint saved with one sharding restores into another.
    """

    def __init__(
        self, var_list: Any = None, reshape: bool = False, sharded: bool = False,
        max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None, restore_sequentially: bool = False,
        saver_def: SaverDef | None = None, builder: Any = None, defer_build: bool = False,
        allow_empty: bool = False, write_version: int = 2, pad_step_number: bool = False,
        save_relative_paths: bool = False, filename: str | None = None,
    ) -> None:
        del reshape, restore_sequentially, builder, write_version
        if defer_build and var_list is not None:
            raise ValueError(
                "If `var_list` is provided then build cannot be deferred. Either set "
                "defer_build=False or var_list=None."
            )
        self._var_list = var_list
        self._sharded = sharded
        self._max_to_keep = max_to_keep or 0
        self._keep_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        self._is_empty = False
        self.saver_def: SaverDef | None = saver_def
        # flowlab's: the sharded save's part-directory prefix, fed a fresh one per save
        # (no field of TensorFlow's SaverDef: found in the graph by its name).
        self._sharded_temp_name = ""
        if saver_def is not None:
            self._max_to_keep = saver_def.max_to_keep
            self._keep_hours = saver_def.keep_checkpoint_every_n_hours
            self._sharded = saver_def.sharded
            self._sharded_temp_name = _sharded_temp_of(saver_def)
        elif not defer_build:
            self.build()

    # --- graph ------------------------------------------------------------------
    def build(self) -> None:
        if self.saver_def is not None or self._is_empty:
            return
        saveables = _saveables(self._var_list)
        if not saveables:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        g = get_default_graph()
        with g.name_scope(self._name or "save") as scope:
            default = constant(self._filename or "model", name="filename/input")
            fn = placeholder_with_default(default, shape=[], name="filename")
            fn = placeholder_with_default(fn, shape=[], name="Const")
            by_device: dict[str, list[_Saveable]] = {}
            for s in saveables:
                by_device.setdefault(s.device, []).append(s)
            # As TensorFlow: one SaveV2/RestoreV2 whatever the devices unless sharded=True.
            sharded = self._sharded
            temp_name = ""
            if sharded:
                save_tensor, temp_name = self._sharded_save(g, fn, by_device)
                restore_ops = [self._restore_group(g, fn, ss, dev, "restore_shard")
                               for dev, ss in sorted(by_device.items())]
            else:
                save = io.save_v2(fn, [s.name for s in saveables], [s.spec for s in saveables],
                                  [s.saved for s in saveables])
                # TF's with_dependencies: the Identity is colocated with the prefix.
                with g.control_dependencies([save]), g.colocate_with(fn.op):
                    save_tensor = identity(fn, name="control_dependency")
                restore_ops = self._assigns(fn, saveables)
            restore_all = group(*restore_ops, name="restore_all")
        self._sharded = sharded
        self.saver_def = SaverDef(
            filename_tensor_name=fn.name, save_tensor_name=save_tensor.name,
            restore_op_name=restore_all.name, max_to_keep=self._max_to_keep, sharded=sharded,
            keep_checkpoint_every_n_hours=self._keep_hours, version=SaverDef.V2,
        )
        self._sharded_temp_name = temp_name
        del scope

    def _sharded_save(self, g: Any, fn: Tensor,
                      by_device: dict[str, list[_Saveable]]) -> tuple[Tensor, str]:
        """One SaveV2 per device into `<prefix>_temp/part-i-of-n` (`save` feeds a
        fresh `<prefix>_temp_<random>/part`), then a merge."""
        tmp = placeholder_with_default(io.string_join([fn, "_temp/part"]), shape=[],
                                       name="sharded_temp")
        n = len(by_device)
        parts, saves = [], []
        for i, (dev, ss) in enumerate(sorted(by_device.items())):
            with g.device(dev):
                part = io.sharded_filename(tmp, i, n)
                saves.append(io.save_v2(part, [s.name for s in ss], [s.spec for s in ss],
                                        [s.saved for s in ss]))
                parts.append(part)
        with g.control_dependencies(saves):
            merge = io.merge_v2_checkpoints(stack(parts), fn, delete_old_dirs=True)
        with g.control_dependencies([merge]):
            return identity(fn, name="control_dependency"), tmp.name

    def _assigns(self, fn: Tensor, ss: list[_Saveable]) -> list[Operation]:
        # TensorFlow's BulkSaverBuilder reads every tensor on CPU 0 (of the shard's
        # device when sharded): the RestoreV2 and its constants ask for "cpu:0".
        with get_default_graph().device("cpu:0"):
            restored = io.restore_v2(fn, [s.name for s in ss], [s.spec for s in ss],
                                     [s.ref.dtype.base_dtype for s in ss])
        ops = []
        for s, t in zip(ss, restored):
            shape = s.ref.shape
            if not s.spec and shape.is_fully_defined():
                t.set_shape(shape)
            ops.append(assign(s.ref, t, validate_shape=shape.is_fully_defined()).op)
        return ops

    def _restore_group(self, g: Any, fn: Tensor, ss: list[_Saveable], dev: str, name: str) -> Operation:
        with g.device(dev):
            return group(*self._assigns(fn, ss), name=name)

    def as_saver_def(self) -> SaverDef | None:
        return self.saver_def

    # --- checkpoints kept -------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints this Saver still keeps, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        self._last_checkpoints = [(p, 0.0) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple[str, float]]) -> None:
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Keep managing `checkpoint_paths` (e.g. after a restart), by file mtime."""
        times = []
        for p in checkpoint_paths:
            idx = fmt.index_filename(p)
            if os.path.exists(idx):
                times.append((p, os.path.getmtime(idx)))
        self.set_last_checkpoints_with_time(times)

    def _record(self, path: str) -> None:
        if self._max_to_keep <= 0:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        while len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _delete_old(self, meta_graph_suffix: str) -> None:
        while self._checkpoints_to_be_deleted:
            path, t = self._checkpoints_to_be_deleted.pop(0)
            if t > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_hours * 3600
                continue
            fmt.remove_checkpoint(path)
            commit.unlink(meta_graph_filename(path, meta_graph_suffix))

    # --- running ----------------------------------------------------------------
    def save(
        self, sess: Any, save_path: str, global_step: Any = None, latest_filename: str | None = None,
        meta_graph_suffix: str = "meta", write_meta_graph: bool = True, write_state: bool = True,
        strip_default_attrs: bool = False, save_debug_info: bool = False,
    ) -> str | None:
        """Save the variables to `save_path` (`-<global_step>` appended); returns the
        checkpoint prefix, or None for an empty Saver."""
        del strip_default_attrs, save_debug_info
        self.build()
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, (int,)) or isinstance(global_step, bool):
                global_step = int(sess.run(global_step)) if isinstance(global_step, (Tensor, Variable)) \
                    else int(global_step)
            fmt_ = "%s-%08d" if self._pad_step_number else "%s-%d"
            checkpoint_file = fmt_ % (save_path, global_step)
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(
                    f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                    f"'{save_path}'"
                )
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; {sess!r}")
        save_dir = os.path.dirname(save_path)
        if self._is_empty:
            return None
        assert self.saver_def is not None
        feeds = {self.saver_def.filename_tensor_name: checkpoint_file}
        part_dir, part_fd = None, None
        if self._sharded_temp_name and os.path.isdir(save_dir or "."):
            # A fresh part directory, held (its `.live` locked) until the merge is done,
            # so that a concurrent save's cleanup leaves it alone.
            part_dir = f"{checkpoint_file}_temp_{uuid.uuid4().hex}"
            part_fd = commit.hold_part_dir(part_dir)
            feeds[self._sharded_temp_name] = os.path.join(part_dir, "part")
        try:
            out = sess.run(self.saver_def.save_tensor_name, feeds)
        except (errors.FailedPreconditionError, errors.NotFoundError) as e:
            if not os.path.isdir(save_dir or "."):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.") from e
            raise
        finally:
            if part_dir is not None and part_fd is not None:
                commit.release_part_dir(part_dir, part_fd)
        model_checkpoint_path = out.decode("utf-8") if isinstance(out, bytes) else str(out)
        # The state file and the meta graph, under the directory's save lock: a
        # concurrent save's cleanup never meets their temporary files.
        with commit.dir_lock(save_dir):
            if write_state:
                self._record(model_checkpoint_path)
                update_checkpoint_state(
                    save_dir, model_checkpoint_path, self.last_checkpoints, latest_filename,
                    save_relative_paths=self._save_relative_paths,
                )
                self._delete_old(meta_graph_suffix)
            if write_meta_graph:
                export_meta_graph(meta_graph_filename(checkpoint_file, meta_graph_suffix),
                                  graph=sess.graph, saver_def=self.saver_def)
        return model_checkpoint_path

    def restore(self, sess: Any, save_path: str | None) -> None:
        """Restore the variables from checkpoint `save_path`; on a missing or corrupt
        tensor (NotFoundError / DataLossError) no variable changes."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        self.build()
        assert self.saver_def is not None
        try:
            # A shared hold of the save lock: no save switches the checkpoint between
            # the RestoreV2 ops (one per device when sharded) of this restore.
            with commit.dir_lock(os.path.dirname(save_path), shared=True):
                sess.run(self.saver_def.restore_op_name,
                         {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as e:
            raise errors.NotFoundError(
                e.node_def, e.op,
                "Restoring from checkpoint failed. This is most likely due to a Variable name "
                "or other graph key that is missing from the checkpoint. Please ensure that "
                "you have not altered the graph expected based on the checkpoint. Original "
                f"error:\n\n{e.message}",
            ) from None

    def export_meta_graph(self, filename: str | None = None, collection_list: Any = None,
                          as_text: bool = False, export_scope: Any = None,
                          clear_devices: bool = False, clear_extraneous_savers: bool = False,
                          strip_default_attrs: bool = False, save_debug_info: bool = False) -> dict[str, Any]:
        del as_text, export_scope, clear_extraneous_savers, strip_default_attrs, save_debug_info
        self.build()
        return export_meta_graph(filename, collection_list=collection_list,
                                 clear_devices=clear_devices, saver_def=self.saver_def)
