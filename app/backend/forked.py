"""A computation run in a forked child at the lowest CPU priority, its result piped back.

Why: a what-if schedules up to hundreds of pods over every node, seconds of pure Python.
On a thread of the serving process it holds the GIL that the verbs' event loop needs between
every read and write, and kube-scheduler's calls waited behind it (p99 doubled while one
ran). A forked child has its own interpreter and GIL; it reads the parent's memory copy on
write (the private copy the what-if prepared, nothing live), and at nice 19 it takes a CPU
only when the verbs leave one idle.

The child touches nothing but the function's own objects, writes one pickle to a pipe and
leaves with ``os._exit`` (no atexit handlers, no flushing of the parent's buffers). It first
closes every descriptor but that pipe and stdio: a copy of a connection or listening socket
held by the child would keep it open after the parent closes it (no FIN to the client, the
port still bound) for as long as the child runs.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import signal
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Niceness of the child: the scheduler gives it a CPU only when nothing else wants one.
CHILD_NICENESS = 19


class ForkedFailure(RuntimeError):
    """The child died without an answer (killed, out of memory)."""


def run_forked(fn: Callable[[], T]) -> T:
    """``fn()`` computed in a forked child; its exception, if any, is raised here. Blocks
    the calling thread (run it off the event loop)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        status = 0
        try:
            write_end = _keep_only(write_end)
            with contextlib.suppress(OSError):
                os.nice(CHILD_NICENESS)
            try:
                payload = pickle.dumps((True, fn()))
            except BaseException as exc:  # the parent re-raises it
                payload = pickle.dumps((False, exc))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
    finally:
        _reap(pid)
    if not data:
        raise ForkedFailure("the forked computation ended without an answer")
    ok, value = pickle.loads(data)
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def _keep_only(fd: int) -> int:
    """Closes every descriptor above stdio but ``fd``, moved to 3; returns it."""
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = limit if limit != resource.RLIM_INFINITY else 1 << 20
    os.closerange(4, top)
    return 3


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        return
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
