"""String ops against TensorFlow: values, dtypes, static shapes, op types, and the
errors (class and TensorFlow's message) at build and at run time."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same, run_with

VALUE_CASES = {
    "substr_neg": lambda tf: tf.substr(["hello", "abc"], -2, 5),
    "substr_vec": lambda tf: tf.substr(["hello", "abc"], [1, 0], [2, 9]),
    "substr_utf8": lambda tf: tf.substr(["héllo"], 1, 2, unit="UTF8_CHAR"),
    "substr_neg_len": lambda tf: tf.substr(["hello"], 1, -1),
    "substr_int64": lambda tf: tf.strings.substr("hello", np.int64(1), np.int64(3)),
    "length": lambda tf: tf.strings.length(["héllo", ""]),
    "length_utf8": lambda tf: tf.strings.length("héllo", unit="UTF8_CHAR"),
    "as_string_float": lambda tf: tf.as_string([3.5, -1.25e-7, 1e20, np.inf, np.nan]),
    "as_string_precision": lambda tf: tf.as_string(np.array([3.14159, 2.5]), precision=2),
    "as_string_scientific": lambda tf: tf.as_string([3.5], scientific=True),
    "as_string_shortest": lambda tf: tf.as_string([3.5, 1e20, 0.0001], shortest=True),
    "as_string_zero_fill": lambda tf: tf.as_string([3, -4], width=5, fill="0"),
    "as_string_width": lambda tf: tf.as_string([3, -4], width=5),
    "as_string_width_precision": lambda tf: tf.as_string([3.5], width=12, precision=1, fill=" "),
    "as_string_bool": lambda tf: tf.as_string([True, False]),
    "as_string_complex": lambda tf: tf.as_string(np.array([1 + 2j], np.complex64)),
    "as_string_string": lambda tf: tf.as_string(["a"]),
    "as_string_half": lambda tf: tf.as_string(np.array([1.5], np.float16)),
    "as_string_uint8": lambda tf: tf.as_string(np.array([200], np.uint8)),
    "as_string_int64": lambda tf: tf.strings.as_string(np.array([2**40], np.int64)),
    "to_number": lambda tf: tf.string_to_number(["1.5", " 2", "1e3", "inf", "-nan", "0x10", "3."]),
    "to_number_int32": lambda tf: tf.string_to_number(["12", " 7 ", "-3"], tf.int32),
    "to_number_int64": lambda tf: tf.string_to_number(["3000000000", "+5"], tf.int64),
    "to_number_float64": lambda tf: tf.strings.to_number(["0.1"], tf.float64),
    "to_number_input_kw": lambda tf: tf.strings.to_number(input=[["7"]], out_type=tf.int64),
    "join": lambda tf: tf.string_join([["a", "b"], "x", ["c", "d"]], separator="-"),
    "strings_join": lambda tf: tf.strings.join([["a", "b"], ["c", "d"]]),
    "reduce_join": lambda tf: tf.reduce_join([["abc", "123"], ["def", "456"]]),
    "reduce_join_axis": lambda tf: tf.reduce_join([["abc", "123"], ["def", "456"]], axis=-1, separator=" "),
    "reduce_join_keep": lambda tf: tf.reduce_join([["abc", "123"], ["def", "456"]], axis=0, keep_dims=True),
    "reduce_join_10": lambda tf: tf.reduce_join([["abc", "123"], ["def", "456"]], axis=[1, 0]),
    "reduce_join_01": lambda tf: tf.reduce_join([["abc", "123"], ["def", "456"]], axis=[0, 1]),
    "reduce_join_empty": lambda tf: tf.reduce_join(tf.constant([], tf.string, shape=[2, 0]), axis=1),
    "reduce_join_3d": lambda tf: tf.reduce_join(np.array([[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]]),
                                                axis=[0, 2]),
    "reduce_join_keepdims": lambda tf: tf.strings.reduce_join([["a", "b"]], axis=1, keepdims=True),
    "regex_replace": lambda tf: tf.regex_replace(["a1b22c", "xyz"], r"\d+", "#"),
    "regex_replace_first": lambda tf: tf.regex_replace(["a1b22c"], r"\d", "#", replace_global=False),
    "regex_replace_groups": lambda tf: tf.strings.regex_replace(["john smith"], r"(\w+) (\w+)", r"\2 \1 \0 \\"),
    "regex_replace_empty_match": lambda tf: tf.strings.regex_replace(["abc"], "x*", "-"),
    "regex_replace_tensor": lambda tf: tf.strings.regex_replace(["abc"], tf.constant("b"), "-"),
    "regex_full_match": lambda tf: tf.strings.regex_full_match(["abc", "ab1", "héllo"], r"[a-z]+"),
    "regex_full_match_dot": lambda tf: tf.strings.regex_full_match(["héllo"], r"h.llo"),
    "regex_full_match_tensor": lambda tf: tf.strings.regex_full_match(["abc"], tf.constant("a.c")),
    "regex_ascii_classes": lambda tf: tf.strings.regex_full_match(["١٢", "12", "é"], r"\d+|\w"),
    "strip": lambda tf: tf.strings.strip([" a b\t\n", "\x0b x\x0c"]),
    "string_strip": lambda tf: tf.string_strip("  q "),
    "lower": lambda tf: tf.strings.lower(["HéLLO É"]),
    "lower_utf8": lambda tf: tf.strings.lower(["HéLLO É"], encoding="utf-8"),
    "upper_utf8": lambda tf: tf.strings.upper(["héllo é"], encoding="utf-8"),
    "upper": lambda tf: tf.strings.upper([["ab", "Cd"]]),
    "string_split": lambda tf: tf.string_split(["a b  c", "", "d"]),
    "string_split_keep_empty": lambda tf: tf.string_split(["a b  c", "", "d"], skip_empty=False),
    "string_split_delimiters": lambda tf: tf.string_split(["a,b;c"], ",;"),
    "string_split_bytes": lambda tf: tf.string_split(["ab", "c"], ""),
    "string_split_all_empty": lambda tf: tf.string_split(["", " "]),
    "strings_split": lambda tf: tf.strings.split(["a b  c", " x "]),
    "strings_split_sep": lambda tf: tf.strings.split(["a<>b<><>c"], sep="<>"),
    "strings_split_maxsplit": lambda tf: tf.strings.split(["a b c d"], maxsplit=2),
    "strings_split_scalar": lambda tf: tf.strings.split("a b"),
    "format": lambda tf: tf.strings.format("tensor: {}, suffix", tf.range(5)),
    "format_two": lambda tf: tf.strings.format("a: {}, b: {}", (tf.range(2), tf.constant([1.5, 2.25]))),
    "format_matrix": lambda tf: tf.strings.format("{}", tf.constant([[1, 2], [3, 4]])),
    "format_long": lambda tf: tf.strings.format("{}", tf.range(10)),
    "format_rows": lambda tf: tf.strings.format("{}", tf.reshape(tf.range(30), [5, 6])),
    "format_scalar": lambda tf: tf.strings.format("{}", tf.constant(3.0)),
    "format_strings": lambda tf: tf.strings.format("{}", tf.constant(["a\n'", "b"])),
    "format_string_scalar": lambda tf: tf.strings.format("{}", tf.constant("x")),
    "format_bool": lambda tf: tf.strings.format("{}", tf.constant([True, False])),
    "format_floats": lambda tf: tf.strings.format("{}", tf.constant([1e-8, 123456789.0, 0.1])),
    "format_empty": lambda tf: tf.strings.format("{}", tf.constant([], tf.float32)),
    "format_empty_3d": lambda tf: tf.strings.format("x{}y", tf.constant(np.zeros((2, 0, 3)))),
    "format_summarize": lambda tf: tf.strings.format("{}", tf.range(10), summarize=2),
    "format_all": lambda tf: tf.strings.format("{}", tf.range(10), summarize=-1),
    "format_placeholder": lambda tf: tf.strings.format("[%s]", tf.range(3), placeholder="%s"),
    "format_3d": lambda tf: tf.strings.format("{}", tf.reshape(tf.range(64), [4, 4, 4]), summarize=1),
    "format_no_inputs": lambda tf: tf.strings.format("none", []),
    "hash_bucket_fast": lambda tf: tf.string_to_hash_bucket_fast(["hello", "", "TensorFlow", "héllo"], 1000),
    "hash_bucket_fast_2d": lambda tf: tf.strings.to_hash_bucket_fast([["a", "b"], ["c", "d"]], 7),
}


def test_farmhash_fingerprint_every_length(tf1):
    """Fingerprint64 on 0..299 random bytes: the short-string branches and the
    64-byte-block loop, against TensorFlow's buckets."""
    from flowlab.kernels.farmhash import fingerprint64

    rs = np.random.RandomState(0)
    strs = [bytes(rs.randint(0, 256, n, dtype=np.uint8)) for n in range(300)]
    with tf1.Graph().as_default(), tf1.Session() as s:
        buckets = s.run(tf1.strings.to_hash_bucket_fast(strs, (1 << 62) + 1))
    assert [fingerprint64(x) % ((1 << 62) + 1) for x in strs] == buckets.tolist()


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_tensorflow(tf1, name):
    assert_same(tf1, VALUE_CASES[name])


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_static_shapes_and_dtypes_match_tensorflow(tf1, name):
    def describe(tf):
        with tf.Graph().as_default():
            out = VALUE_CASES[name](tf)
            parts = [out.indices, out.values, out.dense_shape] if hasattr(out, "dense_shape") else [out]
            return [(t.dtype.name, t.shape.as_list() if t.shape.ndims is not None else None) for t in parts]

    assert describe(fl) == describe(tf1)


