"""DeviceSpec: parsing, merging and printing, against TensorFlow's tf.DeviceSpec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowlab.graph.device_spec import DeviceSpec, canonical_name

SPECS = [
    "/job:ps/task:0/device:CPU:0",
    "/job:ps/replica:1/task:0/device:GPU:3",
    "/cpu:1",
    "/gpu:0",
    "/GPU:0",
    "/Cpu:2",
    "/device:GPU:*",
    "/device:cpu:0",
    "/device:gpu:1",
    "/device:tpu:1",
    "/device:XLA_CPU:0",
    "CPU:0",
    "cpu",
    "GPU",
    "/cpu:*",
    "/job:worker/replica:2",
    "job:worker/task:3",
    "/task:1/job:a",
    "/job:a/job:b",
    "/job:",
    "/job:ps//task:1",
    "/job:ps/",
    "",
    "/",
    "/replica:-1",
    "/:junk",
    "/TPU:0",
    "/device:CUSTOM:0",
]

BAD = [
    "/foo:bar",
    "junk",
    "/job:ps/task:x",
    "/replica:",
    "cpu:x",
    "/device:GPU:x",
    "gpu:1:2",
    "/cpu:0/gpu:1",
    "/device:GPU:0/cpu:0",
    "/device:GPU",
    "/job:ps:1",
    "/device:a:b:c",
]


@pytest.mark.parametrize("spec", SPECS)
def test_parse_and_print_like_tensorflow(tf1, spec):
    theirs = tf1.DeviceSpec.from_string(spec)
    ours = DeviceSpec.from_string(spec)
    assert ours.to_string() == theirs.to_string()
    fields = ("job", "replica", "task", "device_type", "device_index")
    assert [getattr(ours, f) for f in fields] == [getattr(theirs, f) for f in fields]
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("spec", BAD)
def test_invalid_specs_like_tensorflow(tf1, spec):
    with pytest.raises(ValueError):
        tf1.DeviceSpec.from_string(spec)
    with pytest.raises(ValueError):
        DeviceSpec.from_string(spec)


def test_error_messages_name_the_bad_part():
    with pytest.raises(ValueError, match="Unknown attribute 'foo' is encountered while parsing "
                                         "the device spec: '/foo:bar'"):
        DeviceSpec.from_string("/foo:bar")
    with pytest.raises(ValueError, match="'task:x' needs an integer"):
        DeviceSpec.from_string("/job:ps/task:x")
    with pytest.raises(ValueError, match="Multiple device types"):
        DeviceSpec.from_string("/cpu:0/gpu:1")
    with pytest.raises(TypeError, match="must be a string"):
        DeviceSpec.from_string(3)  # type: ignore[arg-type]


def test_examples():
    s = DeviceSpec.from_string("/job:ps/task:0/device:CPU:0")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == ("ps", None, 0, "CPU", 0)
    assert DeviceSpec.from_string("/cpu:1").to_string() == "/device:CPU:1"
    assert DeviceSpec.from_string("/gpu:0").to_string() == "/device:GPU:0"
    assert DeviceSpec.from_string("/device:GPU:*").device_index is None
    assert DeviceSpec.from_string("CPU:0").to_string() == "/device:CPU:0"
    assert DeviceSpec.from_string("/job:worker/replica:2").to_string() == "/job:worker/replica:2"
    assert DeviceSpec.from_string(b"/cpu:0").to_string() == "/device:CPU:0"
    assert DeviceSpec.from_string(None).to_string() == ""
    d = DeviceSpec(job="x")
    assert DeviceSpec.from_string(d) is d
    assert DeviceSpec.parse_from_string("/cpu:0") == "/device:CPU:0"


MERGES = [
    ("/job:ps/task:1", "/gpu:0"),
    ("/job:ps/task:1/device:GPU:0", "/job:worker"),
    ("/job:ps/task:1/device:GPU:0", "/device:GPU:*"),
    ("/job:ps/task:1/device:GPU:0", "/cpu:*"),
    ("/job:ps/task:1/device:GPU:0", "CPU"),
    ("/device:GPU:1", "/replica:3"),
    ("", "/job:a/replica:1/task:2/device:CPU:3"),
    ("/job:a/replica:1/task:2/device:CPU:3", ""),
]


@pytest.mark.parametrize("outer,inner", MERGES)
def test_make_merged_spec_like_tensorflow(tf1, outer, inner):
    theirs = tf1.DeviceSpec.from_string(outer).make_merged_spec(tf1.DeviceSpec.from_string(inner))
    ours = DeviceSpec.from_string(outer).make_merged_spec(DeviceSpec.from_string(inner))
    assert ours.to_string() == theirs.to_string()
    assert DeviceSpec.from_string(outer).make_merged_spec(inner) == ours  # strings accepted


def test_replace_like_tensorflow(tf1):
    theirs = tf1.DeviceSpec(job="ps", device_type="GPU", device_index=0)
    ours = DeviceSpec(job="ps", device_type="GPU", device_index=0)
    for kw in ({"device_type": "CPU"}, {"job": None}, {"task": 3, "device_index": None}):
        assert ours.replace(**kw).to_string() == theirs.replace(**kw).to_string()
    assert ours.to_string() == "/job:ps/device:GPU:0"  # unchanged
    with pytest.raises(TypeError):
        ours.replace(device="CPU")


def test_fields_are_assignable_and_the_string_follows(tf1):
    theirs = tf1.DeviceSpec.from_string("/job:ps/cpu:0")
    ours = DeviceSpec.from_string("/job:ps/cpu:0")
    assert ours.to_string() == theirs.to_string()
    for f, v in (("job", "w"), ("task", "3"), ("device_type", "gpu"), ("device_index", 2),
                 ("replica", 1)):
        setattr(theirs, f, v)
        setattr(ours, f, v)
        assert ours.to_string() == theirs.to_string()
        assert hash(ours) == hash(DeviceSpec.from_string(ours.to_string()))


def test_equality_and_hash():
    a = DeviceSpec.from_string("/job:ps/cpu:0")
    b = DeviceSpec(job="ps", device_type="CPU", device_index=0)
    assert a == b and hash(a) == hash(b) and not (a != b)
    assert a == "/job:ps/device:CPU:0"  # flowlab: strings compare by meaning
    assert a != "/job:ps" and a != "not a device" and a != 3
    assert len({a, b, DeviceSpec()}) == 2


def test_compatibility():
    full = DeviceSpec.from_string("/job:worker/replica:0/task:1/device:GPU:0")
    assert DeviceSpec.from_string("/job:worker").is_compatible_with(full)
    assert DeviceSpec.from_string("/gpu:*").is_compatible_with(full)
    assert DeviceSpec.from_string("/gpu:0").matches(full)
    assert not DeviceSpec.from_string("/cpu:0").is_compatible_with(full)
    assert not DeviceSpec.from_string("/task:2").is_compatible_with("/task:1")
    assert DeviceSpec().is_compatible_with(full)


def test_canonical_name():
    assert canonical_name(None) == "" and canonical_name("") == ""
    assert canonical_name("/job:ps/gpu:1") == "/job:ps/device:GPU:1"
    assert canonical_name(DeviceSpec(task=2)) == "/task:2"


# --- properties --------------------------------------------------------------------
_jobs = st.one_of(st.none(), st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1,
                                     max_size=8))
_ints = st.one_of(st.none(), st.integers(0, 1000))
_types = st.one_of(st.none(), st.sampled_from(["CPU", "GPU", "TPU", "XLA_GPU", "cpu", "gpu"]))
specs = st.builds(DeviceSpec, job=_jobs, replica=_ints, task=_ints, device_type=_types,
                  device_index=_ints)


@settings(max_examples=200, deadline=None)
@given(specs)
def test_to_string_round_trips(spec):
    again = DeviceSpec.from_string(spec.to_string())
    assert again == spec and again.to_string() == spec.to_string()
    for f in ("job", "replica", "task", "device_type", "device_index"):
        if f == "device_index" and spec.device_type is None:
            continue  # an index without a type is not printed
        assert getattr(again, f) == getattr(spec, f)


@settings(max_examples=100, deadline=None)
@given(specs, specs, specs)
def test_merge_laws(a, b, c):
    # identity, idempotence, associativity, and "the argument's set fields win"
    empty = DeviceSpec()
    assert a.make_merged_spec(empty) == a and empty.make_merged_spec(a) == a
    assert a.make_merged_spec(a) == a
    assert a.make_merged_spec(b).make_merged_spec(c) == a.make_merged_spec(b.make_merged_spec(c))
    m = a.make_merged_spec(b)
    for f in ("job", "replica", "task", "device_type", "device_index"):
        want = getattr(b, f) if getattr(b, f) is not None else getattr(a, f)
        assert getattr(m, f) == want
    assert m.is_compatible_with(b)


@settings(max_examples=100, deadline=None)
@given(specs)
def test_random_specs_match_tensorflow(spec):
    from tests.conftest import _load_tf

    tf = _load_tf()
    if tf is False:
        pytest.skip("tensorflow is not installed")
    s = spec.to_string()
    assert tf.DeviceSpec.from_string(s).to_string() == s


def test_parsed_specs_are_independent_objects():
    a = DeviceSpec.from_string("/job:ps/cpu:0")
    b = DeviceSpec.from_string("/job:ps/cpu:0")
    assert a is not b
    a.job = "other"
    assert b.job == "ps" and DeviceSpec.from_string("/job:ps/cpu:0").job == "ps"
