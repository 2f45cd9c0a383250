"""A computation run in a forked child at a low CPU priority, its result piped back.

Why: a what-if schedules up to hundreds of pods over every node, and a reclaim cycle over ten
thousand waiting pods orders and tries every one of them: a second or more of pure Python.
On a thread of the serving process either holds the GIL that the verbs' event loop needs
between every read and write, and kube-scheduler's calls waited behind it (a what-if doubled
their p99; a reclaim cycle made them up to twice as long). A forked child has its own
interpreter and GIL, so it also runs on another core; it reads the parent's memory copy on
write (a private copy prepared for it, nothing the parent changes meanwhile), and at a low
priority it takes a CPU mostly when the verbs leave one idle.

The child touches nothing but the function's own objects, writes one pickle to a pipe and
leaves with ``os._exit`` (no atexit handlers, no flushing of the parent's buffers). It first
closes every descriptor but that pipe and stdio: a copy of a connection or listening socket
held by the child would keep it open after the parent closes it (no FIN to the client, the
port still bound) for as long as the child runs. It asks the kernel to pick it first when
memory runs out: its pages are copies of the parent's, and a child killed costs one answer,
the parent killed costs the service.

Only the forking thread lives on in the child: a lock another thread held at that moment
stays held there forever. What the function reads under a lock is passed as ``hold``: those
locks are taken before the fork and let go on both sides after it, so the child finds each
free and what it guards whole.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TypeVar, cast

T = TypeVar("T")

#: Niceness of a child by default: the scheduler gives it a CPU only when nothing else wants one.
CHILD_NICENESS = 19
#: The child's ``oom_score_adj``: the first process the kernel ends when memory runs out.
CHILD_OOM_SCORE_ADJ = 1000
#: Bytes read from the pipe at a time.
_CHUNK = 1 << 20


class ForkedFailure(RuntimeError):
    """The child gave no answer: it died (killed, out of memory) or ran past its deadline."""


def run_forked(
    fn: Callable[[], T],
    *,
    niceness: int = CHILD_NICENESS,
    timeout: float | None = None,
    hold: Iterable[AbstractContextManager[object]] = (),
    dumps: Callable[[object], bytes] = pickle.dumps,
    loads: Callable[[bytes], object] = pickle.loads,
) -> T:
    """``fn()`` computed in a forked child; its exception, if any, is raised here. Blocks
    the calling thread (run it off the event loop).

    ``niceness``: added to the child's. ``timeout``: seconds after which a child still
    computing is killed and ``ForkedFailure`` raised (None: no deadline). ``hold``: entered
    around the fork and left on both sides (see the module docstring). ``dumps`` / ``loads``:
    how the child's ``(ok, value)`` pair crosses the pipe (a caller may send references to
    objects the parent also holds, in place of copies)."""
    read_end, write_end = os.pipe()
    with contextlib.ExitStack() as held:
        for lock in hold:
            held.enter_context(lock)
        pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        status = 0
        try:
            write_end = _keep_only(write_end)
            _deprioritize(niceness)
            try:
                payload = dumps((True, fn()))
            except BaseException as exc:  # the parent re-raises it
                payload = dumps((False, exc))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        data = _read_all(read_end, pid, timeout)
    finally:
        os.close(read_end)
        _reap(pid)
    if not data:
        raise ForkedFailure("the forked computation ended without an answer")
    ok, value = cast(tuple[bool, object], loads(data))
    if ok:
        return cast(T, value)
    raise cast(BaseException, value)


def _read_all(fd: int, pid: int, timeout: float | None) -> bytes:
    """Everything the child writes until it closes the pipe; past ``timeout``, the child is
    killed and ``ForkedFailure`` raised. ``poll``, not ``select``: the serving process raises
    its open-files limit, and a descriptor above 1023 is beyond ``select``'s reach."""
    chunks: list[bytes] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1e3):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                raise ForkedFailure(
                    f"the forked computation gave no answer within {timeout:g}s: stopped"
                )
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _deprioritize(niceness: int) -> None:
    with contextlib.suppress(OSError):
        os.nice(niceness)
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write(str(CHILD_OOM_SCORE_ADJ))


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
