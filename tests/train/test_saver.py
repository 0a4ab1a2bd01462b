"""tf.train.Saver: the graph it builds, what it writes, what programs see (checked
against TensorFlow), sharded/sliced variables, partial restores and meta graphs."""

from __future__ import annotations

import os

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.train import saver as saver_mod
from flowlab.train.saver import SaveSliceInfo


def _files(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def _program(tf, root, relative):
    """Save 4 times with max_to_keep=2, then restore the latest into changed variables."""
    d = os.path.relpath(os.path.join(root, "d")) if relative else os.path.join(root, "d")
    out = {}
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        w = tf.Variable(3, name="w")
        step = tf.Variable(0, name="step", dtype=tf.int64)
        inc = tf.assign_add(step, 10)
        s = tf.train.Saver(max_to_keep=2)
        out["ops"] = [(op.name, op.type) for op in tf.get_default_graph().get_operations()
                      if op.name.startswith("save/")]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out["paths"] = []
            for _ in range(4):
                sess.run(inc)
                out["paths"].append(s.save(sess, os.path.join(d, "model.ckpt"), global_step=step))
            out["last"] = s.last_checkpoints
            out["files"] = _files(d)
            with open(os.path.join(d, "checkpoint")) as f:
                out["state_text"] = f.read()
            out["latest"] = tf.train.latest_checkpoint(d)
            st = tf.train.get_checkpoint_state(d)
            out["state"] = (st.model_checkpoint_path, list(st.all_model_checkpoint_paths))
            out["exists"] = [tf.train.checkpoint_exists(p) for p in out["paths"]]
            sess.run([v.assign([5.0, 6.0]), w.assign(9), step.assign(0)])
            s.restore(sess, out["latest"])
            out["restored"] = sess.run([v, w, step])
            s.restore(sess, out["paths"][-2])
            out["older"] = sess.run(step)
    return out


@pytest.mark.parametrize("relative", [False, True])
def test_saver_program_matches_tensorflow(tf1, tmp_path, monkeypatch, relative):
    monkeypatch.chdir(tmp_path)
    os.mkdir(tmp_path / "tf")
    os.mkdir(tmp_path / "fl")
    expected = _program(tf1, str(tmp_path / "tf"), relative)
    actual = _program(fl, str(tmp_path / "fl"), relative)
    for key in ("paths", "last", "latest", "state"):
        expected[key] = str(expected[key]).replace("/tf/", "/fl/").replace("tf/d", "fl/d")
        actual[key] = str(actual[key])
    expected["state_text"] = expected["state_text"].replace("/tf/", "/fl/")
    for key in expected:
        if key in ("restored",):
            continue
        assert actual[key] == expected[key], key
    for e, a in zip(expected["restored"], actual["restored"]):
        np.testing.assert_array_equal(a, e)
        assert np.asarray(a).dtype == np.asarray(e).dtype
    assert actual["older"] == expected["older"] == 30


def test_saver_def_and_defaults(tmp_path):
    fl.Variable(1.0, name="a")
    s = fl.train.Saver()
    sd = s.saver_def
    assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert sd.max_to_keep == 5 and sd.keep_checkpoint_every_n_hours == 10000.0
    s2 = fl.train.Saver(name="mine", filename=str(tmp_path / "default"))
    assert s2.saver_def.restore_op_name == "mine/restore_all"
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        # The filename tensor defaults to `filename`: running the save op alone saves there.
        sess.run(s2.saver_def.save_tensor_name)
    assert fl.train.checkpoint_exists(str(tmp_path / "default"))


def test_a_built_saver_def_is_tensorflows_proto(tf1):
    # tf.train.SaverDef is the protobuf message: the same fields, the same bytes, and
    # version V2 for a built Saver (LEGACY, the proto's default, for a bare one).
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            tf.Variable(1.0, name="a")
            sd = tf.train.Saver(max_to_keep=3, keep_checkpoint_every_n_hours=0.5).saver_def
            out.append((type(sd).__name__, sd.version, sd.SerializeToString(deterministic=True),
                        tf.train.SaverDef().version))
    assert out[0] == out[1]
    assert out[1][1] == fl.train.SaverDef.V2 and out[1][3] == fl.train.SaverDef.LEGACY


def test_a_sharded_saver_rebuilt_from_its_saver_def_saves_into_a_fresh_part_directory(tmp_path, monkeypatch):
    # The part-prefix placeholder is no field of TensorFlow's SaverDef: a Saver made
    # from a saver def (import_meta_graph, or by hand) finds it in the graph by name,
    # under an import scope too, so its saves still write their parts to a fresh
    # `<prefix>_temp_<random>/` and leave nothing behind.
    meta_path = str(tmp_path / "g.meta")
    with fl.Graph().as_default():
        fl.Variable([1.0, 2.0], name="v")
        s = fl.train.Saver(sharded=True)
        s.export_meta_graph(meta_path)
    seen = []
    real = saver_mod.commit.hold_part_dir
    monkeypatch.setattr(saver_mod.commit, "hold_part_dir", lambda d: seen.append(d) or real(d))
    for scope in (None, "imp"):
        seen.clear()
        with fl.Graph().as_default():
            s2 = fl.train.import_meta_graph(meta_path, import_scope=scope)
            prefix = f"{scope}/" if scope else ""
            assert s2._sharded_temp_name == f"{prefix}save/sharded_temp:0"
            with fl.Session() as sess:
                sess.run(fl.global_variables_initializer())
                p = s2.save(sess, str(tmp_path / f"m{scope}"), write_meta_graph=False)
            assert [os.path.dirname(d) for d in seen] == [str(tmp_path)]
            assert os.path.basename(seen[0]).startswith(f"m{scope}_temp_")
            np.testing.assert_array_equal(fl.train.load_variable(p, "v"), [1.0, 2.0])
            assert not [f for f in os.listdir(tmp_path) if "_temp" in f]
    with fl.Graph().as_default():  # a saver def without the placeholder: no part feed
        fl.Variable(1.0, name="w")
        sd = fl.train.SaverDef(filename_tensor_name="save/Const:0", sharded=True)
        assert fl.train.Saver(saver_def=sd)._sharded_temp_name == ""


def test_a_meta_graph_written_with_the_old_saver_def_field_still_imports(tmp_path):
    import json

    meta_path = str(tmp_path / "g.meta")
    with fl.Graph().as_default():
        fl.Variable(1.5, name="v")
        s = fl.train.Saver(sharded=True)
        s.export_meta_graph(meta_path)
    with open(meta_path) as f:
        meta = json.load(f)
    assert "sharded_temp_tensor_name" not in meta["saver_def"]
    meta["saver_def"]["sharded_temp_tensor_name"] = "save/sharded_temp:0"
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with fl.Graph().as_default():
        s2 = fl.train.import_meta_graph(meta_path)
        assert s2.saver_def.sharded and s2._sharded_temp_name == "save/sharded_temp:0"


def test_build_errors_match_tensorflow(tf1):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            w = tf.Variable(1.0, name="w")
            with pytest.raises(ValueError, match="No variables to save"):
                tf.train.Saver([])
            with pytest.raises(ValueError, match="At least two variables have the same name: w"):
                tf.train.Saver([w, w])
            with pytest.raises(ValueError, match="same saveable will be restored with two names"):
                tf.train.Saver({"a": w, "b": w})
    with pytest.raises(TypeError, match="not a Variable"):
        fl.train.Saver([fl.constant(1.0)])
    with fl.Session() as sess:
        assert fl.train.Saver([], allow_empty=True).save(sess, "x") is None


def test_restore_errors(tf1, tmp_path):
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            tf.Variable(1.0, name="v")
            s = tf.train.Saver()
            with tf.Session() as sess:
                with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: "):
                    s.restore(sess, str(tmp_path / "nope"))
                with pytest.raises(ValueError, match="Can't load save_path when it is None"):
                    s.restore(sess, None)


def test_missing_tensor_is_not_found_and_nothing_changes(tf1, tmp_path):
    msgs = []
    for tf in (tf1, fl):
        p = str(tmp_path / tf.__name__ / "m")
        with tf.Graph().as_default():
            tf.Variable(1.0, name="v")
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                tf.train.Saver().save(sess, p)
        with tf.Graph().as_default():
            v = tf.Variable(7.0, name="v")
            w = tf.Variable(8.0, name="w")
            s = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                with pytest.raises(tf.errors.NotFoundError) as ei:
                    s.restore(sess, p)
                msgs.append(str(ei.value))
                assert sess.run([v, w]) == [7.0, 8.0]
    for m in msgs:
        assert "Restoring from checkpoint failed" in m and "Key w not found in checkpoint" in m


def test_partial_restore_with_dict_names(tmp_path):
    p = str(tmp_path / "m")
    with fl.Graph().as_default():
        a = fl.Variable([1, 2], name="a")
        b = fl.Variable(2.5, name="b")
        s = fl.train.Saver({"renamed/a": a, "b": b})
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            s.save(sess, p, write_meta_graph=False)
    assert fl.train.list_variables(p) == [("b", []), ("renamed/a", [2])]
    np.testing.assert_array_equal(fl.train.load_variable(p, "renamed/a"), [1, 2])
    with fl.Graph().as_default():
        x = fl.Variable([0, 0], name="x")
        y = fl.Variable(0.0, name="y")
        s = fl.train.Saver({"renamed/a": x})  # only x; y keeps its value
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            s.restore(sess, p)
            got = sess.run([x, y])
    np.testing.assert_array_equal(got[0], [1, 2])
    assert got[1] == 0.0


def test_global_step_forms_and_padding(tmp_path):
    v = fl.Variable(1.0, name="v")
    gs = fl.Variable(7, name="global_step")
    s = fl.train.Saver([v], pad_step_number=True)
    s2 = fl.train.Saver([v])
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        base = str(tmp_path / "m")
        assert s.save(sess, base, global_step=gs) == base + "-00000007"
        assert s2.save(sess, base, global_step=np.int64(3)) == base + "-3"
        assert s2.save(sess, base, global_step=gs.value()) == base + "-7"
        assert os.path.exists(base + "-7.meta")
        assert s2.save(sess, str(tmp_path / "n"), write_state=False, write_meta_graph=False)
        with pytest.raises(ValueError, match="collides with 'save_path'"):
            s2.save(sess, str(tmp_path / "checkpoint"))
    assert _files(tmp_path) == sorted([
        "checkpoint", "m-00000007.data-00000-of-00001", "m-00000007.index", "m-00000007.meta",
        "m-3.data-00000-of-00001", "m-3.index", "m-3.meta", "m-7.data-00000-of-00001",
        "m-7.index", "m-7.meta", "n.data-00000-of-00001", "n.index"])


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(saver_mod.time, "time", lambda: clock[0])
    fl.Variable(1.0, name="v")
    s = fl.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1.0)  # next keep: 4600
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        for step, t in enumerate([1000.0, 2000.0, 5000.0, 6000.0, 9000.0]):
            clock[0] = t
            s.save(sess, str(tmp_path / "m"), global_step=step, write_meta_graph=False)
    kept = sorted(f[:-6] for f in _files(tmp_path) if f.endswith(".index"))
    # 5000 passed the 4600 mark when it was evicted: kept; the next mark is 8200.
    assert kept == ["m-2", "m-4"]
    assert s.last_checkpoints == [str(tmp_path / "m-4")]


