"""Saves survive every kill: real processes SIGKILLed mid-save, at random moments and
before every single file operation of a save, for both path styles (one path saved
again and again; `global_step` paths), sharded and not.  After each kill the newest
complete checkpoint restores (consistent: `big` equals `step` everywhere, and no
older than the last save that returned), and the next save removes the leftovers.

The saving processes are forked from a forkserver that has flowlab imported
(tests/train/checkpoint_kill_child.py), so a kill costs a fork, not an interpreter:
215 kills in this file (79 deterministic, 136 at random moments).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels import checkpoint_format as fmt
from tests.train import checkpoint_kill_child as child

SCENARIOS = [
    pytest.param(False, False, id="same-path"),
    pytest.param(False, True, id="global-step"),
    pytest.param(True, False, id="same-path-sharded"),
    pytest.param(True, True, id="global-step-sharded"),
]
SMALL = 64  # elements of `big`: kills are cheap
LARGE = 1 << 22  # 16 MB: kills land inside data writes too


@pytest.fixture(scope="module")
def ctx():
    c = multiprocessing.get_context("forkserver")
    c.set_forkserver_preload(["flowlab", "tests.train.checkpoint_kill_child"])
    return c


def _run(ctx, *args, **kwargs):
    p = ctx.Process(target=child.save_loop, args=args, kwargs=kwargs)
    p.start()
    return p


def _restored(d, global_step, size):
    """(step, big) of the checkpoint a restart restores; checks it is consistent."""
    path = child.latest(d, global_step)
    assert path is not None, f"no restorable checkpoint in {sorted(os.listdir(d))}"
    with fmt.CheckpointReader(path) as r:
        step, big = int(r.get_tensor("step")), r.get_tensor("big")
    np.testing.assert_array_equal(big, np.full(size, float(step), np.float32))
    return step


_LEFTOVER = re.compile(r".*(\.tmp-[0-9a-f]{12}|_temp.*)$")


def _leftovers(d):
    """Files no restorable checkpoint uses: temporary files, part directories, data
    files that no index names."""
    names = os.listdir(d)
    named = set()
    for n in names:
        if n.endswith(".index"):
            with fmt.CheckpointReader(os.path.join(d, n[: -len(".index")])) as r:
                named.update(r.data_files)
    return sorted(n for n in names if _LEFTOVER.fullmatch(n) or (".data-" in n and n not in named))


def _kill(p):
    p.kill()  # SIGKILL, to this process's PID
    p.join(30)
    assert p.exitcode == -signal.SIGKILL


# --- before every file operation ------------------------------------------------------
@pytest.mark.parametrize("sharded, global_step", SCENARIOS)
def test_crash_before_every_file_operation_of_a_save(ctx, tmp_path, sharded, global_step):
    # The file operations of the third save (the first two made a checkpoint to replace).
    q = ctx.Queue()
    p = _run(ctx, str(tmp_path / "count"), SMALL, sharded, global_step, 3, crash_from=3, trace=q)
    ops = q.get(timeout=60)
    p.join(30)
    assert p.exitcode == 0
    n = len(ops)
    assert n >= (11 if not sharded else 26), ops
    switch = "checkpoint" if global_step else "model.ckpt.index"
    s = next(i for i, (kind, path) in enumerate(ops, 1)
             if kind == "rename" and os.path.basename(path) == switch)
    kills = 0
    for k in range(1, n + 1):
        d = str(tmp_path / f"k{k}")
        p = _run(ctx, d, SMALL, sharded, global_step, 3, crash_from=3, crash_at=k)
        p.join(30)
        assert p.exitcode == -signal.SIGKILL, f"no crash before operation {k}: {ops[k - 1]}"
        kills += 1
        # Killed just before operation k: before the switch the old checkpoint, after it
        # the new one -- and always a complete one.
        assert _restored(d, global_step, SMALL) == (2 if k <= s else 3), (k, ops[k - 1])
        # The next save removes what the killed one left.
        p = _run(ctx, d, SMALL, sharded, global_step, 1)
        p.join(30)
        assert p.exitcode == 0
        assert _leftovers(d) == [], (k, ops[k - 1])
        assert _restored(d, global_step, SMALL) == (3 if k <= s else 4)
    assert kills == n


# --- at random moments ------------------------------------------------------------------
@pytest.mark.parametrize("sharded, global_step", SCENARIOS)
@pytest.mark.parametrize("size, kills, window", [(SMALL, 30, 0.03), (LARGE, 4, 0.25)],
                         ids=["small", "large"])
def test_killed_at_random_moments_of_a_save_loop(ctx, tmp_path, sharded, global_step, size,
                                                 kills, window):
    rng = np.random.default_rng([sharded, global_step, size])
    d = str(tmp_path / "ckpt")
    progress = ctx.RawValue("q", 0)  # no lock: the child dies holding nothing
    last = 0
    leftovers_seen = 0
    for _ in range(kills):
        before = progress.value
        p = _run(ctx, d, size, sharded, global_step, 10**6, progress)
        deadline = time.monotonic() + 60
        while progress.value == before and p.is_alive() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert progress.value > before, "the child never saved"
        time.sleep(rng.uniform(0, window))
        _kill(p)
        step = _restored(d, global_step, size)
        assert step >= progress.value >= last  # nothing that save() returned is lost
        last = step
        leftovers_seen += bool(_leftovers(d))
    p = _run(ctx, d, size, sharded, global_step, 1, progress)
    p.join(60)
    assert p.exitcode == 0
    assert _leftovers(d) == []
    assert _restored(d, global_step, size) == last + 1
    # Restored in this process through a Saver too (the graph of a restart).
    with fl.Graph().as_default():
        step_v = fl.Variable(fl.constant(-1, fl.int64), name="step")
        big_v = fl.Variable(fl.zeros([size]), name="big")
        saver = fl.train.Saver()
        with fl.Session() as sess:
            saver.restore(sess, child.latest(d, global_step))
            assert sess.run(step_v) == last + 1
            assert float(sess.run(big_v)[-1]) == last + 1
