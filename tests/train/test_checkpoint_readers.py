"""Readers survive every file: crafted and fuzzed (hypothesis) checkpoint indexes,
data files and meta graphs give DataLossError naming the file and the entry -- never
a crash, a raw Python error, or an allocation larger than the files."""

from __future__ import annotations

import copy
import json
import os
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab import errors
from flowlab.kernels import checkpoint_format as fmt
from flowlab.kernels import checkpoint_reader  # noqa: F401  (imported before memory is traced)

# --- a checkpoint to damage ------------------------------------------------------------
VALUES = {
    "w": np.arange(12, dtype=np.float32).reshape(3, 4),
    "step": np.int64(42),
    "names": np.array([b"ab", b"", b"\xff" * 5], dtype=object),
    "flag": np.array([True, False]),
}


def _write_checkpoint(d: str) -> str:
    p = os.path.join(d, "model")
    w = fmt.ShardWriter(p)
    for name, value in VALUES.items():
        w.add(name, value)
    part = np.arange(10, dtype=np.int32)  # a tensor saved as two slices
    w.add("sliced", part[:6], (10,), ((0, 6),))
    w.add("sliced", part[6:], (10,), ((6, 4),))
    fmt.write_index(p, w.finish(), 1)
    return p


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("template"))
    p = _write_checkpoint(d)
    return json.loads(Path(p + ".index").read_text()), Path(p + ".data-00000-of-00001").read_bytes()


def _read_everything(prefix: str) -> dict:
    with fmt.CheckpointReader(prefix) as r:
        r.get_variable_to_shape_map()
        r.get_variable_to_dtype_map()
        return {name: r.get_tensor(name) for name in r.tensors}


def _files_size(prefix: str) -> int:
    d = os.path.dirname(prefix)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def _check_reader(prefix: str) -> str:
    """Read all of checkpoint `prefix`: values or DataLossError/NotFoundError naming a
    file; memory within 2x the files' size (plus the parsed index's objects)."""
    budget = 2 * _files_size(prefix) + (256 << 10)
    tracemalloc.start()
    try:
        try:
            values = _read_everything(prefix)
            outcome = "read"
        except errors.DataLossError as e:
            assert os.path.basename(prefix) in str(e), str(e)
            outcome = "DataLossError"
        except errors.NotFoundError as e:  # pieces that do not cover their tensor
            assert "do not cover" in str(e) or "not found" in str(e), str(e)
            outcome = "NotFoundError"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= budget, f"peak {peak} bytes for {budget // 2} bytes of files"
    if outcome == "read":
        for v in values.values():
            assert isinstance(v, (np.ndarray, np.generic))
    return outcome


def _with_index(doc_or_bytes, data: bytes) -> str:
    d = tempfile.mkdtemp(prefix="fuzz-")
    p = os.path.join(d, "model")
    raw = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
    Path(p + ".index").write_bytes(raw)
    Path(p + ".data-00000-of-00001").write_bytes(data)
    return p


def _entry_of(doc: dict, name: str) -> dict:
    return doc["tensors"][name]


# --- the probes of the issue, and more ---------------------------------------------------
def test_object_dtype_is_data_loss_not_a_segfault(template):
    doc, data = copy.deepcopy(template[0]), template[1]
    _entry_of(doc, "w")["dtype"] = "O,O"
    p = _with_index(doc, data)
    with pytest.raises(errors.DataLossError,
                       match=r"model\.index is corrupted.*tensor 'w' dtype: 'O,O' is not one of bool"):
        fl.train.load_variable(p, "w")