def test_max_to_keep_none_keeps_all_and_recover(tmp_path):
    fl.Variable(1.0, name="v")
    s = fl.train.Saver(max_to_keep=None)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        paths = [s.save(sess, str(tmp_path / "m"), global_step=i, write_meta_graph=False)
                 for i in range(3)]
    assert all(fl.train.checkpoint_exists(p) for p in paths)
    assert s.last_checkpoints == []
    st = fl.train.get_checkpoint_state(str(tmp_path))
    assert st.model_checkpoint_path == paths[-1] and st.all_model_checkpoint_paths == [paths[-1]]
    s2 = fl.train.Saver(max_to_keep=2)
    s2.recover_last_checkpoints(paths + [str(tmp_path / "missing")])
    assert s2.last_checkpoints == paths
    assert fl.train.get_checkpoint_state(str(tmp_path / "none")) is None
    assert fl.train.latest_checkpoint(str(tmp_path / "none")) is None


def test_state_file_text_and_missing_checkpoint(tmp_path):
    d = str(tmp_path)
    fl.train.update_checkpoint_state(d, os.path.join(d, "a"), [os.path.join(d, "b")])
    st = fl.train.get_checkpoint_state(d)
    assert st.all_model_checkpoint_paths == [os.path.join(d, "b"), os.path.join(d, "a")]
    assert str(st).startswith(f'model_checkpoint_path: "{d}/a"\n')
    assert fl.train.latest_checkpoint(d) is None  # named, but its files do not exist
    with open(os.path.join(d, "checkpoint"), "w") as f:
        f.write("garbage {{")
    assert fl.train.get_checkpoint_state(d) is None


