"""A cold run makes the stages that need only torch in a thread beside the sweep (migrate.evidence.torch_stages):
the two share the run's -j workers fairly, a stage entry is made once however many threads ask for it, and the
thread starts nothing on a warm cache, with one worker, or after the run failed."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from migrate import cache as cache_module
from migrate.cache import StageCache
from migrate.evidence import torch_stages
from migrate.runtime import processes
from migrate.runtime.processes import Job, run_in_workers, shared_workers


def span(label):
    """A job that takes a while and says when it ran, by the worker's clock."""
    started = time.time()
    time.sleep(0.4)
    yield (label, started, time.time())


def _spans(label: str, count: int, found: list) -> None:
    work = [Job(span, f"{label}{i}", f"{label}{i}") for i in range(count)]
    found += [outcome.reports[0] for outcome in run_in_workers(work, jobs=2, progress=False)]


def test_threads_that_start_workers_share_the_runs_workers_and_neither_waits_for_the_other_to_finish():
    found: list = []
    with shared_workers(2):
        sweep = threading.Thread(target=_spans, args=("sweep", 8, found))
        sweep.start()
        time.sleep(0.6)  # the sweep holds both workers by now
        _spans("stage", 2, found)
        sweep.join()
    assert len(found) == 10
    edges = sorted([(start, 1) for _, start, _ in found] + [(end, -1) for _, _, end in found], key=lambda edge: (edge[0], edge[1]))
    running = [0]
    for _, step in edges:
        running.append(running[-1] + step)
    assert max(running) <= 2  # -j 2 bounds both threads' workers together
    last_sweep_start = max(start for label, start, _ in found if label.startswith("sweep"))
    assert max(start for label, start, _ in found if label.startswith("stage")) < last_sweep_start  # not left for the end


def test_a_freed_worker_goes_to_the_thread_that_waited_for_one_not_back_to_the_one_that_freed_it():
    slots = processes._Slots(1)
    assert slots.take(wait=False)
    taken = threading.Event()
    waiter = threading.Thread(target=lambda: (slots.take(wait=True), taken.set()), daemon=True)
    waiter.start()
    assert _until(lambda: slots._waiting)
    slots.give()
    assert not slots.take(wait=False)  # the sweep's next job waits its turn
    assert taken.wait(5)
    slots.give()
    assert slots.take(wait=False)
    waiter.join()


def test_an_entry_two_threads_ask_for_at_once_is_made_once(tmp_path):
    stage = StageCache(tmp_path).stage("example", "migrate.cache")
    made, found = [], []

    def make():
        made.append(threading.current_thread().name)
        time.sleep(0.3)
        return ["entry"]

    threads = [threading.Thread(target=lambda: found.append(stage.get((), make, list))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and found == [["entry"], ["entry"]]
    assert stage.holds()


def test_the_cyclic_collector_runs_again_once_the_last_thread_that_paused_it_has_left():
    assert gc.isenabled()
    inside, leave = threading.Event(), threading.Event()

    def paused():
        with cache_module.without_cyclic_gc():
            inside.set()
            leave.wait(5)

    other = threading.Thread(target=paused)
    other.start()
    inside.wait(5)
    with cache_module.without_cyclic_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread is still inside
    leave.set()
    other.join()
    assert gc.isenabled()


@pytest.fixture
def fake_stages(tmp_path, monkeypatch):
    """Three stages in a cache of their own: one stored already, one the sweep's plans read, one read after them."""
    cache = StageCache(tmp_path)
    held, beside, after = (cache.stage(name, "migrate.cache") for name in ("held", "beside", "after"))
    held.write(["stored"])
    made: list[str] = []

    def maker(stage, name):
        def make():
            made.append(name)
            return stage.get((), lambda: [name], list)

        return make

    stages = ([(held, maker(held, "held")), (beside, maker(beside, "beside"))], [(after, maker(after, "after"))])
    monkeypatch.setattr(torch_stages, "_stages", lambda *args: stages)
    monkeypatch.setattr(torch_stages, "start_server", lambda: None)
    return cache, made


def _until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_the_stages_the_cache_lacks_are_made_beside_the_run_those_read_after_the_sweep_once_it_is_done(fake_stages):
    cache, made = fake_stages
    swept = threading.Event()
    with torch_stages.torch_stages_beside(cache, 2, probe=True, autocast=True, swept=swept):
        assert _until(lambda: "beside" in made)
        time.sleep(0.5)
        assert made == ["beside"]  # not the stored one; the other waits for the sweep
        swept.set()
    assert made == ["beside", "after"]


def test_after_a_failed_run_the_thread_makes_nothing_more(fake_stages):
    cache, made = fake_stages
    with pytest.raises(RuntimeError), torch_stages.torch_stages_beside(cache, 2, probe=True, autocast=True, swept=threading.Event()):
        assert _until(lambda: "beside" in made)
        raise RuntimeError("the run failed")
    time.sleep(2 * torch_stages._LOOK + 0.2)
    assert made == ["beside"]


def test_with_one_worker_nothing_is_made_beside_the_run(fake_stages):
    cache, made = fake_stages
    swept = threading.Event()
    swept.set()
    with torch_stages.torch_stages_beside(cache, 1, probe=True, autocast=True, swept=swept):
        time.sleep(0.3)
    assert made == []