@pytest.mark.parametrize("claimed", [2 * 10**9, 10**10, 1 << 62])
def test_string_claiming_more_bytes_than_the_file_allocates_nothing(tmp_path, claimed):
    p = str(tmp_path / "model")
    fmt.save_tensors(p, ["s"], [np.array([b"hello"], dtype=object)])
    doc = json.loads(Path(p + ".index").read_text())
    piece = doc["tensors"]["s"]["slices"][0]
    piece["length"] = claimed
    piece["sum64"] = [0] * -(-claimed // fmt.CRC_BLOCK) if claimed < 1 << 40 else [0]
    Path(p + ".index").write_text(json.dumps(doc))
    tracemalloc.start()
    try:
        with pytest.raises(errors.DataLossError, match=r"tensor 's'") as ei:
            fl.train.load_variable(p, "s")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(tmp_path / "model") in str(ei.value)
    assert peak < 64 << 20  # the checksum list of a 10 GB claim is the largest thing made


def test_shape_of_a_trillion_elements_allocates_nothing(template):
    doc, data = copy.deepcopy(template[0]), template[1]
    e = _entry_of(doc, "w")
    e["shape"] = [10**6, 10**6]
    e["slices"][0]["length"] = 4 * 10**12
    p = _with_index(doc, data)
    tracemalloc.start()
    try:
        with pytest.raises(errors.DataLossError, match=r"tensor 'w'"):
            fl.train.load_variable(p, "w")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


MALFORMED = {
    "top level a list": (lambda d: [d], "expected an object"),
    "tensors a list": (lambda d: dict(d, tensors=[1]), "'tensors': expected an object"),
    "no dtype": (lambda d: _drop(d, "w", "dtype"), "tensor 'w': missing field 'dtype'"),
    "shape a string": (lambda d: _set(d, "w", "shape", "3,4"), "tensor 'w' shape"),
    "negative dim": (lambda d: _set(d, "w", "shape", [-3, 4]), "tensor 'w' shape[0]"),
    "float dim": (lambda d: _set(d, "w", "shape", [3.0, 4]), "tensor 'w' shape[0]: expected an integer"),
    "bool dim": (lambda d: _set(d, "w", "shape", [True, 4]), "expected an integer, got bool"),
    "slices a dict": (lambda d: _set(d, "w", "slices", {}), "tensor 'w' slices"),
    "shard a string": (lambda d: _piece(d, "w", "shard", "0"), "tensor 'w' slice 0 'shard'"),
    "shard out of range": (lambda d: _piece(d, "w", "shard", 3), "'shard': 3 is out of range"),
    "negative offset": (lambda d: _piece(d, "w", "offset", -64), "'offset': -64 is out of range"),
    "length null": (lambda d: _piece(d, "w", "length", None), "'length': expected an integer"),
    "length lies": (lambda d: _piece(d, "w", "length", 44), "shape [3, 4] of float32 needs 48"),
    "checksum a string": (lambda d: _piece(d, "w", "sum64", "123"), "'sum64'"),
    "slice out of bounds": (lambda d: _piece(d, "sliced", "slice", [[6, 6]]), "'slice'[0] length"),
    "overlapping pieces": (lambda d: _piece(d, "flag", "offset", 0), "overlap"),
    "num_shards zero": (lambda d: dict(d, num_shards=0), "'num_shards': 0 is out of range"),
    "num_shards a string": (lambda d: dict(d, num_shards="1"), "'num_shards': expected an integer"),
    "version 99": (lambda d: dict(d, version=99), "'version'"),
    "other format": (lambda d: dict(d, format="pickle"), "'format'"),
    "data file elsewhere": (lambda d: dict(d, data_files=["../../etc/passwd"]),
                            "'data_files'[0]: '../../etc/passwd' is not a data file name"),
    "unknown field": (lambda d: _set(d, "w", "pickle", "x"), "unknown field 'pickle'"),
}


def _set(d, name, key, value):
    d["tensors"][name][key] = value
    return d


def _drop(d, name, key):
    del d["tensors"][name][key]
    return d


def _piece(d, name, key, value):
    d["tensors"][name]["slices"][0][key] = value
    return d


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_index_is_data_loss_naming_file_and_entry(template, case):
    damage, message = MALFORMED[case]
    p = _with_index(damage(copy.deepcopy(template[0])), template[1])
    with pytest.raises(errors.DataLossError) as ei:
        _read_everything(p)
    msg = str(ei.value)
    assert f"Checkpoint index {p}.index is corrupted or truncated" in msg, msg
    assert message in msg, msg


def test_untouched_template_reads_back(template):
    p = _with_index(copy.deepcopy(template[0]), template[1])
    got = _read_everything(p)
    np.testing.assert_array_equal(got["w"], VALUES["w"])
    assert got["step"] == 42 and got["names"].tolist() == VALUES["names"].tolist()
    np.testing.assert_array_equal(got["sliced"], np.arange(10, dtype=np.int32))


# --- fuzzing -------------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
    | st.sampled_from(["O,O", "float32", "string", "int64", "<f4", "V8", "", "model.data-00000-of-00001"])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _paths(doc, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _mutated(doc, path, how, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if how == "delete":
        del parent[key]
    elif how == "replace":
        parent[key] = value
    else:  # "wrap": the value inside a list
        parent[key] = [parent[key]]
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_index_never_crashes_or_overallocates(template, data):
    doc = template[0]
    paths = [p for p, _ in _paths(doc)]
    mutations = data.draw(st.integers(1, 3))
    for _ in range(mutations):
        paths = [p for p, _ in _paths(doc)] if isinstance(doc, (dict, list)) else [()]
        path = data.draw(st.sampled_from(paths))
        how = data.draw(st.sampled_from(["replace", "replace", "delete", "wrap"]))
        doc = _mutated(doc, path, how if path else "replace", data.draw(JSON))
    _check_reader(_with_index(doc, template[1]))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut=st.integers(0, 2000), pos=st.integers(0, 10**6), flip=st.integers(1, 255),
       which=st.sampled_from(["index", "data"]))
def test_fuzzed_bytes_of_index_and_data_never_crash(template, cut, pos, flip, which):
    raw_index = json.dumps(template[0]).encode()
    data = template[1]
    if which == "index":
        b = bytearray(raw_index[: max(1, len(raw_index) - cut % len(raw_index))])
        b[pos % len(b)] ^= flip
        raw_index = bytes(b)
    else:
        b = bytearray(data[: len(data) - cut % len(data)])
        b[pos % len(b)] ^= flip
        data = bytes(b)
    _check_reader(_with_index(raw_index, data))


# --- meta graphs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def meta_template(tmp_path_factory):
    d = tmp_path_factory.mktemp("meta")
    with fl.Graph().as_default() as g:
        x = fl.placeholder(fl.float32, [None, 3], name="x")
        w = fl.Variable(np.ones((3, 2), np.float32), name="w")
        y = fl.matmul(x, w, name="y")
        fl.add_to_collection("outputs", y)
        fl.add_to_collection("numbers", 7)
        saver = fl.train.Saver()
        with fl.Session(graph=g) as sess:
            sess.run(fl.global_variables_initializer())
            path = saver.save(sess, str(d / "model"))
    return json.loads(Path(path + ".meta").read_text())


def _import(meta_doc_or_bytes):
    d = tempfile.mkdtemp(prefix="meta-")
    path = os.path.join(d, "model.meta")
    raw = meta_doc_or_bytes if isinstance(meta_doc_or_bytes, bytes) else json.dumps(meta_doc_or_bytes).encode()
    Path(path).write_bytes(raw)
    with fl.Graph().as_default() as g:
        return fl.train.import_meta_graph(path), g, path


def test_meta_graph_template_imports(meta_template):
    saver, g, _ = _import(meta_template)
    assert saver is not None and g.get_collection("numbers") == [7]
    assert g.get_collection("outputs")[0].name == "y:0"


META_MALFORMED = {
    "pickle format": (lambda m: dict(m, format="pickle"), "'format': expected 'flowlab-meta-graph', got 'pickle'"),
    "no graph_def": (lambda m: {k: v for k, v in m.items() if k != "graph_def"}, "missing field 'graph_def'"),
    "graph_def a list": (lambda m: dict(m, graph_def=[]), "'graph_def': expected an object"),
    "collection kind": (lambda m: _coll(m, "numbers", kind="pickle"), "collection_def['numbers'] 'kind'"),
    "collection value": (lambda m: _coll(m, "numbers", value="7"), "collection_def['numbers'] 'value'"),
    "node list names nothing": (lambda m: _coll(m, "outputs", value=["nope:0"]),
                                "collection_def['outputs'] value 0: 'nope:0' is not a node"),
    "variable field type": (lambda m: _var(m, "variable_name", 3), "'variable_name': expected a string"),
    "saver_def field type": (lambda m: _sd(m, "max_to_keep", "5"), "'saver_def' 'max_to_keep': expected int"),
    "saver_def unknown tensor": (lambda m: _sd(m, "restore_op_name", "nope"), "'saver_def' 'restore_op_name'"),
    "saver_def unknown field": (lambda m: _sd(m, "pickled", True), "unknown field 'pickled'"),
    "bad node": (lambda m: _node0(m, "op", "NoSuchOp"), "'graph_def'"),
    "unknown top field": (lambda m: dict(m, payload="x"), "unknown field 'payload'"),
}


def _coll(m, key, **kw):
    m["collection_def"][key].update(kw)
    return m


def _var(m, field, value):
    key = next(k for k, c in m["collection_def"].items() if c["kind"] == "variables")
    m["collection_def"][key]["value"][0][field] = value
    return m


def _sd(m, field, value):
    m["saver_def"][field] = value
    return m


def _node0(m, field, value):
    m["graph_def"]["node"][0][field] = value
    return m


@pytest.mark.parametrize("case", sorted(META_MALFORMED))
def test_malformed_meta_graph_is_data_loss_naming_file_and_entry(meta_template, case):
    damage, message = META_MALFORMED[case]
    d = tempfile.mkdtemp(prefix="meta-")
    path = os.path.join(d, "model.meta")
    Path(path).write_text(json.dumps(damage(copy.deepcopy(meta_template))))
    with fl.Graph().as_default() as g:
        with pytest.raises(errors.DataLossError) as ei:
            fl.train.import_meta_graph(path)
        assert g.get_operations() == []  # nothing was added
    msg = str(ei.value)
    assert f"Meta graph file {path} is malformed" in msg and message in msg, msg


def test_meta_graph_not_json_or_missing(tmp_path):
    bad = tmp_path / "bad.meta"
    bad.write_bytes(b"\x80\x04\x95 pickle bytes")
    with pytest.raises(errors.DataLossError, match=rf"Meta graph file {bad} is corrupted"):
        fl.train.import_meta_graph(str(bad))
    bad.write_text("[" * 100000)
    with pytest.raises(errors.DataLossError, match="RecursionError"):
        fl.train.import_meta_graph(str(bad))
    with pytest.raises(OSError, match="File does not exist. Received: .*nope.meta"):
        fl.train.import_meta_graph(str(tmp_path / "nope.meta"))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_meta_graph_never_raises_a_raw_error(meta_template, data):
    doc = meta_template
    for _ in range(data.draw(st.integers(1, 2))):
        paths = [p for p, _ in _paths(doc)] if isinstance(doc, (dict, list)) else [()]
        path = data.draw(st.sampled_from(paths))
        how = data.draw(st.sampled_from(["replace", "replace", "delete", "wrap"]))
        doc = _mutated(doc, path, how if path else "replace", data.draw(JSON))
    try:
        _import(doc)
    except errors.DataLossError as e:
        assert "model.meta is" in str(e), str(e)


def test_index_claiming_many_shards_reads_what_is_there(template):
    doc = copy.deepcopy(template[0])
    doc["num_shards"] = 99999
    doc.pop("data_files", None)
    _piece(doc, "w", "shard", 5000)
    p = _with_index(doc, template[1])  # only a data file "model.data-00000-of-00001"
    with fmt.CheckpointReader(p) as r:
        with pytest.raises(errors.DataLossError,
                           match=r"model\.data-05000-of-99999, tensor 'w': the data file is missing"):
            r.get_tensor("w")


def test_fifos_and_directories_are_refused_not_waited_on(tmp_path):
    p = str(tmp_path / "model")
    os.mkfifo(p + ".index")
    with pytest.raises(errors.DataLossError, match=r"model\.index is corrupted.*not a regular file"):
        fmt.CheckpointReader(p)
    fmt.save_tensors(str(tmp_path / "other"), ["a"], [np.ones(2)])  # its cleanup reads no FIFO
    os.mkfifo(tmp_path / "m.meta")
    with pytest.raises(errors.DataLossError, match=r"m\.meta is corrupted.*not a regular file"):
        fl.train.import_meta_graph(str(tmp_path / "m.meta"))
    os.mkfifo(tmp_path / "checkpoint")
    assert fl.train.get_checkpoint_state(str(tmp_path)) is None
    # A data file that is a FIFO is not data.
    os.remove(str(tmp_path / "other.data-00000-of-00001"))
    os.mkfifo(tmp_path / "other.data-00000-of-00001")
    with pytest.raises(errors.DataLossError, match="data file is missing"):
        fmt.CheckpointReader(str(tmp_path / "other")).get_tensor("a")
    (tmp_path / "d.index").mkdir()
    with pytest.raises(errors.DataLossError, match=r"d\.index is corrupted.*not a regular file"):
        fmt.CheckpointReader(str(tmp_path / "d"))
