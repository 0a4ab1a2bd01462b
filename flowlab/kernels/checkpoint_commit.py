"""Atomic checkpoint saves: every file operation, in an order that keeps the newest
complete checkpoint restorable at every instant, whatever the path and whenever the
process dies.

The design.  A checkpoint is its index: `<prefix>.index` names the data file of each
shard (``data_files``, flowlab.kernels.checkpoint_index) and holds the checksums of
every byte the reader uses.  A save never changes a file the current index names; it
writes new files under fresh unique names and makes them the checkpoint with **one rename
of the small index file** (`os.replace`, atomic on POSIX).  So at any instant
`<prefix>.index` is either the old index, whose data files are all still there, or
the new one, whose data files were complete before it was written.  In order:

1. lock the directory (below) and remove the leftovers of killed saves (`cleanup`);
2. write each shard's data to ``<data name>.tmp-<random>``;
3. give each shard its canonical name ``<prefix>.data-0000i-of-0000n`` by a rename
   when no current index names that file (always so with ``global_step`` paths);
   else (the same path saved again) leave it under its temporary name;
4. write the index to ``<prefix>.index.tmp-<random>`` and rename it to
   ``<prefix>.index`` -- **the switch**; before it the old checkpoint is the one,
   after it the new one;
5. only if step 3 kept temporary names: delete the old canonical data files (no
   index names them now), hard-link each temporary file to its canonical name,
   switch again to an index naming the canonical names, delete the temporary names
   (where the file system has no hard links the temporary names stay and are valid);
6. delete the old checkpoint's data files that no index names any more.

A kill between any two of these operations leaves `<prefix>.index` naming complete,
checksummed files: the old checkpoint before step 4, the new one after.  The Saver's
`checkpoint` state file is rewritten (atomically, the same way) after the save, so
`latest_checkpoint` always names a complete checkpoint too: the new one, or -- if
the process died before the state file was renamed -- the previous one.  A sharded
save writes its parts to ``<prefix>_temp_<random>/`` and merges them into the
destination by the same steps 3-6 (checkpoint_format.merge_checkpoints).  Names are
reused (step 5; step 3 after a deletion), so a reader holding an *older* index must
check that the index did not change while it opened the files
(flowlab.kernels.checkpoint_reader does).

Concurrency.  Every save into a directory holds an exclusive `flock` on that
directory from its cleanup to its last switch (the Saver holds it again while it
writes the meta graph and the state file).  Two saves to one path, from two threads
or two processes, therefore take turns: both succeed, and the checkpoint is the one
that switched last.  flock is released by the kernel when a process dies, so a
killed save never blocks the next one.  `Saver.restore` holds the lock shared, so a
sharded restore's RestoreV2 ops (one reader each) all read the same checkpoint.
Readers themselves take no lock (flowlab.kernels.checkpoint_reader: a reader
settles on one index and keeps its data files open).  (Within one thread a nested
`dir_lock` of the same directory is a no-op.)  Without `fcntl` (Windows) the lock is
per process.

Leftovers.  Under the lock no other save is writing in the directory, so the next
save removes (`cleanup`): every ``*.tmp-<random>`` file that no index names, every
``*.data-?????-of-?????`` file of the checkpoint being saved that its index does not
name and of any other checkpoint whose index is missing, and every
part directory ``<prefix>_temp_<random>`` of a dead sharded save: the Saver creates
it with a `.live` file, under the lock, and keeps `.live` locked for the whole save,
so a missing `.live`, or one that can be locked, means a dead process.  (A part
directory ``<prefix>_temp`` -- the save op run directly, not by `Saver.save` -- is
left alone.)

Fault injection.  Every file operation of a save passes through `file_op` first,
which counts it; `crash_at = k` (or ``FLOWLAB_CHECKPOINT_CRASH_AT=k``) makes the
process SIGKILL itself just before its k-th operation, so a test can crash a save
between every pair of file operations, deterministically.  `trace` (a list, when
set) records ``(operation, path)`` for each.

Data is not fsync'ed (as TensorFlow): a killed process loses nothing the kernel has
accepted; a power loss may.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import signal
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from flowlab import errors
from flowlab.kernels import checkpoint_index as cindex

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

# --- fault injection ----------------------------------------------------------------
_env_crash = os.environ.get("FLOWLAB_CHECKPOINT_CRASH_AT")
crash_at: int | None = int(_env_crash) if _env_crash else None
trace: list[tuple[str, str]] | None = None
_count = 0
_count_lock = threading.Lock()


def reset_count() -> None:
    """Start counting file operations from zero (for `crash_at`)."""
    global _count
    with _count_lock:
        _count = 0


def file_op(kind: str, path: str) -> None:
    """Called before every file operation of a save: counts it, records it in
    `trace`, and SIGKILLs this process before operation number `crash_at`."""
    global _count
    with _count_lock:
        _count += 1
        n = _count
    if trace is not None:
        trace.append((kind, path))
    if crash_at is not None and n == crash_at:
        os.kill(os.getpid(), signal.SIGKILL)


def temp_name(path: str) -> str:
    return f"{path}.tmp-{uuid.uuid4().hex[:12]}"


def replace(src: str, dst: str) -> None:
    file_op("rename", dst)
    os.replace(src, dst)


def unlink(path: str) -> None:
    """Remove `path` if it exists."""
    if os.path.lexists(path):
        file_op("unlink", path)
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _discard(path: str) -> None:
    """`unlink` for cleanup: what cannot be removed stays (it never fails a save)."""
    try:
        unlink(path)
    except OSError:
        pass


def create(path: str) -> int:
    """Create `path` (a fresh temporary name) for writing; returns the fd."""
    file_op("create", path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file and one rename."""
    tmp = temp_name(path)
    fd = create(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


# --- the directory lock --------------------------------------------------------------
_held = threading.local()
_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


@contextlib.contextmanager
def dir_lock(directory: str, shared: bool = False) -> Iterator[None]:
    """Hold the save lock of `directory` (an exclusive flock on the directory itself;
    `shared`: a shared one, which a restore holds so that no save switches the
    checkpoint between the RestoreV2 ops of one restore)."""
    d = os.path.realpath(directory or ".")
    held: set[str] = _held.__dict__.setdefault("dirs", set())
    if d in held:
        yield
        return
    if fcntl is None:  # pragma: no cover
        with _process_locks_guard:
            lock = _process_locks.setdefault(d, threading.Lock())
        with lock:
            held.add(d)
            try:
                yield
            finally:
                held.discard(d)
        return
    fd = os.open(d, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        held.add(d)
        try:
            yield
        finally:
            held.discard(d)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


LIVE = ".live"


def hold_part_dir(directory: str) -> int:
    """Mark `directory` (a sharded save's fresh part directory) as in use: create it
    and its `.live` file, under the parent's save lock (so no cleanup sees it half
    made), and keep `.live` locked until `release_part_dir`; returns the fd."""
    with dir_lock(os.path.dirname(directory)):
        file_op("mkdir", directory)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, LIVE)
        file_op("create", path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def release_part_dir(directory: str, fd: int) -> None:
    """Release a part directory held by `hold_part_dir` and remove what is left."""
    with contextlib.suppress(OSError):
        os.close(fd)
    _remove_tree(directory)


def _part_dir_dead(directory: str, name: str) -> bool:
    """Whether a part directory belongs to no running save: a Saver's (a random
    suffix) whose `.live` is missing or not locked.  Others (the save op run
    directly) are never touched."""
    if fcntl is None or not _SAVER_PART_DIR.fullmatch(name):
        return False
    live = os.path.join(directory, LIVE)
    try:
        fd = os.open(live, os.O_RDONLY)
    except FileNotFoundError:
        return True  # killed between its mkdir and its `.live` (made under the lock)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops our lock


def _remove_tree(directory: str) -> None:
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        _discard(os.path.join(directory, name))
    file_op("rmdir", directory)
    with contextlib.suppress(OSError):
        os.rmdir(directory)


# --- what an index names ---------------------------------------------------------------
_DATA = re.compile(r"(.+)\.data-(\d{5})-of-(\d{5})(\.tmp-[0-9a-f]{12})?")
_TMP = re.compile(r".+\.tmp-[0-9a-f]{12}")
_PART_DIR = re.compile(r".+_temp(_[0-9a-f]{32})?")
_SAVER_PART_DIR = re.compile(r".+_temp_[0-9a-f]{32}")


def referenced_files(prefix: str) -> set[str]:
    """Basenames of the data files the index of `prefix` names (empty: no index, or
    one that cannot be parsed -- its files cannot be restored either way)."""
    path = prefix + ".index"
    try:
        raw = cindex.read_regular(path, 1 << 31)
        doc = json.loads(raw.decode("utf-8"))
        n = doc["num_shards"]
        files = doc.get("data_files")
        base = os.path.basename(prefix)
        if files is None:
            return {cindex.data_basename(base, i, int(n)) for i in range(int(n))}
        return {f for f in files if isinstance(f, str)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return set()


def cleanup(directory: str, keep: tuple[str, ...] = (), prefix: str | None = None) -> None:
    """Remove the leftovers of killed or failed saves in `directory` (call with its
    lock held): temporary files and data files no index names, and the part
    directories of dead Savers (not those in `keep`, the caller's own parts).

    An index is parsed only where that is needed: for temporary data names, and for
    the checkpoint `prefix` being saved; another checkpoint's canonical data files
    are leftovers when its index is missing (a directory of a thousand checkpoints
    costs a listing, not a thousand JSON parses per save).  A killed replacement of
    one path can leave that path's old canonical file beside an index that no longer
    names it; the next save of that path removes it."""
    d = directory or "."
    own = os.path.basename(prefix) if prefix is not None else None
    keep_real = {os.path.realpath(k) for k in keep}
    try:
        names = os.listdir(d)
    except OSError:
        return
    refs: dict[str, set[str]] = {}
    for name in sorted(names):
        path = os.path.join(d, name)
        m = _DATA.fullmatch(name)
        if m is not None:
            base = m.group(1)
            if m.group(4) is None and base != own:
                if not os.path.exists(os.path.join(d, base + ".index")):
                    _discard(path)
                continue
            if base not in refs:
                refs[base] = referenced_files(os.path.join(d, base))
            if name not in refs[base]:
                _discard(path)
        elif _TMP.fullmatch(name):
            _discard(path)
        elif (_PART_DIR.fullmatch(name) and os.path.realpath(path) not in keep_real
              and os.path.isdir(path) and _part_dir_dead(path, name)):
            _remove_tree(path)


# --- committing ------------------------------------------------------------------------
def commit(prefix: str, staged: list[str], tensors: dict[str, dict[str, Any]],
           version: int, fmt_name: str) -> None:
    """Make the complete data files `staged` (one per shard, any names in the prefix's
    directory) checkpoint `prefix`, with index entries `tensors` (steps 3-6 of the
    module docstring).  Call with the directory's lock held."""
    n = len(staged)
    d = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    old = referenced_files(prefix)
    names: list[str] = []
    kept_tmp: list[int] = []
    for i, src in enumerate(staged):
        canonical = cindex.data_basename(base, i, n)
        if canonical in old:
            tmp = temp_name(os.path.join(d, canonical))
            if os.path.dirname(os.path.abspath(src)) != os.path.abspath(d or "."):
                replace(src, tmp)  # a part of a sharded save: into this directory
                src = tmp
            names.append(os.path.basename(src))
            kept_tmp.append(i)
        else:
            replace(src, os.path.join(d, canonical))
            names.append(canonical)

    def write_index() -> None:
        doc = {"format": fmt_name, "version": version, "num_shards": n, "data_files": names,
               "tensors": dict(sorted(tensors.items()))}
        write_text(prefix + ".index", json.dumps(doc, separators=(",", ":")))

    write_index()  # the switch
    if kept_tmp:
        for i in kept_tmp:
            unlink(os.path.join(d, cindex.data_basename(base, i, n)))
        linked = []
        for i in kept_tmp:
            canonical = cindex.data_basename(base, i, n)
            file_op("link", os.path.join(d, canonical))
            try:
                os.link(os.path.join(d, names[i]), os.path.join(d, canonical))
            except OSError:  # no hard links here: the temporary names stay valid
                continue
            linked.append((i, names[i]))
            names[i] = canonical
        if linked:
            write_index()  # the second switch: canonical names
            for _i, tmp_name in linked:
                unlink(os.path.join(d, tmp_name))
    now = set(names)
    for f in sorted(old - now):
        unlink(os.path.join(d, f))


def check_parts_exist(sources: list[str]) -> None:
    for s in sources:
        if not os.path.exists(s + ".index"):
            raise errors.DataLossError(
                None, None, f"MergeV2Checkpoints: part checkpoint {s} is missing (its save "
                "failed, or another process removed it)."
            )


def part_data_files(prefix: str) -> list[str]:
    return glob.glob(glob.escape(prefix) + ".data-?????-of-?????*")


__all__ = ["commit", "cleanup", "dir_lock", "file_op", "write_text", "temp_name", "replace",
           "unlink", "create", "hold_part_dir", "release_part_dir", "referenced_files"]
