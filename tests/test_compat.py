"""`tf.compat`: the text/bytes helpers and `tf.compat.v1`, against TensorFlow."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import flowlab as fl


@pytest.mark.parametrize("fn", ["as_bytes", "as_text", "as_str", "as_str_any"])
@pytest.mark.parametrize("value", ["héllo", b"h\xc3\xa9llo", bytearray(b"ab"), 3, None, 1.5, ("a",)])
def test_conversions_match_tensorflow(tf1, fn, value):
    ref, got = getattr(tf1.compat, fn), getattr(fl.compat, fn)
    try:
        expected = ref(value)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)) as info:
            got(value)
        assert str(info.value) == str(e)
    else:
        actual = got(value)
        assert type(actual) is type(expected) and actual == expected


def test_encodings(tf1):
    assert fl.compat.as_bytes("é", "latin-1") == tf1.compat.as_bytes("é", "latin-1") == b"\xe9"
    assert fl.compat.as_text(b"\xe9", "latin-1") == "é"
    with pytest.raises(LookupError):
        fl.compat.as_bytes("x", "no-such-codec")
    with pytest.raises(UnicodeDecodeError):
        fl.compat.as_str(b"\xff")


def test_paths_and_type_collections(tf1):
    p = pathlib.Path("./a//b")
    assert fl.compat.path_to_str(p) == tf1.compat.path_to_str(p) == "a/b"
    assert fl.compat.path_to_str(7) == 7
    for name in ("integral_types", "real_types", "complex_types", "bytes_or_text_types"):
        assert getattr(fl.compat, name) == getattr(tf1.compat, name)
    assert isinstance(np.int8(1), fl.compat.integral_types)


def test_compat_v1_is_flowlab():
    assert fl.compat.v1 is fl
    assert fl.compat.v1.placeholder is fl.placeholder
    assert fl.compat.dimension_value(fl.Dimension(3)) == 3
    with pytest.raises(AttributeError):
        fl.compat.no_such_name  # noqa: B018
