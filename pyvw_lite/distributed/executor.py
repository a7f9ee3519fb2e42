"""Where the shard tasks run: ``serial``, ``processes:N`` (this machine, no extra dependency) or
Dask (``dask:ADDRESS`` for a running scheduler, ``dask-local:N`` for a local cluster; the
optional ``dask`` extra).

An executor holds shard data where the tasks run (``put``) and maps a module-level task over
argument tuples (``map``).  Tasks import pyvw_lite inside the worker, so each worker loads the
numba kernels from its own on-disk cache (never ship dispatchers or upload files: that defeats
the cache, ECOSYSTEM §1.4).  Arrays a task receives are copied before any in-place update.
"""
from __future__ import annotations

import itertools
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

_STORE: dict[int, object] = {}  # shard data of a process pool, set in each worker at its start
_KEYS = itertools.count()


def _receive(store: dict) -> None:
    _STORE.update(store)


def _call_with_stored(task, key, args):
    return task(_STORE[key], *args)


class SerialExecutor:
    name = "serial"
    workers = 1

    def put(self, data):
        return data

    def map(self, task, handles, args):
        """``[task(data_i, *args_i)]`` for each handle and argument tuple, in order."""
        return [task(handle, *extra) for handle, extra in zip(handles, args)]

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A pool of fresh ("spawn") processes, which each receive the shard data once when they
    start instead of with every task.  (Fork is unsafe once numba's OpenMP threads exist.)"""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError("processes:N needs N >= 1")
        self.name = f"processes:{workers}"
        self.workers = workers
        self.pool = None
        self.store: dict[int, object] = {}

    def put(self, data):
        if self.pool is not None:  # new data: the next map starts workers that receive it all
            self.pool.shutdown()
            self.pool = None
        key = next(_KEYS)
        self.store[key] = data
        return key

    def map(self, task, handles, args):
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.workers,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_receive, initargs=(self.store,))
        futures = [self.pool.submit(_call_with_stored, task, handle, extra)
                   for handle, extra in zip(handles, args)]
        return [future.result() for future in futures]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        self.store.clear()


class DaskExecutor:
    """Dask distributed: shards are scattered once and stay on the workers as futures."""

    def __init__(self, address: str | None = None, workers: int = 2):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("the dask executor needs the dask extra: "
                             "pip install 'pyvw-lite[dask]'") from None
        if address:
            self.cluster = None
            self.client = Client(address)
            self.name = f"dask:{address}"
        else:
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=":0")
            self.client = Client(self.cluster)
            self.name = f"dask-local:{workers}"
        self.workers = len(self.client.scheduler_info().get("workers", {})) or workers
        self.payloads: list = []
        self.scattered: list = []

    def put(self, data):
        """Scatter once; the driver keeps its copy to scatter again after a worker loss."""
        self.payloads.append(data)
        self.scattered.append(self._scatter(data))
        return len(self.payloads) - 1

    def _scatter(self, data):
        # in a list: scattering a dict would scatter its values under the dict's own keys, and
        # two shards with the same field names would overwrite each other
        return self.client.scatter([data], broadcast=False, hash=False)[0]

    def map(self, task, handles, args):
        for attempt in range(3):
            futures = [self.client.submit(task, self.scattered[handle], *extra, pure=False,
                                          retries=2)
                       for handle, extra in zip(handles, args)]
            try:
                return self.client.gather(futures)
            except Exception:  # a lost worker takes its scattered shards with it
                if attempt == 2:
                    raise
                self.client.wait_for_workers(1, timeout=60)
                self.scattered = [self._scatter(data) for data in self.payloads]
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def executor_from(spec: str):
    """``serial``, ``processes:N``, ``dask:ADDRESS`` or ``dask-local:N``."""
    kind, _, value = spec.partition(":")
    if kind == "serial" and not value:
        return SerialExecutor()
    if kind == "processes":
        try:
            return ProcessExecutor(int(value or 2))
        except ValueError:
            raise ValueError(f"--executor {spec!r}: processes:N needs a whole number N") from None
    if kind == "dask" and value:
        return DaskExecutor(address=value)
    if kind == "dask-local":
        try:
            return DaskExecutor(workers=int(value or 2))
        except ValueError as exc:
            if "dask extra" in str(exc):
                raise
            raise ValueError(f"--executor {spec!r}: dask-local:N needs a whole number N") from None
    raise ValueError(f"--executor {spec!r}: expected serial, processes:N, dask:ADDRESS or "
                     "dask-local:N")
