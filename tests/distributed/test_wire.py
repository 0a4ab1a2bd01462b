"""The task interface's messages through Dask's own serialization (no cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from flowlab.distributed.wire import check_message, from_wire, owned, to_wire
from flowlab.errors import InvalidArgumentError


def _through_dask(message):
    """`message` as a peer receives it over TCP: Dask's frames, then Dask's loads."""
    from distributed.protocol import dumps, loads

    return loads([bytearray(f) for f in dumps(to_wire(message))])


def test_arrays_travel_as_frames_with_their_dtype_shape_and_values():
    a = np.arange(12, dtype=np.float16).reshape(3, 4)
    got = from_wire(_through_dask({"values": [a, np.int64(3), "x"]}))
    assert got["values"][0].dtype == np.float16 and got["values"][0].shape == (3, 4)
    np.testing.assert_array_equal(got["values"][0], a)
    assert got["values"][1:] == [3, "x"]


def test_a_read_only_array_received_over_a_network_comm_becomes_the_receivers_own():
    storage = np.arange(1024, dtype=np.float32)
    storage.flags.writeable = False  # as a variable's storage is
    (received,) = owned([_through_dask({"v": storage})["v"]], "tcp://127.0.0.1:1234")
    assert received.flags.writeable
    received[:] = 0.0  # its own buffer: the sender's storage is untouched
    np.testing.assert_array_equal(storage, np.arange(1024, dtype=np.float32))


def test_an_in_process_comm_hands_over_the_senders_object_and_it_stays_protected():
    storage = np.arange(8, dtype=np.float32)
    storage.flags.writeable = False
    (same,) = owned([storage], "inproc://127.0.0.1/1/2")
    assert same is storage and not same.flags.writeable


@pytest.mark.parametrize("call, message, match", [
    ("run_step", {"handle": "h", "feeds": []}, "step_id"),
    ("run_step", {"handle": 3, "step_id": 1, "feeds": []}, "handle"),
    ("recv_tensor", {"step_id": 1, "key": "k", "timeout_ms": "soon"}, "timeout_ms"),
])
def test_a_message_without_the_fields_its_call_needs_is_refused(call, message, match):
    with pytest.raises((InvalidArgumentError, ValueError, TypeError), match=match):
        check_message(call, message)


def test_a_message_tells_dask_its_size_from_its_arrays_without_being_walked():
    # Dask's comm asks each message's sizeof to decide whether to serialize it off
    # the event loop: the answer counts the arrays (a 100 MB fetch still goes off the
    # loop) and comes from the count to_wire made, not from walking the message.
    from dask.sizeof import sizeof

    big = np.zeros(1 << 20, np.float32)
    message = to_wire({"values": [big, [np.int32(1), "x"]], "held": False})
    assert sizeof(message) == big.nbytes + 64 * 2
    assert sizeof({"op": "flowlab_run_step", "message": message}) >= big.nbytes
    assert from_wire(_through_dask(message))["values"][1] == [1, "x"]
