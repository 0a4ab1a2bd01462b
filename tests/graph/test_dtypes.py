"""dtypes: conversion, properties, reference types, and the dtype tf.constant infers,
against TensorFlow."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import flowlab as fl
from flowlab.graph import dtypes
from flowlab.graph.dtypes import as_dtype, dtype_of_value

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "complex64", "complex128", "string", "resource",
         "variant"]


def _conv(mod, x):
    try:
        return mod.as_dtype(x).name
    except TypeError:
        return "TypeError"


@pytest.mark.parametrize("value", NAMES + [n + "_ref" for n in NAMES] + [
    "float", "double", "half", "float_ref", "int", "complex", "nope", "", "Float32",
    np.float32, np.float64, np.int64, np.int8, np.uint16, np.bool_, np.complex64,
    np.dtype("int16"), np.dtype("U3"), np.dtype("S3"), np.dtype("O"), np.str_, np.bytes_,
    object, float, int, bool, bytes, str, complex, None, 1, 3, 7, 9, 10, 20, 101, 0, 999,
])
def test_as_dtype_like_tensorflow(tf1, value):
    assert _conv(fl, value) == _conv(tf1, value)


def test_as_dtype_is_interned_and_accepts_dtypes():
    assert as_dtype("float32") is dtypes.float32 is fl.float32
    assert as_dtype(dtypes.float32) is dtypes.float32
    assert as_dtype("float32_ref") is dtypes.float32._as_ref()
    assert fl.half is fl.float16 and fl.double is fl.float64
    with pytest.raises(TypeError, match="Cannot convert"):
        as_dtype(int)


@pytest.mark.parametrize("name", NAMES)
def test_properties_like_tensorflow(tf1, name):
    for ref in (False, True):
        ours, theirs = as_dtype(name), tf1.as_dtype(name)
        if ref:
            ours, theirs = ours._as_ref(), theirs._as_ref
        for prop in ("name", "is_floating", "is_integer", "is_unsigned", "is_complex",
                     "is_bool", "is_numpy_compatible", "is_quantized", "size",
                     "_is_ref_dtype", "as_datatype_enum"):
            assert getattr(ours, prop) == getattr(theirs, prop), (name, ref, prop)
        assert ours.is_ref_dtype == ref
        assert ours.base_dtype.name == theirs.base_dtype.name
        assert ours.real_dtype.name == theirs.real_dtype.name
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        for prop in ("min", "max"):
            try:
                want = getattr(theirs, prop)
            except TypeError:
                with pytest.raises(TypeError):
                    getattr(ours, prop)
            else:
                got = getattr(ours, prop)
                assert got == want and type(got) is type(want), (name, prop)
        if theirs.is_numpy_compatible:
            assert np.dtype(ours.as_numpy_dtype) == np.dtype(theirs.as_numpy_dtype)


def test_is_numeric_groups():
    assert fl.float32.is_numeric and fl.int8.is_numeric and fl.complex64.is_numeric
    assert not fl.bool.is_numeric and not fl.string.is_numeric
    assert dtypes.NUMERIC == dtypes.REAL + dtypes.COMPLEX
    assert fl.resource.as_numpy_dtype is None


def test_ref_types(tf1):
    f, fr = fl.float32, fl.float32._as_ref()
    assert fr.name == "float32_ref" and fr.is_ref_dtype and fr.base_dtype is f
    assert fr._as_ref() is fr and not f.is_ref_dtype
    assert fr != f and fr == "float32_ref"
    assert fr.is_floating and fr.as_numpy_dtype is np.float32
    # A value of ref type may be used where the plain type is expected, not the reverse.
    t = tf1.float32
    for a, b in ((f, fr), (fr, f), (f, f), (f, fl.int32), (fr, fr)):
        ta = t._as_ref if a.is_ref_dtype else t
        tb = t._as_ref if b.is_ref_dtype else t
        if b is fl.int32:
            tb = tf1.int32
        assert a.is_compatible_with(b) == ta.is_compatible_with(tb)
    assert f.is_compatible_with("float32") and f.is_compatible_with(np.float32)


def test_equality_like_tensorflow(tf1):
    for mod in (tf1, fl):
        assert mod.float32 == "float32" and mod.float32 == np.float32
        assert not (mod.float32 == "nope") and not (mod.float32 == None)  # noqa: E711
        assert not (mod.float32 == 3) and not (mod.float32 != "float32")
        assert mod.as_dtype(1) == mod.float32
    assert len({fl.float32, fl.as_dtype("float32"), fl.float32._as_ref()}) == 2


def test_pickle_round_trip():
    for d in (fl.float32, fl.float32._as_ref(), fl.string, fl.resource):
        assert pickle.loads(pickle.dumps(d)) is d


VALUES = [
    1, 1.0, True, 0, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, -(2**63),
    2**63, 2**64, -(2**63) - 1, 1j, b"x", "x", float("nan"), 1e300,
    [1, 2], [1, 2.0], [True, False], [True, 1], [1, True, 2.0], [[1], [2]], (1, 2),
    [2**40, 1], [1, 2**31], [-(2**31) - 1], [2**63], [2**63, 1], [2**64], [1e300],
    [1.0, 1j], [[1, 2.5], [3, 4]], [[True], [2.0]], [], [[]],
    [b"a", b"b"], ["a", b"b"], [1, "a"], [None], [1, None], None, {"a": 1},
    np.float64(1), np.float16(1), np.int64(3), np.uint8(3), np.bool_(True),
    np.array([1, 2]), np.array([1.0]), np.array([2**40]), np.array(["a"]),
    np.array(["a", "b"], dtype=object), np.array([1.0], dtype=np.float16),
    [np.float64(1.0)], [1, np.float64(2)], [np.float32(1), 2.0], [np.int8(1), 2],
    [np.uint8(3), 300], [np.float16(1), np.float32(2)], [np.int64(1), np.int32(2)],
    [np.int8(1), np.int16(2)], [np.uint64(2**63)], [np.int64(2**40)], [np.bool_(True)],
    [np.complex64(1)], [1j, np.complex64(1)],
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # TensorFlow's own cast of 1e300
@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:30] for v in VALUES])
def test_dtype_of_value_matches_tf_constant(tf1, value):
    with tf1.Graph().as_default():
        try:
            want = tf1.constant(value).dtype.name
        except (TypeError, ValueError) as e:
            want = type(e).__name__
    try:
        got = dtype_of_value(value).name
    except (TypeError, ValueError) as e:
        got = type(e).__name__
    assert got == want


def test_dtype_of_value_messages():
    with pytest.raises(ValueError, match="None values not supported"):
        dtype_of_value(None)
    with pytest.raises(TypeError, match="Failed to convert elements of"):
        dtype_of_value([1, "a"])
    with pytest.raises(TypeError, match="Failed to convert elements of"):
        dtype_of_value(2**64)
    with pytest.raises(TypeError, match="Failed to convert elements of"):
        dtype_of_value(np.array([1, None], dtype=object))