# --- sharding and devices ---------------------------------------------------------------
FULL = np.arange(24, dtype=np.float32).reshape(6, 4)


def _parts(n, prefix, cpus=2):
    vs, bounds = [], np.linspace(0, 6, n + 1).astype(int)
    for i in range(n):
        a, b = int(bounds[i]), int(bounds[i + 1])
        with fl.device(f"/cpu:{i % cpus}"):
            v = fl.Variable(FULL[a:b] * 0, name=f"{prefix}/part_{i}")
        v._set_save_slice_info(SaveSliceInfo("emb", [6, 4], [a, 0], [b - a, 4]))
        vs.append((v, FULL[a:b]))
    return vs


CFG = fl.ConfigProto(device_count={"CPU": 2})


def test_one_save_op_per_device_when_sharded_and_resharding(tmp_path):
    p = str(tmp_path / "m")
    with fl.Graph().as_default() as g:
        parts = _parts(3, "a")
        with fl.device("/cpu:1"):
            c = fl.Variable(7, name="c")
        s = fl.train.Saver(sharded=True)
        saves = [op for op in g.get_operations() if op.type == "SaveV2"]
        assert sorted(op.device for op in saves) == ["/device:CPU:0", "/device:CPU:1"]
        assert [op.type for op in g.get_operations()].count("RestoreV2") == 2
        with fl.Session(config=CFG) as sess:
            sess.run(fl.global_variables_initializer())
            for v, val in parts:
                v.load(val, sess)
            assert s.save(sess, p) == p
    assert _files(tmp_path) == ["checkpoint", "m.data-00000-of-00002", "m.data-00001-of-00002",
                                "m.index", "m.meta"]
    r = fl.train.load_checkpoint(str(tmp_path))
    assert r.get_variable_to_shape_map() == {"c": [], "emb": [6, 4]}
    np.testing.assert_array_equal(r.get_tensor("emb"), FULL)
    for n in (2, 1, 3):
        with fl.Graph().as_default():
            if n == 1:
                e = fl.Variable(np.zeros((6, 4), np.float32), name="e")
                s = fl.train.Saver({"emb": e, "c": c_new()})
                want = [(e, FULL)]
            else:
                parts = _parts(n, "b")
                s = fl.train.Saver({"emb": [v for v, _ in parts]})
                want = parts
            with fl.Session(config=CFG) as sess:
                sess.run(fl.global_variables_initializer())
                s.restore(sess, p)
                for v, val in want:
                    np.testing.assert_array_equal(sess.run(v), val)
    del c


