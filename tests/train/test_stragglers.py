"""flowlab.train.stragglers: the delay models, the waits, and StragglerHook in a
MonitoredSession.  No test times anything: waits are checked through the events log
(which worker, which step, which delay, interrupted or not, in which order)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowlab as fl
from flowlab.train.stragglers import StragglerHook, Stragglers


def test_delays_are_a_pure_function_of_seed_worker_and_step():
    a = Stragglers.lognormal(median_s=0.02, sigma=1.0, seed=5)
    b = Stragglers.lognormal(median_s=0.02, sigma=1.0, seed=5)
    table = a.delays(4, 50)
    assert table.shape == (4, 50)
    # The same whatever order the draws are asked in (thread timing cannot change them).
    assert [b.delay(w, s) for w, s in reversed([(w, s) for w in range(4) for s in range(50)])] == \
        list(reversed(table.ravel().tolist()))
    assert not np.array_equal(table, Stragglers.lognormal(0.02, 1.0, seed=6).delays(4, 50))
    assert len(np.unique(table)) == table.size          # every (worker, step) has its own draw


def test_distributions_have_the_documented_shapes():
    n = 4000
    logn = Stragglers.lognormal(median_s=0.02, sigma=1.0, seed=1, base_s=0.005).delays(1, n)[0]
    assert logn.min() > 0.005
    assert abs(np.median(logn - 0.005) / 0.02 - 1) < 0.1            # median_s is the median
    np.testing.assert_allclose(np.std(np.log(logn - 0.005)), 1.0, rtol=0.05)  # sigma of the log
    par = Stragglers.pareto(scale_s=0.01, alpha=1.5, seed=2).delays(1, n)[0]
    # Lomax(alpha) * scale: P(X > x) = (1 + x / scale) ** -alpha.
    for x in (0.01, 0.05, 0.2):
        assert abs(np.mean(par > x) - (1 + x / 0.01) ** -1.5) < 0.02
    assert par.max() > 20 * np.median(par)                           # a heavy tail
    capped = Stragglers.pareto(scale_s=0.01, alpha=1.5, seed=2, max_delay_s=0.05).delays(1, n)[0]
    assert capped.max() == 0.05 and np.array_equal(np.minimum(par, 0.05), capped)
    ex = Stragglers.exponential(mean_s=0.01, seed=3).delays(1, n)[0]
    assert abs(ex.mean() / 0.01 - 1) < 0.06
    assert Stragglers.constant(0.25).delays(2, 3).tolist() == [[0.25] * 3] * 2
    slow = Stragglers.slow_worker(1, delay_s=2.0, base_s=0.01).delays(3, 2)
    assert slow.tolist() == [[0.01, 0.01], [2.0, 2.0], [0.01, 0.01]]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown distribution 'gamma'; use one of lognormal"):
        Stragglers("gamma")
    with pytest.raises(ValueError, match=r"median_s must be a finite number >= 0, got -1"):
        Stragglers.lognormal(median_s=-1)
    with pytest.raises(ValueError, match="alpha must be positive, got 0"):
        Stragglers.pareto(0.01, alpha=0)
    with pytest.raises(ValueError, match="max_delay_s must be positive"):
        Stragglers.exponential(0.01, max_delay_s=0)
    with pytest.raises(ValueError, match="worker must be a task index >= 0, got -1"):
        Stragglers.slow_worker(-1, 1.0)
    with pytest.raises(ValueError, match="worker=0, step=-2"):
        Stragglers.constant(0.0).delay(0, -2)
    with pytest.raises(TypeError, match="stragglers must be a Stragglers, got float"):
        StragglerHook(0.5, worker=0)
    with pytest.raises(ValueError, match="worker must be a task index"):
        StragglerHook(Stragglers.constant(0.0), worker=1.5)


def test_sleep_logs_each_wait_and_stop_cuts_a_long_one_short():
    s = Stragglers.slow_worker(1, delay_s=30.0)
    ev0 = s.sleep(0, 0)                                   # base_s = 0: returns at once
    assert (ev0.worker, ev0.step, ev0.delay_s, ev0.interrupted) == (0, 0, 0.0, False)
    done = []
    t = threading.Thread(target=lambda: done.append(s.sleep(1, 4)))
    t.start()
    for _ in range(2000):                                 # until the slow worker is waiting
        if s.waiting() == {1: 4}:
            break
        threading.Event().wait(0.005)
    assert s.waiting() == {1: 4} and not done             # still inside its 30 s wait
    s.stop()
    t.join(10)
    assert not t.is_alive()
    (ev,) = done
    assert (ev.worker, ev.step, ev.delay_s, ev.interrupted) == (1, 4, 30.0, True)
    assert ev.ended - ev.started < 30.0
    assert ev0.end_seq < ev.start_seq < ev.end_seq
    assert s.events == [ev0, ev] and s.waiting() == {} and s.stopped
    assert s.sleep(1, 5).interrupted                      # after stop(): no more waits


def test_a_coordinator_stop_request_ends_the_wait():
    s = Stragglers.constant(30.0)
    coord = fl.train.Coordinator()
    out = []
    t = threading.Thread(target=lambda: out.append(s.sleep(3, 0, coord)))
    t.start()
    coord.request_stop()
    t.join(10)
    assert not t.is_alive() and out[0].interrupted and not s.stopped


def test_hook_delays_every_run_of_a_monitored_session_by_its_own_step_count():
    s = Stragglers.pareto(scale_s=0.001, alpha=2.0, seed=9, max_delay_s=0.01)
    with fl.Graph().as_default():
        gs = fl.train.get_or_create_global_step()
        inc = fl.assign_add(gs, 1)
        with fl.train.MonitoredSession(hooks=[StragglerHook(s, worker=2)]) as sess:
            for _ in range(4):
                sess.run(inc)
            assert sess.run(gs) == 4
    assert [(e.worker, e.step) for e in s.events] == [(2, k) for k in range(5)]
    assert [e.delay_s for e in s.events] == [s.delay(2, k) for k in range(5)]
    assert not any(e.interrupted for e in s.events)
    seqs = [(e.start_seq, e.end_seq) for e in s.events]
    assert seqs == sorted(seqs) and all(a < b for a, b in seqs)


def test_reachable_as_tf_train_stragglers():
    # flowlab's own name, beside the optimizer it studies (TensorFlow has none).
    assert fl.train.stragglers.Stragglers is Stragglers
    assert fl.train.stragglers.StragglerHook is StragglerHook
    assert issubclass(StragglerHook, fl.train.SessionRunHook)