OP_TYPES = {
    "regex_replace": "StaticRegexReplace", "regex_replace_tensor": "RegexReplace",
    "regex_full_match": "StaticRegexFullMatch", "regex_full_match_tensor": "RegexFullMatch",
    "string_split": "StringSplit", "strings_split": "StringSplitV2", "reduce_join": "ReduceJoin",
    "as_string_float": "AsString", "to_number": "StringToNumber", "length": "StringLength",
    "substr_vec": "Substr", "strip": "StringStrip", "lower": "StringLower", "upper": "StringUpper",
    "join": "StringJoin", "format": "StringFormat", "hash_bucket_fast": "StringToHashBucketFast",
}


@pytest.mark.parametrize("name", sorted(OP_TYPES))
def test_op_types_and_names(tf1, name):
    def describe(tf):
        with tf.Graph().as_default():
            out = VALUE_CASES[name](tf)
            t = out.values if hasattr(out, "dense_shape") else out
            return t.op.type, t.op.name

    assert describe(fl) == describe(tf1)
    assert describe(fl)[0] == OP_TYPES[name]


def _message(err: BaseException) -> str:
    msg = str(err).split("\n\t [[")[0]
    msg = msg.split("\n")[-1] if "Graph execution error" in msg else msg
    msg = re.sub(r"^\w+ '[^']*' on \S+: ", "", msg)  # flowlab's op header
    return re.sub(r" \(defined at [^)]*\)$", "", msg)


