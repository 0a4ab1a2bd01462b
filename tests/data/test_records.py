"""TFRecord files, text lines, tf.train.Example protos and Example parsing against
TensorFlow 2.21: files written by one are read by the other, bytes and parsed values
are equal, and corrupt files are DataLossError naming the file and the offset."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import flowlab as fl
from tests.data.datatest import assert_same_elements, drain


def _example(tf, i):
    t = tf.train
    return t.Example(features=t.Features(feature={
        "id": t.Feature(int64_list=t.Int64List(value=[i, -i, 2**40])),
        "x": t.Feature(float_list=t.FloatList(value=[i / 2.0, 1.5])),
        "name": t.Feature(bytes_list=t.BytesList(value=[b"ex%d" % i])),
        "tags": t.Feature(int64_list=t.Int64List(value=list(range(i)))),
    }))


def test_example_bytes_equal_tensorflow(tf1):
    for i in range(4):
        ours = _example(fl, i).SerializeToString(deterministic=True)
        theirs = _example(tf1, i).SerializeToString(deterministic=True)
        assert ours == theirs
        assert tf1.train.Example.FromString(ours) == _example(tf1, i)
        assert fl.train.Example.FromString(theirs) == _example(fl, i)


def test_sequence_example_and_feature_lists_are_wire_compatible(tf1):
    def seq(tf):
        t = tf.train
        fl_ = t.FeatureList(feature=[t.Feature(int64_list=t.Int64List(value=[1, 2]))])
        return t.SequenceExample(
            context=t.Features(feature={"c": t.Feature(float_list=t.FloatList(value=[3.0]))}),
            feature_lists=t.FeatureLists(feature_list={"s": fl_}))

    assert seq(fl).SerializeToString(deterministic=True) == \
        seq(tf1).SerializeToString(deterministic=True)


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tfrecords_written_by_flowlab_read_by_tensorflow_and_back(tf1, tmp_path, compression):
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "theirs.tfrecord")
    records = [b"", b"a", b"hello" * 100, bytes(range(256))]
    opts_fl = fl.io.TFRecordOptions(compression) if compression else None
    opts_tf = tf1.io.TFRecordOptions(compression) if compression else None
    with fl.io.TFRecordWriter(ours, opts_fl) as w:
        for r in records:
            w.write(r)
    with tf1.io.TFRecordWriter(theirs, opts_tf) as w:
        for r in records:
            w.write(r)
    if compression is None:
        assert open(ours, "rb").read() == open(theirs, "rb").read()
    assert list(tf1.io.tf_record_iterator(ours, opts_tf)) == records
    assert list(fl.python_io.tf_record_iterator(theirs, opts_fl)) == records
    got = assert_same_elements(
        tf1, lambda tf: tf.data.TFRecordDataset([ours, theirs], compression_type=compression or ""))
    assert [g for g in got] == records * 2


def test_corrupt_tfrecord_is_data_loss_naming_file_and_offset(tmp_path):
    path = str(tmp_path / "bad.tfrecord")
    with fl.io.TFRecordWriter(path) as w:
        w.write(b"first")
        w.write(b"second")
    data = bytearray(open(path, "rb").read())
    data[21 + 12] ^= 0xFF  # a byte of the second record's data
    open(path, "wb").write(bytes(data))
    with pytest.raises(fl.errors.DataLossError, match=f"corrupted record at 21 in file {path}"):
        list(fl.python_io.tf_record_iterator(path))
    got = []
    g = fl.Graph()
    with g.as_default():
        x = fl.data.make_one_shot_iterator(fl.data.TFRecordDataset(path)).get_next()
        with fl.Session() as s:
            got.append(s.run(x))
            with pytest.raises(fl.errors.DataLossError, match="corrupted record at 21"):
                s.run(x)
    assert got == [b"first"]


def test_huge_length_is_data_loss_not_an_allocation(tmp_path):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    path = str(tmp_path / "huge.tfrecord")
    header = struct.pack("<Q", 2**62)
    open(path, "wb").write(header + struct.pack("<I", masked_crc32c(header)) + b"xyz")
    with pytest.raises(fl.errors.DataLossError, match="truncated record at 0"):
        list(fl.python_io.tf_record_iterator(path))


def test_truncated_and_bad_header_crc(tmp_path):
    path = str(tmp_path / "t.tfrecord")
    with fl.io.TFRecordWriter(path) as w:
        w.write(b"abcdef")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-3])
    with pytest.raises(fl.errors.DataLossError, match="truncated record at 0"):
        list(fl.python_io.tf_record_iterator(path))
    bad = bytearray(data)
    bad[0] ^= 1
    open(path, "wb").write(bytes(bad))
    with pytest.raises(fl.errors.DataLossError, match="corrupted record at 0"):
        list(fl.python_io.tf_record_iterator(path))


def test_missing_file_is_not_found(tmp_path):
    missing = str(tmp_path / "nope.tfrecord")
    g = fl.Graph()
    with g.as_default():
        x = fl.data.make_one_shot_iterator(fl.data.TFRecordDataset(missing)).get_next()
        with fl.Session() as s, pytest.raises(fl.errors.NotFoundError, match="nope.tfrecord"):
            s.run(x)


def test_text_lines_as_tensorflow(tf1, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"one\ntwo\r\n\nthree")
    b.write_bytes(b"x\n")
    files = [str(a), str(b)]
    assert_same_elements(tf1, lambda tf: tf.data.TextLineDataset(files))
    assert_same_elements(tf1, lambda tf: tf.data.TextLineDataset(files).batch(2))


def test_text_lines_gzip_as_tensorflow(tf1, tmp_path):
    import gzip

    p = tmp_path / "a.txt.gz"
    p.write_bytes(gzip.compress(b"alpha\nbeta\n"))
    assert_same_elements(tf1, lambda tf: tf.data.TextLineDataset(str(p), compression_type="GZIP"))


def _write_examples(tf, path, n):
    with tf.io.TFRecordWriter(path) as w:
        for i in range(n):
            w.write(_example(tf, i).SerializeToString())


FEATURES = {
    "fixed": lambda tf: {"id": tf.io.FixedLenFeature([3], tf.int64),
                         "x": tf.io.FixedLenFeature([2], tf.float32),
                         "name": tf.io.FixedLenFeature([], tf.string)},
    "defaults": lambda tf: {"missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[7.0, 8.0]),
                            "scalar_default": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
                            "x": tf.io.FixedLenFeature([1, 2], tf.float32)},
}


@pytest.mark.parametrize("kind", sorted(FEATURES))
def test_parse_single_example_in_a_pipeline_as_tensorflow(tf1, tmp_path, kind):
    path = str(tmp_path / "ex.tfrecord")
    _write_examples(fl, path, 5)
    assert_same_elements(tf1, lambda tf: tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, FEATURES[kind](tf))))
    assert_same_elements(tf1, lambda tf: tf.data.TFRecordDataset(path).batch(2).map(
        lambda r: tf.io.parse_example(r, FEATURES[kind](tf))))


def _run_parse(tf, records, features, single=False):
    g = tf.Graph()
    with g.as_default():
        if single:
            out = tf.io.parse_single_example(records, features(tf))
        else:
            out = tf.io.parse_example(records, features(tf))
        static = {k: (v.dense_shape.shape.as_list() if hasattr(v, "dense_shape")
                      else v.shape.as_list()) for k, v in out.items()}
        with tf.Session() as s:
            return s.run(out), static


@pytest.mark.parametrize("single", [False, True])
def test_var_len_feature_is_a_sparse_tensor_value_as_tensorflow(tf1, single):
    recs = [_example(tf1, i).SerializeToString() for i in (0, 3, 1)]
    feats = lambda tf: {"tags": tf.io.VarLenFeature(tf.int64),  # noqa: E731
                        "name": tf.io.VarLenFeature(tf.string),
                        "x": tf.io.FixedLenFeature([2], tf.float32)}
    arg = recs[1] if single else recs
    exp, exp_static = _run_parse(tf1, arg, feats, single)
    got, got_static = _run_parse(fl, arg, feats, single)
    assert got_static == exp_static
    for k in exp:
        if k == "x":
            np.testing.assert_array_equal(got[k], exp[k])
            assert got[k].dtype == exp[k].dtype
            continue
        assert type(got[k]).__name__ == "SparseTensorValue"
        for field in ("indices", "values", "dense_shape"):
            e, a = getattr(exp[k], field), getattr(got[k], field)
            assert np.asarray(a).dtype == np.asarray(e).dtype, (k, field)
            assert np.asarray(a).tolist() == np.asarray(e).tolist(), (k, field)


PARSE_ERRORS = {
    "missing": (lambda tf: {"y": tf.io.FixedLenFeature([1], tf.int64)},
                "Feature: y (data type: int64) is required but could not be found."),
    "size": (lambda tf: {"id": tf.io.FixedLenFeature([2], tf.int64)},
             "Key: id.  Can't parse serialized Example: Some int64_list slice was not parsed."),
    "type": (lambda tf: {"id": tf.io.FixedLenFeature([3], tf.float32)},
             "Key: id.  Data types don't match. Data type: int64 but expected type: float"),
    "var_type": (lambda tf: {"id": tf.io.VarLenFeature(tf.string)},
                 "Key: id.  Data types don't match. Expected type: string, Actual type: int64"),
}


@pytest.mark.parametrize("case", sorted(PARSE_ERRORS))
def test_parse_errors_as_tensorflow(tf1, case):
    feats, message = PARSE_ERRORS[case]
    rec = _example(tf1, 2).SerializeToString()
    for tf in (tf1, fl):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            _run_parse(tf, rec, feats, single=True)
        assert message in e.value.message


def test_garbage_record_as_tensorflow(tf1):
    for tf in (tf1, fl):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            _run_parse(tf, [b"garbage\x01"], lambda t: {"x": t.io.VarLenFeature(t.int64)})
        assert "Could not parse example input, value: 'garbage\x01'" in e.value.message


def test_sparse_tensor_fetch_and_fields(tf1):
    def build(tf):
        g = tf.Graph()
        with g.as_default():
            st = tf.SparseTensor(indices=[[0, 1], [2, 3]], values=[1.5, 2.5], dense_shape=[3, 4])
            static = (st.shape.as_list(), st.dtype.name, st.indices.dtype.name,
                      st.dense_shape.dtype.name)
            with tf.Session() as s:
                v = s.run(st)
        return type(v).__name__, v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist(), static

    assert build(fl) == build(tf1)


def test_parse_example_names_and_top_level_aliases(tf1):
    for tf in (tf1, fl):
        assert tf.parse_example is not None and tf.FixedLenFeature is tf.io.FixedLenFeature
        assert tf.VarLenFeature is tf.io.VarLenFeature
        assert tf.python_io.TFRecordWriter is not None


def test_drain_example_pipeline_end_to_end(tmp_path):
    path = str(tmp_path / "e.tfrecord")
    _write_examples(fl, path, 3)
    got, types, _ = drain(fl, lambda tf: tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, {"id": tf.io.FixedLenFeature([3], tf.int64)})["id"]))
    assert [g.tolist() for g in got] == [[i, -i, 2**40] for i in range(3)]
    assert types.name == "int64"
