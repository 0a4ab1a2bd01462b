"""Readers and parsers: decode_csv, decode_raw, read_file and the file readers,
against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import io_ops
from tests.difftest import assert_same, assert_same_error


def IO(tf):
    """The module holding the reader classes and parsers (flowlab's io_ops until the
    top level re-exports them)."""
    return io_ops if tf is fl else tf


# --- parsers ---------------------------------------------------------------------------
def test_decode_csv_values_and_defaults(tf1):
    def build(tf):
        recs = tf.constant(['1,2.5,"a,b",4', ",,x,5", ' 7 , 1e3 ,"q""r",-1'])
        return IO(tf).decode_csv(recs, [[1], [1.0], ["z"], tf.constant([], tf.int64)])

    assert_same(tf1, build)


def test_decode_csv_scalar_and_delim(tf1):
    assert_same(tf1, lambda tf: IO(tf).decode_csv("1", [[2]]))
    assert_same(tf1, lambda tf: IO(tf).decode_csv(["3;4"], [[2], [3.0]], field_delim=";"))
    assert_same(tf1, lambda tf: IO(tf).decode_csv([["1,2"], ["3,4"]], [[0.0], [np.float64(0)]]))


def test_decode_csv_na_value_and_select_cols(tf1):
    assert_same(tf1, lambda tf: IO(tf).decode_csv(["1,NA,3", "4,5,6"], [[0], [-1]], na_value="NA",
                                                  select_cols=[1, 2]))


@pytest.mark.parametrize("records,match", [
    (["1,2,3"], "Expect 2 fields but have 3 in record 0"),
    (["a,2"], "Field 0 in record 0 is not a valid int32: a"),
    (["1,"], "Field 1 is required but missing in record 0"),
])
def test_decode_csv_errors(tf1, records, match):
    def build(tf):
        return IO(tf).decode_csv(records, [[1], tf.constant([], tf.float32)])

    _, err = assert_same_error(tf1, build)
    assert isinstance(err, errors.InvalidArgumentError)
    assert match in str(err)


def test_decode_csv_graph(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            outs = IO(mod).decode_csv(mod.placeholder(mod.string, [3]), [[1], [1.0], ["x"]])
            assert [o.dtype.name for o in outs] == ["int32", "float32", "string"]
            assert [o.shape.as_list() for o in outs] == [[3]] * 3
            assert outs[0].op.type == "DecodeCSV"


def test_decode_raw(tf1):
    assert_same(tf1, lambda tf: IO(tf).decode_raw(tf.constant(["abcd", "efgh"]), tf.int16))
    assert_same(tf1, lambda tf: IO(tf).decode_raw("abcd", tf.uint8))
    assert_same(tf1, lambda tf: IO(tf).decode_raw(["abcdefgh"], tf.float32, little_endian=False))
    assert_same(tf1, lambda tf: IO(tf).decode_raw(["\x01\x00\x00\x00\x00\x00\x00\x00"], tf.int64))


def test_decode_raw_errors(tf1):
    _, err = assert_same_error(tf1, lambda tf: IO(tf).decode_raw(["abc"], tf.int16))
    assert "not a multiple of 2" in str(err)
    _, err = assert_same_error(tf1, lambda tf: IO(tf).decode_raw(["ab", "abcd"], tf.int16))
    assert "same size" in str(err)


def test_decode_raw_shape(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            d = IO(mod).decode_raw(mod.placeholder(mod.string, [2]), mod.int32)
            assert d.shape.as_list() == [2, None]


def test_read_file(tf1, tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"hello\x00world")
    assert_same(tf1, lambda tf: IO(tf).read_file(str(p)))
    _, err = assert_same_error(tf1, lambda tf: IO(tf).read_file(str(tmp_path / "missing")))
    assert isinstance(err, errors.NotFoundError)


# --- readers ---------------------------------------------------------------------------
def _read_all(tf, build):
    """Run a reader pipeline (no queue runners: the file names are enqueued by hand)
    until OutOfRange; returns the records."""
    g = tf.Graph()
    with g.as_default():
        built = build(tf)
        names, fetch = built[:2]
        with tf.Session() as sess:
            for op in names:  # enqueue, then close: one step each
                sess.run(op)
            out = []
            err = errors.OutOfRangeError if tf is fl else tf.errors.OutOfRangeError
            try:
                for _ in range(100):
                    out.append(sess.run(fetch))
            except err:
                pass
            if len(built) == 3:  # counters, read after the records
                out.append(sess.run(built[2]))
    return out


def _queue(tf, files):
    from flowlab.ops import data_flow_ops

    mod = data_flow_ops if tf is fl else tf
    q = mod.FIFOQueue(10, tf.string, shapes=[[]])
    return q, [q.enqueue_many([files]), q.close()]


def _files(tmp_path):
    a = tmp_path / "a.csv"
    a.write_bytes(b"h\n1,2.5,a\n3,4,b\r\n\n")
    b = tmp_path / "b.csv"
    b.write_bytes(b"x\n5,6,c\n7,,d")
    e = tmp_path / "empty.csv"
    e.write_bytes(b"")
    return [str(a), str(e), str(b)]


def test_text_line_reader(tf1, tmp_path):
    files = _files(tmp_path)

    def build(tf):
        q, setup = _queue(tf, files)
        r = IO(tf).TextLineReader(skip_header_lines=1)
        k, v = r.read(q)
        return setup, [k, v], [r.num_records_produced(), r.num_work_units_completed()]

    expected = _read_all(tf1, build)
    actual = _read_all(fl, build)
    assert [list(map(_plain, e)) for e in actual] == [list(map(_plain, e)) for e in expected]
    assert len(actual) == 6
    assert actual[-1] == [5, 3]


def _plain(x):
    return x.tolist() if isinstance(x, np.ndarray) else (int(x) if isinstance(x, np.integer) else x)


def test_fixed_length_reader_with_hop(tf1, tmp_path):
    p = tmp_path / "r.bin"
    p.write_bytes(bytes(range(1 + 4 * 3 + 2)))

    for hop in (0, 3):
        def build(tf, hop=hop):
            q, setup = _queue(tf, [str(p)])
            k, v = IO(tf).FixedLengthRecordReader(4, header_bytes=1, footer_bytes=2, hop_bytes=hop).read(q)
            return setup, [k, IO(tf).decode_raw(v, tf.uint8)]

        expected = _read_all(tf1, build)
        actual = _read_all(fl, build)
        assert [list(map(_plain, e)) for e in actual] == [list(map(_plain, e)) for e in expected]


def test_whole_file_reader_and_read_up_to(tf1, tmp_path):
    files = _files(tmp_path)

    def build_whole(tf):
        q, setup = _queue(tf, files)
        return setup, list(IO(tf).WholeFileReader().read(q))

    assert [list(map(_plain, e)) for e in _read_all(fl, build_whole)] == \
        [list(map(_plain, e)) for e in _read_all(tf1, build_whole)]

    def build_up_to(tf):
        q, setup = _queue(tf, files)
        return setup, list(IO(tf).TextLineReader().read_up_to(q, 2))

    fl_batches = _read_all(fl, build_up_to)
    tf_batches = _read_all(tf1, build_up_to)
    flat = [x for b in fl_batches for x in b[1].tolist()]
    assert flat == [x for b in tf_batches for x in b[1].tolist()]


def test_reader_graph(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            r = IO(mod).TextLineReader(skip_header_lines=1)
            q, _ = _queue(mod, ["x"])
            k, v = r.read(q)
            assert r.reader_ref.dtype == mod.resource
            assert (k.op.name, k.op.type, k.dtype, v.dtype) == ("ReaderReadV2", "ReaderReadV2",
                                                                  mod.string, mod.string)
            assert r.reader_ref.op.get_attr("skip_header_lines") == 1


def test_reader_waits_for_file_names_and_times_out():
    q, _ = _queue(fl, [])
    k, _ = io_ops.TextLineReader().read(q)
    with fl.Session() as sess:
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(k, options=fl.RunOptions(timeout_in_ms=20))


def test_missing_file_is_not_found(tmp_path):
    q, setup = _queue(fl, [str(tmp_path / "nope.txt")])
    k, _ = io_ops.TextLineReader().read(q)
    with fl.Session() as sess:
        for op in setup:
            sess.run(op)
        with pytest.raises(errors.NotFoundError, match="nope.txt"):
            sess.run(k)


def test_matching_files(tf1, tmp_path):
    for n in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / n).write_text("x")
    assert_same(tf1, lambda tf: IO(tf).matching_files(str(tmp_path / "*.txt")) if tf is fl
                else tf.io.matching_files(str(tmp_path / "*.txt")))


def test_match_filenames_once_feeds_a_producer(tmp_path):
    for n in ("b.txt", "a.txt"):
        (tmp_path / n).write_text("x")
    m = fl.train.match_filenames_once(str(tmp_path / "*.txt"))
    assert m.op.type == "VariableV2" and m.name == "matching_filenames:0"
    q = fl.train.string_input_producer(m, num_epochs=1, shuffle=False)
    with fl.Session() as sess:
        sess.run(fl.local_variables_initializer())
        coord = fl.train.Coordinator()
        threads = fl.train.start_queue_runners(sess, coord)
        got = [sess.run(q.dequeue()), sess.run(q.dequeue())]
        coord.request_stop()
        coord.join(threads)
    assert got == [str(tmp_path / "a.txt").encode(), str(tmp_path / "b.txt").encode()]
