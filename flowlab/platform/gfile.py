"""`tf.gfile` / `tf.io.gfile`: TensorFlow's file API over the local file system.

Files and directories behave as TensorFlow's POSIX file system: a `GFile` opens its
file on first use (so a missing file fails at the first read, not at `GFile(...)`),
reads and writes bytes underneath and decodes/encodes UTF-8 in text modes (no
newline translation), `tell()` counts bytes.  Failures raise TensorFlow's error
classes with its messages: `NotFoundError("x; No such file or directory")`,
`AlreadyExistsError("file already exists")`, `FailedPreconditionError("d; Is a
directory")`, `PermissionDeniedError("File isn't open for reading")`.  Listing
follows the directory's own order, as TensorFlow's does.  Only local paths are
served (no gs://, hdfs:// or s3:// schemes).

    with tf.io.gfile.GFile("out/log.txt", "w") as f:
        f.write("step 1\\n")
    tf.gfile.Exists("out/log.txt")       # True
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import Any

from flowlab import errors

__all__ = [
    "GFile", "FastGFile", "FileStatistics", "copy", "exists", "glob",
    "isdir", "join", "listdir", "makedirs", "mkdir", "remove", "rename", "rmtree", "stat", "walk",
]

_ERRNO_CLASSES: dict[int, type[errors.OpError]] = {
    errno.ENOENT: errors.NotFoundError,
    errno.EEXIST: errors.AlreadyExistsError,
    errno.EACCES: errors.PermissionDeniedError,
    errno.EPERM: errors.PermissionDeniedError,
    errno.EISDIR: errors.FailedPreconditionError,
    errno.ENOTDIR: errors.FailedPreconditionError,
    errno.ENOTEMPTY: errors.FailedPreconditionError,
    errno.EROFS: errors.PermissionDeniedError,
    errno.ENOSPC: errors.ResourceExhaustedError,
}


def _path(p: Any) -> str:
    p = os.fspath(p)
    return p.decode() if isinstance(p, bytes) else p


def _os_error(e: OSError, path: str) -> errors.OpError:
    cls = _ERRNO_CLASSES.get(e.errno or 0, errors.UnknownError)
    return cls(None, None, f"{path}; {e.strerror}")


class GFile:
    """A file with TensorFlow's file API (`tf.io.gfile.GFile`, `tf.gfile.Open`)."""

    def __init__(self, name: Any, mode: str = "r") -> None:
        self.__name = _path(name)
        self.__mode = mode
        self._file: Any = None
        if mode not in ("r", "w", "a", "r+", "w+", "a+", "rb", "wb", "ab", "rb+", "wb+", "ab+",
                        "r+b", "w+b", "a+b"):
            self._bad_mode = True
        else:
            self._bad_mode = False
        self._binary = "b" in mode
        self._readable = "r" in mode or "+" in mode
        self._writable = "w" in mode or "a" in mode or "+" in mode

    @property
    def name(self) -> str:
        return self.__name

    @property
    def mode(self) -> str:
        return self.__mode

    def _check_mode(self) -> None:
        if self._bad_mode:
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")

    def _open(self) -> Any:
        self._check_mode()
        if self._file is None:
            pymode = self.__mode.replace("b", "") + "b"
            try:
                self._file = open(self.__name, pymode)  # noqa: SIM115 - closed by close()
            except OSError as e:
                raise _os_error(e, self.__name) from None
        return self._file

    def _for_reading(self) -> Any:
        self._check_mode()
        if not self._readable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        f = self._open()
        if os.path.isdir(self.__name):
            raise errors.FailedPreconditionError(None, None, f"{self.__name}; Is a directory")
        return f

    def _text(self, data: bytes) -> Any:
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The file's length in bytes."""
        return stat(self.__name).length

    def write(self, file_content: Any) -> None:
        """Write `str` (as UTF-8) or `bytes`, in any mode."""
        self._check_mode()
        if not self._writable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        data = file_content.encode("utf-8") if isinstance(file_content, str) else bytes(file_content)
        self._open().write(data)

    def read(self, n: int = -1) -> Any:
        """`n` bytes (all that is left when `n` is -1), as `str` in text modes."""
        f = self._for_reading()
        return self._text(f.read() if n is None or n < 0 else f.read(n))

    def readline(self) -> Any:
        return self._text(self._for_reading().readline())

    def readlines(self) -> list[Any]:
        return [self._text(line) for line in self._for_reading().readlines()]

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> None:
        """Move to byte `offset` (from the start, the position or the end: `whence`)."""
        if position is not None:
            offset = position
        self._open().seek(offset or 0, whence)

    def tell(self) -> int:
        return int(self._open().tell())

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FastGFile(GFile):
    """`tf.gfile.FastGFile`: a GFile (TensorFlow deprecated the distinction)."""