RUN_ERRORS = {
    "substr_out_of_range": lambda tf: tf.substr(["hello", "ab"], 3, 2),
    "as_string_int_precision": lambda tf: tf.as_string([3], precision=2),
    "as_string_both": lambda tf: tf.as_string([3.0], scientific=True, shortest=True),
    "as_string_fill_long": lambda tf: tf.as_string([3.0], fill="ab"),
    "as_string_fill_unsupported": lambda tf: tf.as_string([3], width=4, fill="x"),
    "to_number_bad": lambda tf: tf.string_to_number(["abc"]),
    "to_number_int_bad": lambda tf: tf.string_to_number(["1.0"], tf.int32),
    "to_number_int_overflow": lambda tf: tf.string_to_number(["3000000000"], tf.int32),
    "to_number_empty": lambda tf: tf.string_to_number([""]),
    "to_number_underscore": lambda tf: tf.string_to_number(["1_0"]),
    "reduce_join_duplicate": lambda tf: tf.reduce_join([["abc", "123"]], axis=[1, 1]),
    "reduce_join_fed_axis": lambda tf: (lambda a: (tf.reduce_join([["a"]], axis=a), {a: 5}))(
        tf.placeholder(tf.int32)),
}


@pytest.mark.parametrize("name", sorted(RUN_ERRORS))
def test_run_errors_match_tensorflow(tf1, name):
    errs = []
    for tf in (tf1, fl):
        with pytest.raises(tf.errors.OpError) as info:
            run_with(tf, RUN_ERRORS[name])
        errs.append((type(info.value).__name__, _message(info.value)))
    assert errs[1] == errs[0]


BUILD_ERRORS = {
    "substr_pos_shape": lambda tf: tf.substr([["hello", "abc"]], [1, 0], 1),
    "substr_pos_len": lambda tf: tf.substr(["hello", "abc"], [1, 0], [1]),
    "reduce_join_axis": lambda tf: tf.reduce_join([["abc", "123"]], axis=2),
    "string_split_rank": lambda tf: tf.string_split([["a b"]]),
    "format_count": lambda tf: tf.strings.format("{} {}", tf.range(3)),
}


@pytest.mark.parametrize("name", sorted(BUILD_ERRORS))
def test_build_errors_match_tensorflow(tf1, name):
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(ValueError) as info:
            BUILD_ERRORS[name](tf)
        msgs.append(str(info.value).split(" for ")[0])
    assert msgs[1] == msgs[0]


