"""Running independent blocks of array work on the machine's cores.

dprec answers a test set in blocks of queries whose numpy work releases the
GIL, so blocks run in threads.  The thread count follows the limit a caller
already set for BLAS/OpenMP: joblib's process workers (Surprise's
``cross_validate(n_jobs=...)``) and Dask workers set ``OMP_NUM_THREADS`` so
that parallel jobs do not oversubscribe the cores, and dprec honours it.
``DPREC_NUM_THREADS`` overrides both.  `map_on_dask` runs blocks as
tasks on a ``dask.distributed`` cluster instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

_LIMITS = ("DPREC_NUM_THREADS", "OMP_NUM_THREADS")


def thread_count() -> int:
    """Threads dprec may use: ``DPREC_NUM_THREADS``, else ``OMP_NUM_THREADS``,
    else the CPUs this process may run on (at least 1)."""
    for variable in _LIMITS:
        value = os.environ.get(variable, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def map_blocks(function: Callable[[T], R], blocks: Iterable[T]) -> list[R]:
    """``[function(block) for block in blocks]``, in threads when there is more than
    one block and more than one thread; results in the order of ``blocks``.

    The threads are one pool per process, started at the first call (starting
    threads for every call cost milliseconds per call, as much as a small
    fold's arithmetic).  A call from inside a block runs its blocks in that
    thread (so blocks never wait for a pool they occupy).  Every block has
    finished when the call returns or raises (the first exception, in block
    order).  ``function`` must not write shared state (write results, not
    attributes), nor wait inside a block for another thread that calls this
    (e.g. an in-process Dask cluster): that thread's blocks would queue
    behind the busy pool.
    """
    blocks = list(blocks)
    workers = min(thread_count(), len(blocks))
    if workers <= 1 or getattr(_IN_POOL, "active", False):
        return [function(block) for block in blocks]
    futures = [_pool().submit(function, block) for block in blocks]
    wait(futures)
    return [future.result() for future in futures]


def _pool() -> ThreadPoolExecutor:
    """The process's pool of `thread_count` threads (a new one if that changed;
    the old one's idle threads exit once it is unreferenced)."""
    with _POOL_LOCK:
        size = thread_count()
        if _POOL.get("size") != size:
            _POOL.update(size=size, pool=ThreadPoolExecutor(
                max_workers=size, thread_name_prefix="dprec", initializer=_in_pool))
        return _POOL["pool"]


def _in_pool() -> None:
    _IN_POOL.active = True


def _forget_pool() -> None:
    """In a forked child: the parent's threads do not exist there."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _POOL.clear()


_POOL: dict = {}
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def map_on_dask(function: Callable[[S, T], R], state: S, blocks: Iterable[T]) -> list[R]:
    """``[function(state, block) for block in blocks]`` as tasks on the
    ``dask.distributed`` client in scope, ``state`` sent to every worker once; raises
    as `dask_client_in_scope` without a client."""
    client = dask_client_in_scope()
    blocks = list(blocks)
    shared = client.scatter(state, broadcast=True, hash=False)
    futures = client.map(function, [shared] * len(blocks), blocks, pure=False)
    return client.gather(futures)


def dask_client_in_scope():
    """The ``dask.distributed`` client in scope (``get_client()``), for ``backend="dask"``.

    Raises
    ------
    ImportError
        Without ``dask[distributed]`` (the ``dask`` extra).
    ValueError
        If no client is in scope (create one, e.g. ``Client(LocalCluster())``,
        or an address of a running scheduler, before calling).
    """
    try:
        from distributed import get_client
    except ImportError as error:  # pragma: no cover - depends on the extra
        raise ImportError("backend='dask' needs dask[distributed]: "
                          "pip install 'dprec[dask]'") from error
    try:
        return get_client()
    except ValueError as error:
        raise ValueError("backend='dask' runs the blocks on the dask.distributed client in "
                         "scope, and there is none: create one first (e.g. "
                         "Client(LocalCluster()) or Client('tcp://scheduler:8786'))") from error
