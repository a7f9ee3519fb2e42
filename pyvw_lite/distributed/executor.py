"""Where the shard tasks run: ``serial``, ``processes:N`` (this machine, no extra dependency) or
Dask (``dask:ADDRESS`` for a running scheduler, ``dask-local:N`` for a local cluster; the
optional ``dask`` extra).

An executor holds shard data where the tasks run (``put``) and maps a module-level task over
argument tuples (``map``).  Tasks import pyvw_lite inside the worker, so each worker loads the
numba kernels from its own on-disk cache (never ship dispatchers or upload files: that defeats
the cache, ECOSYSTEM §1.4).  Arrays a task receives are copied before any in-place update.
"""
from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import wait

_KEYS = itertools.count()
HEARTBEAT = 1.0  # seconds between a busy worker's "alive" messages
DEFAULT_TIMEOUT = 60.0  # seconds of silence after which a worker is taken for hung


class WorkerError(ValueError):
    """A shard's worker that died or hung past its retries (a ValueError, so every command
    reports it as one line); the message names the executor and the shard."""


def worker_timeout() -> float:
    """Seconds of silence before a worker counts as hung: ``PYVW_LITE_WORKER_TIMEOUT`` or 60."""
    text = os.environ.get("PYVW_LITE_WORKER_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        value = 0.0
    if not value > 0.0:
        raise ValueError(f"PYVW_LITE_WORKER_TIMEOUT={text!r}: seconds, a positive number")
    return value


class SerialExecutor:
    name = "serial"
    workers = 1
    same_machine = True  # workers can read this machine's files: shards go as byte ranges

    def put(self, data):
        return data

    def map(self, task, handles, args):
        """``[task(data_i, *args_i)]`` for each handle and argument tuple, in order."""
        return [task(handle, *extra) for handle, extra in zip(handles, args)]

    def close(self) -> None:
        pass


def _serve(connection) -> None:
    """A worker process: keeps the shards it is given and runs tasks on them, one at a time.
    While a task runs, a thread says "alive" every second, so the driver can tell a long task
    from a hung or stopped process.  Ctrl-C is the driver's to handle: it stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store: dict[int, object] = {}
    lock = threading.Lock()
    busy = threading.Event()

    def heartbeat():
        while True:
            time.sleep(HEARTBEAT)
            if busy.is_set():
                with lock:
                    try:
                        connection.send(("alive", None))
                    except OSError:
                        return

    threading.Thread(target=heartbeat, daemon=True).start()
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        if message[0] == "put":
            store[message[1]] = message[2]
            continue
        _, task, key, args = message
        busy.set()
        try:
            reply = ("ok", task(store[key], *args))
        except Exception as exc:  # the task's own error goes back to the driver
            reply = ("error", exc)
        busy.clear()
        with lock:
            connection.send(reply)


class ProcessExecutor:
    """N fresh ("spawn") processes on this machine.  Each shard lives in one process, which
    receives it once and runs every task on it, so what a task keeps with its shard (parsed
    examples) stays useful.  A process that dies is started again with its shards and its task
    is repeated.  (Fork is unsafe once numba's threads exist.)"""

    def __init__(self, workers: int, timeout: float | None = None):
        if workers < 1:
            raise ValueError("processes:N needs N >= 1")
        self.timeout = worker_timeout() if timeout is None else timeout
        self.name = f"processes:{workers}"
        self.workers = workers
        self.same_machine = True
        self.context = multiprocessing.get_context("spawn")
        self.processes: list = [None] * workers
        self.connections: list = [None] * workers
        self.payloads: dict[int, object] = {}
        self.owner: dict[int, int] = {}

    def _start(self, worker: int) -> None:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(child,), daemon=True)
        process.start()
        child.close()
        self.processes[worker], self.connections[worker] = process, parent
        for key, owner in self.owner.items():
            if owner == worker:
                parent.send(("put", key, self.payloads[key]))

    def put(self, data):
        key = next(_KEYS)
        self.payloads[key] = data
        self.owner[key] = worker = len(self.owner) % self.workers
        if self.connections[worker] is not None:
            self.connections[worker].send(("put", key, data))
        return key

    def map(self, task, handles, args):
        """Each worker runs its shards' tasks in turn; a task is sent only when its worker is
        free (big arguments and results never wait on each other in a full pipe)."""
        for worker in range(self.workers):
            if self.connections[worker] is None:
                self._start(worker)
        queues: dict[int, list[int]] = {}
        for index, handle in enumerate(handles):
            queues.setdefault(self.owner[handle], []).append(index)
        jobs = list(zip(handles, args))
        results: list = [None] * len(jobs)
        running: dict = {}  # connection -> (worker, job index, attempts)
        heard: dict = {}  # connection -> when it last said anything

        def send(worker: int, index: int, attempt: int) -> None:
            handle, extra = jobs[index]
            try:
                self.connections[worker].send(("run", task, handle, extra))
            except OSError:  # it died while idle
                restart(worker, index, attempt, "died")
                send(worker, index, attempt + 1)
                return
            running[self.connections[worker]] = (worker, index, attempt)
            heard[self.connections[worker]] = time.monotonic()

        def restart(worker: int, index: int, attempt: int, what: str) -> None:
            process = self.processes[worker]
            if process.is_alive():
                process.kill()
            process.join(timeout=5)
            self.connections[worker].close()
            if attempt >= 2:
                self.connections[worker] = None
                shard = list(self.payloads).index(jobs[index][0]) + 1
                raise WorkerError(f"{self.name}: the worker running shard {shard} of "
                                  f"{len(self.payloads)} {what} 3 times (last exit code "
                                  f"{process.exitcode}); giving up")
            self._start(worker)

        for worker, indices in queues.items():
            send(worker, indices.pop(0), 0)
        while running:
            ready = wait(list(running), timeout=min(self.timeout, HEARTBEAT * 5))
            now = time.monotonic()
            for connection in list(running):
                if connection not in ready and now - heard[connection] > self.timeout:
                    worker, index, attempt = running.pop(connection)  # hung or stopped
                    restart(worker, index, attempt, f"sent nothing for {self.timeout:g} s")
                    send(worker, index, attempt + 1)
            for connection in ready:
                if connection not in running:
                    continue
                worker, index, attempt = running[connection]
                try:
                    status, value = connection.recv()
                except (EOFError, OSError):  # the process died: start it again, repeat the task
                    running.pop(connection)
                    restart(worker, index, attempt, "died")
                    send(worker, index, attempt + 1)
                    continue
                heard[connection] = time.monotonic()
                if status == "alive":
                    continue
                running.pop(connection)
                if status == "error":
                    raise value
                results[index] = value
                if queues[worker]:
                    send(worker, queues[worker].pop(0), 0)
        return results

    def close(self) -> None:
        live = [(process, connection) for process, connection
                in zip(self.processes, self.connections) if connection is not None]
        for _, connection in live:  # all stop at once
            try:
                connection.send(None)
            except OSError:
                pass
        for process, connection in live:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
            connection.close()
        self.processes = [None] * self.workers
        self.connections = [None] * self.workers
        self.payloads.clear()
        self.owner.clear()


@contextlib.contextmanager
def _workers_leave_ctrl_c_to_us():
    """Processes started inside inherit an ignored SIGINT (Python keeps a disposition its
    parent changed), so Ctrl-C stops the driver, which closes them, instead of printing each
    worker's KeyboardInterrupt traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class DaskExecutor:
    """Dask distributed: shards are scattered once and stay on the workers as futures."""

    def __init__(self, address: str | None = None, workers: int = 2):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("the dask executor needs the dask extra: "
                             "pip install 'pyvw-lite[dask]'") from None
        self.same_machine = not address  # a remote cluster's workers get the lines themselves
        if address:
            self.cluster = None
            self.client = Client(address)
            self.name = f"dask:{address}"
        else:
            with _workers_leave_ctrl_c_to_us():
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                            processes=True, dashboard_address=":0")
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
            futures = [self.client.submit(task, self.scattered[handle], *extra, pure=False)
                       for handle, extra in zip(handles, args)]
            try:
                return self.client.gather(futures)
            except KeyboardInterrupt:
                # Ctrl-C: the driver stops the cluster; what the interrupted wait leaves behind
                # (an unretrieved task exception, workers closing) is not the user's to read
                import logging
                for name in ("asyncio", "distributed", "tornado"):
                    logging.getLogger(name).setLevel(logging.CRITICAL + 1)
                raise
            except Exception:
                # a lost worker takes its scattered shards with it: scatter again and retry;
                # any other failure is the task's own and would only repeat
                if attempt == 2 or all(shard.status == "finished" for shard in self.scattered):
                    raise
                self.client.wait_for_workers(1, timeout=60)
                self.scattered = [self._scatter(data) for data in self.payloads]
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


MAX_WORKERS = 1024  # processes:N and dask-local:N start N processes on this machine


def executor_from(spec: str, timeout: float | None = None):
    """``serial``, ``processes:N``, ``dask:ADDRESS`` or ``dask-local:N`` (``timeout``: seconds
    of silence before a process worker counts as hung; default :func:`worker_timeout`)."""
    kind, _, value = spec.partition(":")
    if kind == "serial" and not value:
        return SerialExecutor()
    if kind == "processes":
        return ProcessExecutor(_worker_count(spec, kind, value), timeout)
    if kind == "dask" and value:
        return DaskExecutor(address=value)
    if kind == "dask-local":
        return DaskExecutor(workers=_worker_count(spec, kind, value))
    raise ValueError(f"--executor {spec!r}: expected serial, processes:N, dask:ADDRESS or "
                     "dask-local:N")


def _worker_count(spec: str, kind: str, value: str) -> int:
    """The N of ``processes:N`` / ``dask-local:N`` (2 when left out)."""
    try:
        count = int(value or 2)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"--executor {spec!r}: {kind}:N needs a whole number N of at least 1 "
                         f"and at most {MAX_WORKERS} (one process per worker)")
    return count