class FileStatistics:
    """What `stat` reports: `length` (bytes), `mtime_nsec`, `is_directory`."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool) -> None:
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self) -> str:
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def exists(path: Any) -> bool:
    return os.path.exists(_path(path))


def isdir(path: Any) -> bool:
    return os.path.isdir(_path(path))


def listdir(path: Any) -> list[str]:
    """The names in directory `path`, in the directory's order."""
    p = _path(path)
    if not os.path.isdir(p):
        raise errors.NotFoundError(None, None, f"Could not find directory {p}")
    return os.listdir(p)


def glob(pattern: Any) -> list[str]:
    """The paths matching `pattern` (or any of a list of patterns); a pattern without
    a directory matches under "./", as TensorFlow's does."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    out: list[str] = []
    for pat in patterns:
        p = _path(pat)
        if not os.path.dirname(p):
            p = os.path.join(".", p)
        out.extend(_glob.glob(p))
    return out


def mkdir(path: Any) -> None:
    """Create directory `path` (its parent must exist; an existing one is kept)."""
    p = _path(path)
    try:
        os.mkdir(p)
    except FileExistsError:
        if not os.path.isdir(p):
            raise errors.FailedPreconditionError(None, None, f"{p} is not a directory") from None
    except OSError as e:
        raise _os_error(e, p) from None


def makedirs(path: Any) -> None:
    """Create directory `path` and its missing parents."""
    p = _path(path)
    if os.path.exists(p) and not os.path.isdir(p):
        raise errors.FailedPreconditionError(None, None, f"{p} is not a directory")
    try:
        os.makedirs(p, exist_ok=True)
    except OSError as e:
        raise _os_error(e, p) from None


def remove(path: Any) -> None:
    """Delete the file `path`."""
    p = _path(path)
    if os.path.isdir(p):
        raise errors.FailedPreconditionError(None, None, f"{p}; Is a directory")
    try:
        os.remove(p)
    except OSError as e:
        raise _os_error(e, p) from None


def rmtree(path: Any) -> None:
    """Delete the directory `path` and everything in it."""
    p = _path(path)
    if not os.path.exists(p):
        raise errors.NotFoundError(None, None, f"{p} not found")
    try:
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    except OSError as e:
        raise _os_error(e, p) from None


def copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copy file `oldpath` to `newpath` (AlreadyExistsError unless `overwrite`)."""
    src, dst = _path(oldpath), _path(newpath)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, None, "file already exists")
    try:
        shutil.copyfile(src, dst)
    except OSError as e:
        raise _os_error(e, src if not os.path.exists(src) else dst) from None


def rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Move `oldname` to `newname` (AlreadyExistsError unless `overwrite`)."""
    src, dst = _path(oldname), _path(newname)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, None, "file already exists")
    try:
        os.replace(src, dst)
    except OSError as e:
        raise _os_error(e, src if not os.path.exists(src) else dst) from None


def stat(path: Any) -> FileStatistics:
    p = _path(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise _os_error(e, p) from None
    # TensorFlow's POSIX file system reports whole seconds in nanoseconds.
    return FileStatistics(int(st.st_size), int(st.st_mtime) * 10**9, os.path.isdir(p))


def walk(top: Any, topdown: bool = True, onerror: Any = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """`(dirname, subdirs, files)` for `top` and every directory under it; nothing
    for a missing `top` (`onerror` is called with the error)."""
    t = _path(top)
    try:
        names = listdir(t)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    subdirs = [n for n in names if os.path.isdir(os.path.join(t, n))]
    files = [n for n in names if n not in subdirs]
    if topdown:
        yield t, subdirs, files
    for d in subdirs:
        yield from walk(os.path.join(t, d), topdown, onerror)
    if not topdown:
        yield t, subdirs, files


def join(path: Any, *paths: Any) -> str:
    return os.path.join(_path(path), *[_path(p) for p in paths])
