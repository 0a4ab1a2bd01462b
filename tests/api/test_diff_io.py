"""File formats and readers beside TensorFlow 1.x (tests/difftest.py): `tf.io`'s image
codecs and raw/CSV decoding, `tf.image.decode_*`, records (`tf.python_io`, the
`tf.train.Example` family of protos, `parse_single_example`), file readers and the
queue classes.  Image bytes come from Pillow or from TensorFlow's own encoders, so each
side decodes the same bytes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import flowlab as fl
from tests.difftest import assert_same, assert_same_error, run_with

RS = np.random.RandomState(5)
RGB = RS.randint(0, 256, size=(5, 7, 3)).astype(np.uint8)


def _pillow_bytes(fmt: str, arr: np.ndarray = RGB, **kw: Any) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def test_png_round_trip(tf1: Any) -> None:
    gray = RGB[..., :1]
    u16 = (RGB[..., 0].astype(np.uint16) * 257)[..., None]

    def build(tf: Any) -> Any:
        enc = tf.io.encode_png(tf.constant(RGB))
        return [
            tf.io.decode_png(enc),
            tf.io.decode_png(tf.io.encode_png(tf.constant(gray)), channels=1),
            tf.io.decode_png(enc, channels=1),
            tf.io.decode_png(enc, channels=4),
            tf.io.decode_png(tf.io.encode_png(tf.constant(u16)), dtype=tf.uint16),
            tf.io.decode_image(enc),
            tf.io.is_jpeg(enc),
        ]

    assert_same(tf1, build)


def test_decode_tensorflow_png(tf1: Any) -> None:
    png = run_with(tf1, lambda tf: tf.io.encode_png(tf.constant(RGB), compression=9))
    assert_same(tf1, lambda tf: [tf.io.decode_png(png), tf.io.decode_image(png, channels=3)])


def test_jpeg(tf1: Any) -> None:
    jpeg = run_with(tf1, lambda tf: tf.io.encode_jpeg(tf.constant(RGB), quality=90))

    def build(tf: Any) -> Any:
        return [
            tf.io.decode_jpeg(jpeg),
            tf.io.decode_jpeg(jpeg, channels=1),
            tf.io.decode_image(jpeg),
            tf.io.is_jpeg(jpeg),
            tf.io.decode_jpeg(tf.io.encode_jpeg(tf.constant(RGB), quality=95)).shape.as_list()
            and tf.shape(tf.io.decode_jpeg(tf.io.encode_jpeg(tf.constant(RGB), quality=95))),
        ]

    assert_same(tf1, build)


def test_bmp_and_gif(tf1: Any) -> None:
    bmp = _pillow_bytes("BMP")
    frames = [Image.fromarray(RGB), Image.fromarray(RGB[::-1].copy())]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    gif = buf.getvalue()

    def build(tf: Any) -> Any:
        return [
            tf.io.decode_bmp(bmp),
            tf.image.decode_bmp(bmp, channels=3),
            tf.io.decode_gif(gif),
            tf.image.decode_gif(gif),
            tf.io.decode_image(bmp),
            tf.io.decode_image(gif),
        ]

    assert_same(tf1, build)


def test_decode_bad_image_is_an_error(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        p = tf.placeholder(tf.string, [])
        return tf.io.decode_png(p), {p: b"not an image"}

    e, a = assert_same_error(tf1, build)
    assert type(e).__name__ == "InvalidArgumentError"


def test_decode_raw(tf1: Any) -> None:
    data = np.arange(6, dtype=np.int16).tobytes()
    f32 = np.array([1.5, -2.0], np.float32).tobytes()

    def build(tf: Any) -> Any:
        return [
            tf.io.decode_raw(tf.constant([data, data[::-1]]), tf.int16),
            tf.io.decode_raw(data, tf.uint8),
            tf.decode_raw(f32, tf.float32),
            tf.decode_raw(data, tf.int16, little_endian=False),
        ]

    assert_same(tf1, build)


def test_decode_csv(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        rows = tf.constant(["1,2.5,a", "3,,b", '4,5.0,"c,d"'])
        return tf.decode_csv(rows, [[0], [9.0], ["z"]])

    assert_same(tf1, build)

    def bad(tf: Any) -> Any:
        return tf.decode_csv(tf.constant(["1,2"]), [[0], [0], [0]])

    assert_same_error(tf1, bad)


def test_read_file_and_matching_files(tf1: Any, tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.dat"):
        (tmp_path / name).write_bytes(name.encode() * 2)
    pattern = str(tmp_path / "*.txt")

    def build(tf: Any) -> Any:
        files = tf.matching_files(pattern)
        return [
            tf.strings.regex_replace(files, ".*/", ""),
            tf.io.read_file(str(tmp_path / "c.dat")),
        ]

    assert_same(tf1, build)
    assert_same_error(tf1, lambda tf: tf.io.read_file(str(tmp_path / "missing")))


def _example(tf: Any) -> Any:
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 4])),
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, 1.5, 2.5])),
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"cat"])),
            }
        )
    )


def test_example_protos(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        ex = _example(tf)
        seq = tf.train.SequenceExample(
            context=tf.train.Features(
                feature={"id": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}
            ),
            feature_lists=tf.train.FeatureLists(
                feature_list={
                    "tok": tf.train.FeatureList(
                        feature=[
                            tf.train.Feature(int64_list=tf.train.Int64List(value=[5])),
                            tf.train.Feature(int64_list=tf.train.Int64List(value=[6, 7])),
                        ]
                    )
                }
            ),
        )
        saver_def = tf.train.SaverDef(filename_tensor_name="save/Const:0", max_to_keep=3)
        out.append(
            (
                ex.SerializeToString(deterministic=True),
                seq.SerializeToString(deterministic=True),
                saver_def.max_to_keep,
                list(ex.features.feature["x"].float_list.value),
            )
        )
    assert out[0] == out[1]


def test_saver_def_proto(tf1: Any) -> None:
    out = []
    for tf in (tf1, fl):
        d = tf.train.SaverDef(filename_tensor_name="save/Const:0")
        out.append((d.version, d.SerializeToString()))
    assert out[0] == out[1]


def test_parse_single_example(tf1: Any) -> None:
    serialized = _example(tf1).SerializeToString()

    def build(tf: Any) -> Any:
        parsed = tf.parse_single_example(
            serialized,
            {
                "label": tf.FixedLenFeature([2], tf.int64),
                "x": tf.VarLenFeature(tf.float32),
                "name": tf.FixedLenFeature([], tf.string),
                "missing": tf.FixedLenFeature([1], tf.float32, default_value=[7.0]),
            },
        )
        x = parsed["x"]
        return [
            parsed["label"],
            x.indices,
            x.values,
            x.dense_shape,
            parsed["name"],
            parsed["missing"],
        ]

    assert_same(tf1, build)


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_tfrecords(tf1: Any, tmp_path: Path, compression: str) -> None:
    records = [b"first", b"", b"third" * 50]
    kinds = {"none": "NONE", "gzip": "GZIP", "zlib": "ZLIB"}
    for tf, sub in ((tf1, "tf"), (fl, "fl")):
        kind = getattr(tf.python_io.TFRecordCompressionType, kinds[compression])
        assert int(kind) == int(getattr(tf1.io.TFRecordCompressionType, kinds[compression]))
        assert int(tf.io.TFRecordCompressionType.GZIP) == int(tf1.io.TFRecordCompressionType.GZIP)
        opts = tf.python_io.TFRecordOptions(kind)
        with tf.python_io.TFRecordWriter(str(tmp_path / sub), opts) as w:
            for r in records:
                w.write(r)
    # Each side reads the other's file.
    for tf, sub in ((tf1, "fl"), (fl, "tf")):
        kind = getattr(tf.python_io.TFRecordCompressionType, kinds[compression])
        got = list(
            tf.python_io.tf_record_iterator(str(tmp_path / sub), tf.python_io.TFRecordOptions(kind))
        )
        assert got == records
    if compression == "none":
        assert (tmp_path / "tf").read_bytes() == (tmp_path / "fl").read_bytes()


def _reader_program(tf: Any, root: Path) -> list[Any]:
    (root / "lines.txt").write_bytes(b"alpha\nbeta\n")
    (root / "fixed.bin").write_bytes(b"HDRabcdefTL")
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, tf.string)
        readers = [
            tf.TextLineReader(),
            tf.WholeFileReader(),
            tf.FixedLengthRecordReader(3, header_bytes=3, footer_bytes=2),
        ]
        assert all(isinstance(r, tf.ReaderBase) for r in readers)
        enq = q.enqueue_many(
            [[str(root / "lines.txt"), str(root / "lines.txt"), str(root / "fixed.bin")]]
        )
        reads = [r.read(q) for r in readers]
        out: list[Any] = []
        with tf.Session() as s:
            s.run(enq)
            s.run(q.close())
            k, v = s.run(reads[0])
            out.append((k.decode().rsplit("/", 1)[-1], v))
            out.append(s.run(reads[0])[1])
            k, v = s.run(reads[1])
            out.append((k.decode().rsplit("/", 1)[-1], v))
            out.append(s.run(reads[2])[1])
            out.append(s.run(reads[2])[1])
            out.append(s.run(readers[2].num_records_produced()))
            try:
                s.run(reads[2])
            except tf.errors.OutOfRangeError as e:
                out.append(type(e).__name__)
            out.append(s.run(readers[0].num_work_units_completed()))
        return out


def test_readers(tf1: Any, tmp_path: Path) -> None:
    (tmp_path / "tf").mkdir()
    (tmp_path / "fl").mkdir()
    assert _reader_program(fl, tmp_path / "fl") == _reader_program(tf1, tmp_path / "tf")


def test_queues(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        pq = tf.PriorityQueue(5, [tf.string], shapes=[[]])
        pad = tf.PaddingFIFOQueue(5, [tf.int32], shapes=[[None]])
        rq = tf.RandomShuffleQueue(10, 0, [tf.int32], shapes=[[]], seed=3)
        fq = tf.FIFOQueue(3, [tf.float32])
        assert all(isinstance(q, tf.QueueBase) for q in (pq, pad, rq, fq))
        e1 = pq.enqueue_many([tf.constant([3, 1, 2], tf.int64), tf.constant(["c", "a", "b"])])
        e2 = pad.enqueue(tf.constant([1, 2, 3]))
        with tf.control_dependencies([e2]):  # the two enqueues in order
            e3 = pad.enqueue(tf.constant([4]))
        e4 = rq.enqueue_many([tf.range(8)])
        with tf.control_dependencies([e1, e2, e3, e4]):
            pri = pq.dequeue_many(3)
            padded = pad.dequeue_many(2)
            shuffled = rq.dequeue_many(8)
        with tf.control_dependencies(pri + [padded]):  # sizes after the dequeues
            sizes = [pq.size(), pad.size(), tf.constant(pad.names is None), tf.constant(fq.name)]
        return [pri, padded, shuffled, sizes]

    assert_same(tf1, build)


def test_queue_base_from_list(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        q0 = tf.FIFOQueue(2, tf.int32, shapes=[[]], shared_name="q0")
        q1 = tf.FIFOQueue(2, tf.int32, shapes=[[]], shared_name="q1")
        q = tf.QueueBase.from_list(tf.constant(1), [q0, q1])
        with tf.control_dependencies([q.enqueue(tf.constant(7))]):
            return q1.dequeue()

    assert_same(tf1, build)
    out = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a = tf.FIFOQueue(2, [tf.int32, tf.float32], shapes=[[2, 3], [4]])
            b = tf.FIFOQueue(2, [tf.int32, tf.float32], shapes=[[2, 5], [4]])
            c = tf.FIFOQueue(2, [tf.int32], shapes=[[2]])
            q = tf.QueueBase.from_list(0, [a, b])
            row: list[Any] = [[s.as_list() for s in q.shapes], q.dtypes == a.dtypes]
            for queues in ([a, c], []):
                with pytest.raises(TypeError) as info:
                    tf.QueueBase.from_list(0, queues)
                row.append(str(info.value))
        out.append(row)
    assert out[0] == out[1]


def test_image_resize_and_transpose(tf1: Any) -> None:
    img = RGB.astype(np.float32)

    def build(tf: Any) -> Any:
        x = tf.constant(img)
        return [
            tf.image.resize(x, [3, 4]),
            tf.image.resize(x[None], [10, 14], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR),
            tf.image.resize(x, [4, 4], method=tf.image.ResizeMethod.BICUBIC),
            tf.image.resize(x, [4, 4], method=tf.image.ResizeMethod.AREA),
            tf.image.transpose(x),
            tf.image.transpose(tf.constant(RGB[None])),
        ]

    assert_same(tf1, build, rtol=1e-5, atol=1e-4)


def _record_reader_program(tf: Any, root: Path, compression: str) -> list[Any]:
    kind = getattr(tf.python_io.TFRecordCompressionType, compression)
    paths = [str(root / "a.tfr"), str(root / "b.tfr")]
    for path, recs in zip(paths, ([b"one", b"two" * 10], [b"", b"four"])):
        with tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions(kind)) as w:
            for r in recs:
                w.write(r)
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, tf.string)
        fill = q.enqueue_many([paths + [str(root / "missing.tfr")]])
        reader = tf.TFRecordReader(options=tf.python_io.TFRecordOptions(kind))
        ident = tf.IdentityReader()
        q2 = tf.FIFOQueue(4, tf.string)
        fill2 = q2.enqueue_many([["no/such/file", "other"]])
        key, value = reader.read(q)
        keys, values = reader.read_up_to(q, 5)
        out: list[Any] = [reader.supports_serialize, ident.supports_serialize]
        with tf.Session() as s:
            s.run([fill, fill2])
            k, v = s.run([key, value])
            out.append((k.decode().replace(str(root), ""), v))
            ks, vs = s.run([keys, values])  # the rest of a.tfr: up to the file's end
            out.append(([x.decode().replace(str(root), "") for x in ks], vs.tolist()))
            ks, vs = s.run([keys, values])
            out.append(([x.decode().replace(str(root), "") for x in ks], vs.tolist()))
            try:
                s.run(key)
            except tf.errors.OpError as e:
                out.append(type(e).__name__)
            out.append(s.run([reader.num_records_produced(), reader.num_work_units_completed()]))
            out.append(s.run(ident.read(q2)))
            out.append(s.run(ident.read_up_to(q2, 3)))
        return out


@pytest.mark.parametrize("compression", ["NONE", "GZIP", "ZLIB"])
def test_tf_record_and_identity_readers(tf1: Any, tmp_path: Path, compression: str) -> None:
    (tmp_path / "tf").mkdir()
    (tmp_path / "fl").mkdir()
    expected = _record_reader_program(tf1, tmp_path / "tf", compression)
    assert _record_reader_program(fl, tmp_path / "fl", compression) == expected


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_fixed_length_record_dataset(tf1: Any, tmp_path: Path, compression: str) -> None:
    import gzip

    payloads = [b"HDR" + b"abcdefghij" + b"FT", b"HDR" + b"klmnop" + b"FT"]
    paths = []
    for i, data in enumerate(payloads):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(gzip.compress(data) if compression else data)
        paths.append(str(path))

    def program(tf: Any) -> list[Any]:
        with tf.Graph().as_default():
            ds = tf.data.FixedLengthRecordDataset(
                paths, 2, header_bytes=3, footer_bytes=2, compression_type=compression
            )
            nxt = tf.data.make_one_shot_iterator(ds.batch(4)).get_next()
            out: list[Any] = [str(ds.output_shapes), ds.output_types.name]
            with tf.Session() as s:
                while True:
                    try:
                        out.append(s.run(nxt).tolist())
                    except tf.errors.OutOfRangeError:
                        break
            return out

    assert program(fl) == program(tf1)


def test_fixed_length_record_dataset_body_mismatch(tf1: Any, tmp_path: Path) -> None:
    path = tmp_path / "odd.bin"
    path.write_bytes(b"abcde")

    def build(tf: Any) -> Any:
        ds = tf.data.FixedLengthRecordDataset([str(path)], 2)
        return tf.data.make_one_shot_iterator(ds).get_next()

    e, a = assert_same_error(tf1, build)
    assert e.message.splitlines()[-2].strip() in a.message