def c_new():
    return fl.Variable(0, name="c")


def test_failed_sharded_restore_rolls_back(tmp_path):
    p = str(tmp_path / "m")
    with fl.Graph().as_default():
        parts = _parts(2, "a")
        s = fl.train.Saver(sharded=True)
        with fl.Session(config=CFG) as sess:
            sess.run(fl.global_variables_initializer())
            for v, val in parts:
                v.load(val, sess)
            s.save(sess, p, write_meta_graph=False)
            data = tmp_path / "m.data-00001-of-00002"
            raw = bytearray(data.read_bytes())
            raw[5] ^= 1
            data.write_bytes(bytes(raw))
            for v, val in parts:
                v.load(val + 100, sess)
            with pytest.raises(errors.DataLossError, match="m.data-00001-of-00002, tensor 'emb'"):
                s.restore(sess, p)
            for v, val in parts:  # neither shard's variable changed
                np.testing.assert_array_equal(sess.run(v), val + 100)


# --- meta graphs ------------------------------------------------------------------------
def test_export_and_import_meta_graph(tmp_path):
    p = str(tmp_path / "m")
    with fl.Graph().as_default():
        v = fl.Variable([1.0, 2.0], name="v")
        fl.Variable(5, name="counter", trainable=False)
        y = fl.multiply(v, 2.0, name="y")
        fl.add_to_collection("outputs", y)
        s = fl.train.Saver()
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            sess.run(v.assign([3.0, 4.0]))
            s.save(sess, p, global_step=1)
    meta = p + "-1.meta"
    assert open(meta).read().startswith("{")  # JSON, no pickle
    with fl.Graph().as_default() as g:
        s2 = fl.train.import_meta_graph(meta)
        assert [x.name for x in fl.global_variables()] == ["v:0", "counter:0"]
        assert [x.name for x in fl.trainable_variables()] == ["v:0"]
        (y2,) = fl.get_collection("outputs")
        with fl.Session() as sess:
            s2.restore(sess, fl.train.latest_checkpoint(str(tmp_path)))
            np.testing.assert_array_equal(sess.run(y2), [6.0, 8.0])
            assert sess.run(g.get_tensor_by_name("counter:0")) == 5
            # The imported saver saves again.
            s2.save(sess, str(tmp_path / "again"), write_meta_graph=False)
    np.testing.assert_array_equal(fl.train.load_variable(str(tmp_path / "again"), "v"), [3.0, 4.0])


