"""The background worker: runs persisted extraction jobs off the reply path, one at a time.

`submit` returns at once; the job is already in the pending queue (the caller persisted it),
so a crash before or during the work loses nothing: the next worker of any process drains
the queue's due jobs when it starts (`drain`), and `Memory.retry_pending` does the same on
demand. Failures are logged and the job stays queued with a growing delay.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from mneme.context import Context
from mneme.memory.queue import PendingJob
from mneme.memory.usage import join_within
from mneme.shutdown import stopping

log = logging.getLogger("mneme.extract")

EXIT_FLUSH_S = 10.0
"""At interpreter exit, wait this long for queued work to finish (the rest stays persisted)."""
STOP_FLUSH_S = 2.0
"""When the process is stopping (SIGTERM), wait at most this long for the running job."""


@dataclass
class _Task:
    store: BaseStore
    context: Context
    model: str | BaseChatModel | None
    job: PendingJob | None
    """None: drain every due job of the store."""


class BackgroundWorker:
    """A daemon thread that runs extraction jobs in submission order."""

    def __init__(self) -> None:
        self._tasks: queue.Queue[_Task] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._drained: set[int] = set()
        self.failures = 0
        """Jobs that raised (they stay queued for a retry)."""

    def submit(
        self, store: BaseStore, job: PendingJob, *, context: Context, model: str | BaseChatModel | None
    ) -> None:
        """Run a (persisted) job in the background; the first job of a store also drains its queue."""
        with self._lock:
            if id(store) not in self._drained:
                self._drained.add(id(store))
                self._tasks.put(_Task(store, context, model, None))
            self._tasks.put(_Task(store, context, model, job))
            if self._thread is None or not self._thread.is_alive():
                if self._thread is None:
                    # registered now, after the home was opened: runs before the home closes
                    atexit.register(self.flush, EXIT_FLUSH_S)
                self._thread = threading.Thread(target=self._loop, name="mneme-extract", daemon=True)
                self._thread.start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job ran; False if `timeout` passed first.

        While the process is stopping (`mneme.shutdown`), jobs not started are skipped (they
        stay in the pending queue for the next start) and this waits for the running one only.
        """
        if stopping():
            timeout = min(timeout, STOP_FLUSH_S) if timeout is not None else STOP_FLUSH_S
        return join_within(self._tasks, timeout)

    def _loop(self) -> None:
        from mneme.memory.pipeline import Pipeline

        while True:
            task = self._tasks.get()
            if stopping():  # the job stays persisted in the pending queue for the next start
                self._tasks.task_done()
                continue
            try:
                pipeline = Pipeline(task.store, task.context, task.model)
                if task.job is None:
                    pipeline.retry()
                else:
                    current = pipeline.queue.get(task.job.user_id, task.job.id)
                    # skip it if a drain (or another worker) already ran it, well or not
                    if current is not None and current.attempts == task.job.attempts:
                        pipeline.run(current, queued=True)
            except Exception as exc:  # never let one job stop the worker
                self.failures += 1
                log.exception("mneme: background extraction failed: %s", exc)
                if task.job is not None:
                    try:
                        from mneme.memory.queue import PendingQueue

                        PendingQueue(task.store).failed(task.job, f"{type(exc).__name__}: {exc}")
                    except Exception:  # the store itself is failing: the job is still persisted
                        log.exception("mneme: could not record the failure of job %s", task.job.id)
            finally:
                self._tasks.task_done()


_worker: BackgroundWorker | None = None
_worker_lock = threading.Lock()


def worker() -> BackgroundWorker:
    """The process's background worker."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = BackgroundWorker()
        return _worker