def test_invalid_pattern_is_invalid_argument(tf1):
    for tf in (tf1, fl):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid pattern: \(, error: missing \)"):
            run_with(tf, lambda t: t.strings.regex_full_match(["abc"], "("))


def test_ragged_result_type_is_refused():
    with pytest.raises(NotImplementedError, match="RaggedTensor"):
        fl.strings.split(["a b"], result_type="RaggedTensor")


def test_no_gradients():
    x = fl.placeholder(fl.float32)
    s = fl.as_string(x)
    assert fl.gradients(fl.string_to_number(s), x) == [None]


def test_names_exist_in_tensorflow(tf1):
    for n in vars(fl.strings):
        if not n.startswith("_"):
            assert hasattr(tf1.strings, n), n


UNICODE_CASES = {
    "transcode_utf16": lambda tf: tf.strings.unicode_transcode(["héllo", b"a\xffb"], "UTF-8", "UTF-16-BE"),
    "transcode_latin1": lambda tf: tf.strings.unicode_transcode([b"h\xe9"], "ISO-8859-1", "UTF-8"),
    "transcode_replace": lambda tf: tf.strings.unicode_transcode([b"a\xffb\xc3"], "UTF-8", "UTF-8"),
    "transcode_replacement_char": lambda tf: tf.strings.unicode_transcode([b"a\xffb\xc3"], "UTF-8", "UTF-8",
                                                                          replacement_char=63),
    "transcode_ignore": lambda tf: tf.strings.unicode_transcode([b"a\xffb"], "UTF-8", "UTF-8", errors="ignore"),
    "transcode_controls": lambda tf: tf.strings.unicode_transcode([b"a\x01b"], "UTF-8", "UTF-8",
                                                                  replace_control_characters=True),
    "transcode_utf32": lambda tf: tf.strings.unicode_transcode(["hé"], "UTF-8", "UTF-32-BE"),
    "transcode_scalar": lambda tf: tf.strings.unicode_transcode("hé", "UTF-8", "UTF-16-BE"),
    "transcode_from_utf16": lambda tf: tf.strings.unicode_transcode([b"\x00h\x00\xe9"], "UTF-16-BE", "UTF-8"),
    "transcode_odd_utf16": lambda tf: tf.strings.unicode_transcode([b"\x00h\x00"], "UTF-16-BE", "UTF-8"),
    "encode_matrix": lambda tf: tf.strings.unicode_encode([[104, 233, 0], [72, 105, 33]], "UTF-8"),
    "encode_vector": lambda tf: tf.strings.unicode_encode([104, 233], "UTF-8"),
    "encode_3d": lambda tf: tf.strings.unicode_encode(np.array([[[104, 105]], [[106, 107]]], np.int32), "UTF-16-BE"),
    "encode_invalid": lambda tf: tf.strings.unicode_encode([104, -1, 0x110000, 0xD800], "UTF-8"),
    "encode_ignore": lambda tf: tf.strings.unicode_encode([104, -1], "UTF-8", errors="ignore"),
    "encode_replacement_char": lambda tf: tf.strings.unicode_encode([104, -1], "UTF-8", replacement_char=63),
    "encode_utf32": lambda tf: tf.strings.unicode_encode([104, 0x1F600], "UTF-32-BE"),
    "encode_empty_rows": lambda tf: tf.strings.unicode_encode(tf.zeros([3, 0], tf.int32), "UTF-8"),
}


@pytest.mark.parametrize("name", sorted(UNICODE_CASES))
def test_unicode_values_match_tensorflow(tf1, name):
    assert_same(tf1, UNICODE_CASES[name])


@pytest.mark.parametrize("build", [
    lambda tf: tf.strings.unicode_transcode([b"a\xffb"], "UTF-8", "UTF-8", errors="strict"),
    lambda tf: tf.strings.unicode_encode([104, -1], "UTF-8", errors="strict"),
])
def test_unicode_strict_errors(tf1, build):
    errs = []
    for tf in (tf1, fl):
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            run_with(tf, build)
        errs.append(_message(info.value))
    assert errs[1] == errs[0]


@pytest.mark.parametrize("build,cls", [
    (lambda tf: tf.strings.unicode_transcode(["x"], "UTF-8", "US-ASCII"), ValueError),
    (lambda tf: tf.strings.unicode_encode(104, "UTF-8"), ValueError),
    (lambda tf: tf.strings.unicode_encode(np.array([104], np.int64), "UTF-8"), TypeError),
])
def test_unicode_build_errors(tf1, build, cls):
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), pytest.raises(cls) as info:
            build(tf)
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]
