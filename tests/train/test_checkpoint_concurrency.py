"""Concurrent saves to one path take turns (both succeed, the result restores), and a
reader running beside saves always sees one complete checkpoint."""

from __future__ import annotations

import multiprocessing
import os
import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels import checkpoint_format as fmt
from tests.train import checkpoint_kill_child as child

N = 1 << 18  # 1 MB per variable: saves long enough to overlap


def _session(tag: int, sharded: bool):
    g = fl.Graph()
    with g.as_default():
        with fl.device("/cpu:0"):
            step = fl.Variable(fl.constant(0, fl.int64), name="step")
            fl.Variable(tag, name="who")
        with fl.device("/cpu:1"):
            big = fl.Variable(fl.zeros([N]), name="big")
        train = fl.group(fl.assign_add(step, fl.constant(1, fl.int64)),
                         fl.assign_add(big, fl.fill([N], float(tag))))
        saver = fl.train.Saver(sharded=sharded)
        sess = fl.Session(graph=g, config=fl.ConfigProto(device_count={"CPU": 2}))
        sess.run(fl.global_variables_initializer())
    return sess, train, saver


def _consistent(prefix):
    """(who, step) of checkpoint `prefix`, checking big == who * step."""
    with fmt.CheckpointReader(prefix) as r:
        who, step, big = int(r.get_tensor("who")), int(r.get_tensor("step")), r.get_tensor("big")
    np.testing.assert_array_equal(big, np.full(N, float(who * step), np.float32))
    return who, step


@pytest.mark.parametrize("sharded", [False, True], ids=["one-shard", "sharded"])
def test_two_sessions_saving_one_path_both_succeed(tmp_path, sharded):
    path = str(tmp_path / "model.ckpt")
    sessions = [_session(1, sharded), _session(2, sharded)]
    rounds = 20
    barrier = threading.Barrier(2)
    results: dict[int, list] = {0: [], 1: []}

    def saver_thread(i):
        sess, train, saver = sessions[i]
        for _ in range(rounds):
            sess.run(train)
            barrier.wait()
            try:
                results[i].append(saver.save(sess, path))
            except Exception as e:  # recorded: the test asserts there is none
                results[i].append(e)
            barrier.wait()

    threads = [threading.Thread(target=saver_thread, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in (0, 1):
        assert results[i] == [path] * rounds  # every save reported success, none failed
    who, step = _consistent(path)
    assert who in (1, 2) and step == rounds
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["checkpoint", "model.ckpt.index", "model.ckpt.meta"]
        + [fmt.data_filename("model.ckpt", i, 2 if sharded else 1) for i in range(2 if sharded else 1)])
    for sess, _, _ in sessions:
        sess.close()


def test_every_round_of_concurrent_saves_restores(tmp_path):
    path = str(tmp_path / "model.ckpt")
    sessions = [_session(1, False), _session(2, False)]
    for r in range(1, 11):
        errors_seen: list[Exception] = []

        def save(i, errors_seen=errors_seen):
            sess, train, saver = sessions[i]
            sess.run(train)
            try:
                saver.save(sess, path)
            except Exception as e:
                errors_seen.append(e)

        threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors_seen == []
        who, step = _consistent(path)
        assert who in (1, 2) and step == r
        # ...and through a Saver, into a graph of a restart.
        with fl.Graph().as_default():
            step_v = fl.Variable(fl.constant(-1, fl.int64), name="step")
            who_v = fl.Variable(0, name="who")
            fl.Variable(fl.zeros([N]), name="big")
            with fl.Session() as sess:
                fl.train.Saver().restore(sess, path)
                assert sess.run([who_v, step_v]) == [who, step]
    for sess, _, _ in sessions:
        sess.close()


def test_two_processes_save_one_path_while_a_reader_reads(tmp_path):
    """Two saving processes on one path (and one global_step directory), a reader
    beside them: every read is a complete, consistent checkpoint."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["flowlab", "tests.train.checkpoint_kill_child"])
    for global_step in (False, True):
        d = str(tmp_path / f"gs{int(global_step)}")
        os.makedirs(d)
        # On one path each process first restores what the other saves (a sharded
        # restore beside saves).  (Two Savers of one global_step directory delete each
        # other's old checkpoints, as in TensorFlow: there they start from scratch.)
        resume = not global_step
        procs = [ctx.Process(target=child.save_loop, args=(d, 1 << 16, sharded, global_step, 40),
                             kwargs={"resume": resume}) for sharded in (False, True)]
        for p in procs:
            p.start()
        reads = 0
        while any(p.is_alive() for p in procs) or reads == 0:
            path = child.latest(d, global_step)
            if path is None:
                continue
            try:
                r = fmt.CheckpointReader(path)
            except fl.errors.NotFoundError:
                assert global_step  # an old global_step checkpoint deleted after the look-up
                continue
            with r:
                step, big = int(r.get_tensor("step")), r.get_tensor("big")
            assert (big == step).all(), (path, r.data_files, step, big[:3])
            reads += 1
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
        assert reads > 0
        assert not [f for f in os.listdir(d) if ".tmp-" in f or "_temp" in f]
