"""The on-disk checkpoint format (flowlab.kernels.checkpoint_format): raw arrays + a JSON
index, slices, checksums, and the errors for damaged or missing data."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowlab import errors
from flowlab.kernels import checkpoint_format as fmt

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "bool", "complex64", "complex128"]


def _prefix(tmp_path, name="ckpt/model"):
    return str(tmp_path / name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(tmp_path, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a", "s"], [a, a[0, 0]])
    r = fmt.CheckpointReader(p)
    got = r.get_tensor("a")
    assert got.dtype == np.dtype(dtype) and got.shape == (3, 5)
    np.testing.assert_array_equal(got, a)
    s = r.get_tensor("s")
    assert s.shape == () and s.dtype == np.dtype(dtype) and s == a[0, 0]
    assert r.get_variable_to_shape_map() == {"a": [3, 5], "s": []}


def test_strings_empty_tensors_and_files(tmp_path):
    p = _prefix(tmp_path)
    strs = np.array([[b"a", b""], [b"\xff\x00", "h\u00e9".encode()]], dtype=object)
    fmt.save_tensors(p, ["s", "e", "z"], [strs, np.zeros((0, 4), np.float32), np.float64(2.5)])
    r = fmt.CheckpointReader(p)
    got = r.get_tensor("s")
    assert got.dtype == object and got.tolist() == strs.tolist()
    assert r.get_tensor("e").shape == (0, 4)
    assert r.get_tensor("z") == 2.5
    assert str(r.get_variable_to_dtype_map()["s"]) in ("<dtype: 'string'>", "string")
    # TensorFlow's file names; no temporary file is left behind.
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["model.data-00000-of-00001", "model.index"]


def test_index_is_documented_json_and_data_is_raw_little_endian(tmp_path):
    p = _prefix(tmp_path)
    a = np.arange(6, dtype=">i4").reshape(2, 3)  # big-endian input is stored little-endian
    b = np.linspace(0, 1, 5)
    fmt.save_tensors(p, ["b", "a"], [b, a])
    doc = json.loads((tmp_path / "ckpt/model.index").read_text())
    assert doc["format"] == "flowlab-checkpoint" and doc["version"] == 2 and doc["num_shards"] == 1
    assert list(doc["tensors"]) == ["a", "b"]  # sorted by name
    ea = doc["tensors"]["a"]
    assert ea["dtype"] == "int32" and ea["shape"] == [2, 3]
    (piece,) = ea["slices"]
    assert piece["slice"] is None and piece["shard"] == 0 and piece["length"] == 24
    assert piece["offset"] % 64 == 0
    raw = (tmp_path / "ckpt/model.data-00000-of-00001").read_bytes()
    assert raw[piece["offset"]: piece["offset"] + 24] == a.astype("<i4").tobytes()
    eb = doc["tensors"]["b"]["slices"][0]
    assert raw[eb["offset"]: eb["offset"] + 40] == b.astype("<f8").tobytes()
    assert eb["sum64"] == fmt.checksums(b.astype("<f8").tobytes())


# --- slices -----------------------------------------------------------------------------
def test_parse_and_format_slice_specs():
    assert fmt.parse_shape_and_slice("") == (None, None)
    assert fmt.parse_shape_and_slice(b"10 4 0,5:-") == ((10, 4), ((0, 5), (0, 4)))
    assert fmt.parse_shape_and_slice("7 2,3") == ((7,), ((2, 3),))
    assert fmt.format_shape_and_slice((10, 4), ((0, 5), (0, 4))) == "10 4 0,5:-"
    for bad in ("10 4 0,5", "10 x -", "4 3,5", "4 -1,2", "3 1;2"):
        with pytest.raises(errors.InvalidArgumentError, match="Invalid shape_and_slice spec"):
            fmt.parse_shape_and_slice(bad)


def _save_in_slices(p, full, bounds):
    w = fmt.ShardWriter(p)
    for a, b in zip(bounds[:-1], bounds[1:]):
        w.add("t", full[a:b], full.shape, ((a, b - a), (0, full.shape[1])))
    fmt.write_index(p, w.finish(), 1)


def test_three_slices_read_whole_and_in_other_shardings(tmp_path):
    full = np.arange(70, dtype=np.float32).reshape(10, 7)
    p = _prefix(tmp_path)
    _save_in_slices(p, full, [0, 3, 7, 10])
    r = fmt.CheckpointReader(p)
    assert r.get_variable_to_shape_map() == {"t": [10, 7]}
    np.testing.assert_array_equal(r.get_tensor("t"), full)
    np.testing.assert_array_equal(r.read("t", "10 7 0,5:-"), full[:5])
    np.testing.assert_array_equal(r.read("t", "10 7 5,5:-"), full[5:])
    np.testing.assert_array_equal(r.read("t", "10 7 2,6:1,3"), full[2:8, 1:4])
    with pytest.raises(errors.InvalidArgumentError, match="full shape"):
        r.read("t", "10 8 0,5:-")


def test_uncovered_slice_is_not_found(tmp_path):
    full = np.ones((6, 2), np.float32)
    p = _prefix(tmp_path)
    _save_in_slices(p, full, [0, 2, 4])  # rows 4..5 never saved
    r = fmt.CheckpointReader(p)
    with pytest.raises(errors.NotFoundError, match="do not cover"):
        r.get_tensor("t")
    np.testing.assert_array_equal(r.read("t", "6 2 0,4:-"), full[:4])


def test_slice_value_must_match_its_spec(tmp_path):
    w = fmt.ShardWriter(_prefix(tmp_path))
    with pytest.raises(errors.InvalidArgumentError, match="has shape"):
        w.add("t", np.zeros((2, 2)), (6, 2), ((0, 3), (0, 2)))
    w.abort()
    assert not [f for f in os.listdir(tmp_path / "ckpt") if ".tmp-" in f]


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, 11), max_size=4, unique=True),
       lo=st.integers(0, 11), n=st.integers(0, 12))
def test_any_slice_of_any_sharding_property(tmp_path_factory, cuts, lo, n):
    full = np.arange(12 * 3, dtype=np.int64).reshape(12, 3)
    p = str(tmp_path_factory.mktemp("prop") / "m")
    _save_in_slices(p, full, [0, *sorted(cuts), 12])
    n = min(n, 12 - lo)
    got = fmt.CheckpointReader(p).read("t", f"12 3 {lo},{n}:-")
    np.testing.assert_array_equal(got, full[lo: lo + n])


def test_merge_checkpoints_renames_shards_and_merges_index(tmp_path):
    parts = [str(tmp_path / "m_temp/part-00000-of-00002"), str(tmp_path / "m_temp/part-00001-of-00002")]
    fmt.save_tensors(parts[0], ["a"], [np.arange(3)])
    fmt.save_tensors(parts[1], ["b"], [np.ones(2, np.float32)])
    dest = str(tmp_path / "m")
    fmt.merge_checkpoints(parts, dest)
    assert sorted(os.listdir(tmp_path)) == ["m.data-00000-of-00002", "m.data-00001-of-00002", "m.index"]
    r = fmt.CheckpointReader(dest)
    assert r.num_shards == 2
    np.testing.assert_array_equal(r.get_tensor("a"), np.arange(3))
    np.testing.assert_array_equal(r.get_tensor("b"), np.ones(2, np.float32))


# --- damage -----------------------------------------------------------------------------
def test_missing_tensor_and_missing_checkpoint(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.zeros(2)])
    with pytest.raises(errors.NotFoundError, match="Key nope not found in checkpoint"):
        fmt.CheckpointReader(p).get_tensor("nope")
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files"):
        fmt.CheckpointReader(p + "x")


def test_dtype_mismatch(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.zeros(2)])
    with pytest.raises(errors.InvalidArgumentError,
                       match="expected dtype float32 does not equal original dtype float64"):
        fmt.CheckpointReader(p).read("a", "", np.float32)


@pytest.mark.parametrize("small_blocks", [False, True])
def test_flipped_byte_is_data_loss_naming_file_and_tensor(tmp_path, monkeypatch, small_blocks):
    if small_blocks:  # several CRC blocks per tensor, moved by the thread pool
        monkeypatch.setattr(fmt, "CRC_BLOCK", 256)
    p = _prefix(tmp_path)
    a = np.arange(1000, dtype=np.float32)
    fmt.save_tensors(p, ["first", "w"], [np.ones(3), a])
    data = tmp_path / "ckpt/model.data-00000-of-00001"
    entry = json.loads((tmp_path / "ckpt/model.index").read_text())["tensors"]["w"]["slices"][0]
    assert len(entry["sum64"]) == (16 if small_blocks else 1)
    raw = bytearray(data.read_bytes())
    raw[entry["offset"] + 1234] ^= 0x40
    data.write_bytes(bytes(raw))
    r = fmt.CheckpointReader(p)
    np.testing.assert_array_equal(r.get_tensor("first"), np.ones(3))  # undamaged tensor
    with pytest.raises(errors.DataLossError) as ei:
        r.get_tensor("w")
    msg = str(ei.value)
    assert "model.data-00000-of-00001" in msg and "'w'" in msg and "checksum does not match" in msg
    if small_blocks:
        assert "bytes [1024, 1280)" in msg


def test_truncated_data_file(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a", "b"], [np.zeros(10), np.arange(100.0)])
    data = tmp_path / "ckpt/model.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-8])
    r = fmt.CheckpointReader(p)
    assert r.get_tensor("a").shape == (10,)
    with pytest.raises(errors.DataLossError, match=r"model.data-00000-of-00001, tensor 'b'.*truncated"):
        r.get_tensor("b")
    data.unlink()
    # The open reader keeps the file it opened; a new one finds it missing.
    assert r.get_tensor("a").shape == (10,)
    with pytest.raises(errors.DataLossError, match="data file is missing"):
        fmt.CheckpointReader(p).get_tensor("a")


@pytest.mark.parametrize("damage", [lambda t: t[: len(t) // 2], lambda t: "{}", lambda t: "\x00\xff"])
def test_damaged_index_is_data_loss(tmp_path, damage):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.zeros(2)])
    idx = tmp_path / "ckpt/model.index"
    idx.write_text(damage(idx.read_text()))
    with pytest.raises(errors.DataLossError, match="model.index is corrupted or truncated"):
        fmt.CheckpointReader(p)


def test_failed_save_keeps_the_previous_checkpoint(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.arange(4)])
    before = sorted(os.listdir(tmp_path / "ckpt"))
    with pytest.raises(errors.InvalidArgumentError):
        fmt.save_tensors(p, ["a", "a"], [np.arange(4), np.arange(5)])  # same name twice
    assert sorted(os.listdir(tmp_path / "ckpt")) == before  # temporary file removed
    np.testing.assert_array_equal(fmt.CheckpointReader(p).get_tensor("a"), np.arange(4))


def test_remove_checkpoint_and_exists(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.arange(4)])
    assert fmt.checkpoint_exists(p)
    assert [os.path.basename(f) for f in fmt.checkpoint_files(p)] == [
        "model.data-00000-of-00001", "model.index"]
    fmt.remove_checkpoint(p)
    assert not fmt.checkpoint_exists(p) and os.listdir(tmp_path / "ckpt") == []


# --- the block checksum -------------------------------------------------------------------
def _damaged(raw: bytes, kind: str) -> bytes:
    b = bytearray(raw)
    if kind == "bit":
        b[777] ^= 0x01
    elif kind == "zeroed":
        b[1024:1536] = bytes(512)
    elif kind == "chunks_swapped":
        b[0:512], b[512:1024] = b[512:1024], b[0:512]
    elif kind == "tail":
        b[-1] ^= 0x80
    elif kind == "shifted":
        b = b[1:] + b[:1]
    return bytes(b)


@pytest.mark.parametrize("kind", ["bit", "zeroed", "chunks_swapped", "tail", "shifted"])
def test_block_checksum_catches_damage(kind):
    raw = np.random.default_rng(1).standard_normal(1000).astype(np.float32).tobytes() + b"xyz"
    assert fmt.block_checksum(_damaged(raw, kind)) != fmt.block_checksum(raw)


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=0, max_size=3000), st.integers(0, 2999), st.integers(1, 255))
def test_block_checksum_changes_with_any_single_byte(data, pos, flip):
    if not data:
        assert fmt.block_checksum(data) == 0
        return
    b = bytearray(data)
    b[pos % len(b)] ^= flip
    assert fmt.block_checksum(bytes(b)) != fmt.block_checksum(data)


@pytest.mark.parametrize("small_blocks", [False, True])
def test_version_1_crc32_checkpoints_still_read_and_verify(tmp_path, monkeypatch, small_blocks):
    import zlib

    if small_blocks:
        monkeypatch.setattr(fmt, "CRC_BLOCK", 256)
    p = _prefix(tmp_path)
    a = np.arange(1000, dtype=np.float32)
    fmt.save_tensors(p, ["w"], [a])
    index = tmp_path / "ckpt/model.index"
    doc = json.loads(index.read_text())
    piece = doc["tensors"]["w"]["slices"][0]
    raw = a.tobytes()
    blocks = range(0, len(raw), fmt.CRC_BLOCK)
    piece["crc32"] = [zlib.crc32(raw[i: i + fmt.CRC_BLOCK]) for i in blocks]
    del piece["sum64"]
    doc["version"] = 1
    index.write_text(json.dumps(doc))
    np.testing.assert_array_equal(fmt.CheckpointReader(p).get_tensor("w"), a)
    data = tmp_path / "ckpt/model.data-00000-of-00001"
    damaged = bytearray(data.read_bytes())
    damaged[piece["offset"] + 999] ^= 0x10
    data.write_bytes(bytes(damaged))
    with pytest.raises(errors.DataLossError, match="checksum does not match"):
        fmt.CheckpointReader(p).get_tensor("w")
    del piece["crc32"]
    index.write_text(json.dumps(doc))
    with pytest.raises(errors.DataLossError, match="holds no checksum"):
        fmt.CheckpointReader(p).get_tensor("w")


# --- the atomic save (flowlab.kernels.checkpoint_commit) ----------------------------------
def test_saving_one_prefix_again_keeps_tensorflow_names_and_drops_old_shards(tmp_path):
    from flowlab.kernels import checkpoint_commit as commit

    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.arange(3)])
    commit.trace = []
    try:
        fmt.save_tensors(p, ["a"], [np.arange(3) + 10])
        ops = [(k, os.path.basename(x)) for k, x in commit.trace]
    finally:
        commit.trace = None
    kinds = [k for k, _ in ops]
    # New data under a fresh name, then the switch (an index rename), then the names.
    assert kinds == ["create", "create", "rename", "unlink", "link", "create", "rename", "unlink"]
    assert ops[2] == ("rename", "model.index") and ops[4] == ("link", "model.data-00000-of-00001")
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["model.data-00000-of-00001", "model.index"]
    np.testing.assert_array_equal(fmt.CheckpointReader(p).get_tensor("a"), np.arange(3) + 10)
    # A merge into the same prefix with two shards: the one-shard data file goes.
    parts = [str(tmp_path / f"ckpt/model_temp/part-0000{i}-of-00002") for i in range(2)]
    fmt.save_tensors(parts[0], ["a"], [np.arange(2)])
    fmt.save_tensors(parts[1], ["b"], [np.ones(1)])
    fmt.merge_checkpoints(parts, p)
    assert sorted(os.listdir(tmp_path / "ckpt")) == [
        "model.data-00000-of-00002", "model.data-00001-of-00002", "model.index"]


def test_the_next_save_removes_leftovers_and_keeps_what_indexes_name(tmp_path):
    p = _prefix(tmp_path)
    fmt.save_tensors(p, ["a"], [np.arange(3)])
    d = tmp_path / "ckpt"
    for name in ["model.data-00000-of-00001.tmp-0123456789ab", "model.index.tmp-aaaaaaaaaaaa",
                 "checkpoint.tmp-bbbbbbbbbbbb", "old.data-00000-of-00001", "notes.txt"]:
        (d / name).write_bytes(b"x" * 10)
    dead = d / ("model_temp_" + "c" * 32)
    dead.mkdir()
    (dead / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x")
    fmt.save_tensors(str(d / "other"), ["b"], [np.ones(2)])
    assert sorted(os.listdir(d)) == ["model.data-00000-of-00001", "model.index", "notes.txt",
                                     "other.data-00000-of-00001", "other.index"]
    np.testing.assert_array_equal(fmt.CheckpointReader(p).get_tensor("a"), np.arange(3))


def test_unreadable_state_file_is_no_state(tmp_path):
    import flowlab as fl

    (tmp_path / "checkpoint").write_bytes(b"\xff\xfe\x00garbage")
    assert fl.train.get_checkpoint_state(str(tmp_path)) is None
    assert fl.train.latest_checkpoint(str(tmp_path)) is None
