"""``pyvw-lite crowd``: the command's errors and exit status around the crowd run
(``crowd/run.py``), and ``--executor``'s sharded batch EM, which the run takes from here."""
from __future__ import annotations

import sys

from ..crowd.run import CrowdRun, run
from ..io.crowd_input import CrowdInputError
from ..io.model_io import ModelError


def batch_em_on_executor(run: CrowdRun, data, config, max_iters: int, tol: float, report):
    """Batch EM with the item passes on ``run.executor``'s shards: the fit and the executor's
    name."""
    from ..distributed.crowd_em import sharded_batch_em
    from ..distributed.executor import executor_from
    executor = executor_from(run.executor)
    try:
        result = sharded_batch_em(data, config, executor, shards=run.shards or None,
                                  max_iters=max_iters, tol=tol, report=report)
    finally:
        executor.close()
    return result, executor.name


def main(run_options: CrowdRun) -> int:
    try:
        return run(run_options, batch_em_on_executor)
    except (CrowdInputError, ModelError, ValueError) as exc:
        sys.stderr.write(f"pyvw-lite crowd: error: {exc}\n")
        return 1
    except BrokenPipeError:
        raise  # the reader of -p - went away: the entry point ends quietly
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"pyvw-lite crowd: error: {where}{exc.strerror or exc}\n")
        return 1
