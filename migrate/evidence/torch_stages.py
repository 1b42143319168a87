"""The stages that depend on the installed torch and their own code only, computed in a thread beside the sweep.

The calls built from schemas and from the argument catalogue, the forwarding kernels, the autocast observations,
the ``dtype=`` calls and the promotion calls read neither the yaml nor the OpInfo sweep. On a cold cache the run
would make them one after the other once the sweep is done, with one core idle while the parent merges between
them. Made in a thread of their own, they use workers the sweep leaves idle, and the fork server boots while
torchlib is scanned: the stages the sweep's derived plans read are made beside the sweep, the ``dtype=`` and
promotion calls (read after those plans) beside the parent's merging of the sweep. They share the run's ``-j``
workers (``migrate.runtime.processes.shared_workers``). The run reads each from the stage cache as before,
waiting where the thread is still making it (``migrate.cache.Stage.get``); what the thread fails to make, the
run makes again itself and reports. On a warm cache, or with one worker, nothing starts.

Those stages are ``WORKER_STAGES``, the one list of them: each is a ``WorkerStage`` (its key, its make, its load),
which also says when the run reads it (beside or after the sweep's plans, for which ``--evidence``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator

from migrate.cache import Stage, StageCache
from migrate.evidence.autocast.policies import OBSERVATIONS
from migrate.evidence.models import source as models_source
from migrate.evidence.opinfo import forwards
from migrate.evidence.probe import catalogue_calls, dtype_arguments, schema_calls, value_calls
from migrate.evidence.promotion import calls as promotion_calls
from migrate.runtime.processes import shared_workers, start_server, worker_count
from migrate.runtime.worker_stage import WorkerStage

_LOOK = 0.2  # seconds between looks whether the run stopped, while the thread waits for the sweep's end

WORKER_STAGES: tuple[WorkerStage, ...] = (
    OBSERVATIONS,
    schema_calls.STAGE,
    catalogue_calls.STAGE,
    value_calls.STAGE,
    forwards.STAGE,
    dtype_arguments.STAGE,
    promotion_calls.STAGE,
    models_source.STAGE,
)
"""Every stage made in workers, in the order a run reads them (each says whether it is read after the sweep's plans,
and for which ``--evidence``)."""

Make = Callable[[], object]


def _stages(cache: StageCache, jobs: int, probe: bool, autocast: bool, models: bool = False) -> tuple[list[tuple[Stage, Make]], list[tuple[Stage, Make]]]:
    """Each stage the run will read, with what makes its entry, in the order the run reads them: those the sweep's
    derived plans read, and those read after them."""
    evidence = {""} | ({"probe"} if probe else set()) | ({"autocast"} if autocast else set())
    evidence |= {"models"} if models and models_source.transformers_version() is not None else set()
    wanted = [stage for stage in WORKER_STAGES if stage.evidence in evidence]
    made = [(stage.after_sweep, (stage.stage(cache), functools.partial(stage.entry, cache, jobs))) for stage in wanted]
    return [pair for later, pair in made if not later], [pair for later, pair in made if later]


@contextlib.contextmanager
def torch_stages_beside(
    cache: StageCache, jobs: int | None, probe: bool, autocast: bool, swept: threading.Event, models: bool = False
) -> Iterator[None]:
    """Within it, the torch stages the cache lacks are made in a thread of their own (see the module's docstring).
    ``probe``: the run reads the probe's stages (``dtype=`` and promotion calls); ``autocast``: the observations;
    ``swept``: set by the run once its sweep is done; ``models``: the tiny
    models' runs (``migrate.evidence.models``), when transformers is installed."""
    jobs = worker_count(jobs)
    if jobs < 2:  # nothing runs beside the sweep
        yield
        return
    beside_sweep, after_sweep = (
        [make for stage, make in stages if not stage.holds()] for stages in _stages(cache, jobs, probe, autocast, models)
    )
    if not (beside_sweep or after_sweep):
        yield
        return
    stopped = threading.Event()
    with shared_workers(jobs):
        thread = threading.Thread(target=_make, args=(beside_sweep, after_sweep, swept, stopped), name="torch stages", daemon=True)
        thread.start()
        try:
            yield
        except BaseException:
            stopped.set()  # the thread makes no further stage; the run ends with its error
            raise
        thread.join()


def _make(beside_sweep: list[Make], after_sweep: list[Make], swept: threading.Event, stopped: threading.Event) -> None:
    start_server()
    for make in beside_sweep:
        _made(make, stopped)
    while after_sweep and not swept.wait(_LOOK):
        if stopped.is_set():
            return
    for make in after_sweep:
        _made(make, stopped)


def _made(make: Make, stopped: threading.Event) -> None:
    if stopped.is_set():
        return
    try:
        make()
    except Exception:  # the run makes it again when it reads it, and reports what fails
        pass