def test_import_meta_graph_under_scope(tmp_path):
    meta_path = str(tmp_path / "g.meta")
    with fl.Graph().as_default():
        fl.Variable(1.5, name="v")
        s = fl.train.Saver()
        s.export_meta_graph(meta_path)
        with fl.Session() as sess:
            sess.run(fl.global_variables_initializer())
            s.save(sess, str(tmp_path / "ck"), write_meta_graph=False)
    with fl.Graph().as_default() as g:
        s2 = fl.train.import_meta_graph(meta_path, import_scope="imp")
        assert s2.saver_def.restore_op_name == "imp/save/restore_all"
        with fl.Session() as sess:
            s2.restore(sess, str(tmp_path / "ck"))
            assert sess.run(g.get_tensor_by_name("imp/v:0")) == 1.5


def test_save_into_missing_parent_matches_tensorflow(tf1, tmp_path):
    (tmp_path / "file").write_text("x")
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            tf.Variable(1.0, name="v")
            s = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for bad in ("a/b/m", "file/m"):
                    with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
                        s.save(sess, str(tmp_path / tf.__name__ / bad))
                # One missing level is created, as TensorFlow does.
                s.save(sess, str(tmp_path / tf.__name__ / "m"))


# --- the ops themselves -------------------------------------------------------------------
def test_save_and_restore_ops_directly(tmp_path):
    from flowlab.ops import io_checkpoint_ops as io

    p = str(tmp_path / "raw")
    full = np.arange(12, dtype=np.int64).reshape(4, 3)
    with fl.Graph().as_default():
        save = io.save_v2(p, ["t", "t", "s"], ["4 3 0,1:-", "4 3 1,3:-", ""],
                          [full[:1], full[1:], fl.constant(b"hi")])
        assert save.type == "SaveV2" and save.name == "SaveV2"
        assert [d.name for d in save.get_attr("dtypes")] == ["int64", "int64", "string"]
        a, b, s = io.restore_v2(p, ["t", "t", "s"], ["4 3 0,2:-", "", ""],
                                [fl.int64, fl.int64, fl.string])
        assert a.shape.as_list() == [2, 3] and b.shape.ndims is None
        with fl.Session() as sess:
            sess.run(save)
            ga, gb, gs = sess.run([a, b, s])
        np.testing.assert_array_equal(ga, full[:2])
        np.testing.assert_array_equal(gb, full)
        assert gs == b"hi"
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
            io.save_v2(p, ["a", "b"], ["", ""], [fl.constant(1.0)])
        with pytest.raises(ValueError, match="Shape must be rank 0"):
            io.restore_v2([p, p], ["a"], [""], [fl.float32])
        bad = io.restore_v2(p, ["t"], [""], [fl.float32])[0]
        with fl.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="expected dtype float32 does not equal original dtype int64"):
                sess.run(bad)


def test_sharded_filename_and_string_join():
    from flowlab.ops import io_checkpoint_ops as io

    with fl.Graph().as_default():
        f = io.sharded_filename("/x/m_temp/part", 1, 4)
        j = io.string_join([["a", "b"], "-", fl.constant("z")], separator="+")
        assert j.shape.as_list() == [2]
        with fl.Session() as sess:
            assert sess.run(f) == b"/x/m_temp/part-00001-of-00004"
            assert sess.run(j).tolist() == [b"a+-+z", b"b+-+z"]


def test_sharded_true_on_one_device(tmp_path):
    v = fl.Variable([1.0, 2.0], name="v")
    s = fl.train.Saver(sharded=True)
    assert s.saver_def.sharded
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        p = s.save(sess, str(tmp_path / "m"), global_step=5, write_meta_graph=False)
        assert p == str(tmp_path / "m-5")
        sess.run(v.assign([0.0, 0.0]))
        s.restore(sess, p)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    assert _files(tmp_path) == ["checkpoint", "m-5.data-00000-of-00001", "m-5.index"]
