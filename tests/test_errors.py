"""flowlab.errors: TensorFlow 1.x's error classes, codes and constructor."""

from __future__ import annotations

import pickle

import pytest

import flowlab as fl
from flowlab import errors

CLASSES = [
    "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
    "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "UnauthenticatedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
]
CODES = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
]


def test_public_names_are_tensorflows(tf1):
    theirs = {n for n in dir(tf1.errors) if not n.startswith("_")}
    ours = set(errors.__all__)
    assert ours == theirs - {"raise_exception_on_not_ok_status"}
    assert fl.errors is errors


@pytest.mark.parametrize("code", CODES)
def test_codes_like_tensorflow(tf1, code):
    assert getattr(errors, code) == getattr(tf1.errors, code)


@pytest.mark.parametrize("name", CLASSES)
def test_classes_like_tensorflow(tf1, name):
    ours, theirs = getattr(errors, name), getattr(tf1.errors, name)
    assert issubclass(ours, errors.OpError) and issubclass(ours, Exception)
    e, t = ours(None, None, "bad thing"), theirs(None, None, "bad thing")
    assert (e.message, e.op, e.node_def, e.error_code) == (t.message, t.op, t.node_def, t.error_code)
    assert str(e) == str(t) == "bad thing"
    assert errors.exception_type_from_error_code(e.error_code) is ours
    assert errors.error_code_from_exception_type(ours) == tf1.errors.error_code_from_exception_type(theirs)
    # Subclasses ignore an extra code argument, as TensorFlow's do.
    assert ours(None, None, "m", 5).error_code == theirs(None, None, "m", 5).error_code
    assert e.experimental_payloads == t.experimental_payloads == {}


def test_op_error_base_takes_a_code(tf1):
    for mod in (tf1, fl):
        e = mod.errors.OpError(None, None, "m", mod.errors.ABORTED)
        assert e.error_code == 10 and e.message == "m"
    assert errors.OpError(None, None, "m").error_code == errors.UNKNOWN


@pytest.mark.parametrize("code", [0, 99, -1])
def test_unknown_codes_raise_key_error(tf1, code):
    for mod in (tf1, fl):
        with pytest.raises(KeyError):
            mod.errors.exception_type_from_error_code(code)


def test_error_code_of_foreign_classes():
    assert errors.error_code_from_exception_type(ValueError) == errors.UNKNOWN
    assert errors.error_code_from_exception_type(errors.OpError) == errors.UNKNOWN


def test_pickle_round_trip_keeps_class_message_and_code():
    op = fl.constant(1.0, name="x").op
    for cls in (errors.InvalidArgumentError, errors.OutOfRangeError):
        e = cls({"name": "x"}, op, "went wrong")
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is cls and back.message == "went wrong"
        assert back.error_code == e.error_code and back.op is None and back.node_def is None
    base = pickle.loads(pickle.dumps(errors.OpError(None, None, "m", errors.ABORTED)))
    assert type(base) is errors.OpError and base.error_code == errors.ABORTED


def test_errors_carry_op_and_node_def():
    op = fl.constant(1.0, name="x").op
    e = errors.NotFoundError({"name": "x"}, op, "missing")
    assert e.op is op and e.node_def == {"name": "x"}
    with pytest.raises(errors.OpError, match="missing"):
        raise e


def test_runtime_errors_are_opErrors_with_the_op(tf1):
    def build(tf):
        x = tf.placeholder(tf.float32, name="x")
        return tf.reshape(x, [2], name="r"), {x: [1.0, 2.0, 3.0]}

    from tests.difftest import assert_same_error

    theirs, ours = assert_same_error(tf1, build)
    assert isinstance(ours, errors.InvalidArgumentError)
    assert ours.error_code == theirs.error_code == errors.INVALID_ARGUMENT
    assert ours.op is not None and ours.op.name == "r"


def test_operator_not_allowed_in_graph_error_is_a_type_error():
    assert issubclass(errors.OperatorNotAllowedInGraphError, TypeError)
    assert "OperatorNotAllowedInGraphError" not in errors.__all__
    with pytest.raises(errors.OperatorNotAllowedInGraphError, match="Python `bool`"):
        bool(fl.constant(True))
