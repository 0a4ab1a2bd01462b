"""The saving processes of the checkpoint kill tests (tests/train/test_checkpoint_kills.py).

Imported by a multiprocessing forkserver that has flowlab loaded already, so that a
child costs a fork, not an interpreter start: hundreds of real processes can be
killed (SIGKILL) in seconds.  No pytest here.

Every checkpoint holds `step` (int64) and `big` (float32, `size` elements, on a
second device when sharded); the training op adds 1 to both, so a restored
checkpoint is consistent exactly when every element of `big` equals `step`.
"""

from __future__ import annotations

import os
from typing import Any

import flowlab as fl
from flowlab.kernels import checkpoint_commit as commit

PREFIX = "model.ckpt"


def _graph(size: int, sharded: bool) -> tuple[Any, Any, Any, Any]:
    with fl.device("/cpu:0"):
        step = fl.Variable(fl.constant(0, fl.int64), name="step")
    with fl.device("/cpu:1" if sharded else "/cpu:0"):
        big = fl.Variable(fl.zeros([size]), name="big")
    train = fl.group(fl.assign_add(step, fl.constant(1, fl.int64)),
                     fl.assign_add(big, fl.ones([size])))
    return step, big, train, fl.train.Saver(sharded=sharded, max_to_keep=2)


def latest(d: str, global_step: bool) -> str | None:
    """The checkpoint a new run restores: the state file's (global_step paths) or
    the one path's."""
    if global_step:
        return fl.train.latest_checkpoint(d)
    p = os.path.join(d, PREFIX)
    return p if os.path.exists(p + ".index") else None


def save_loop(d: str, size: int, sharded: bool, global_step: bool, saves: int,
              progress: Any = None, crash_at: int | None = None,
              crash_from: int | None = None, trace: Any = None, resume: bool = True) -> None:
    """Train and save to `d` `saves` times, starting from what is there.

    `progress` (a shared int): the step of the last save that returned.
    `crash_at`: SIGKILL this process before that file operation of the saves from
    number `crash_from` on (checkpoint_commit's hook).  `trace` (a queue): receives the
    file operations of those saves.  `resume`: restore the latest checkpoint first."""
    os.makedirs(d, exist_ok=True)
    with fl.Graph().as_default():
        step, big, train, saver = _graph(size, sharded)
        config = fl.ConfigProto(device_count={"CPU": 2})
        with fl.Session(config=config) as sess:
            sess.run(fl.global_variables_initializer())
            first = 0
            path = latest(d, global_step) if resume else None
            if path is not None:
                saver.restore(sess, path)
                first = int(sess.run(step))
            for i in range(first + 1, first + saves + 1):
                sess.run(train)
                if crash_from is not None and i == first + crash_from:
                    commit.reset_count()
                    commit.crash_at = crash_at
                    if trace is not None:
                        commit.trace = []
                saver.save(sess, os.path.join(d, PREFIX), global_step=i if global_step else None)
                if progress is not None:
                    progress.value = i
            if trace is not None:
                trace.put(list(commit.trace or []))
