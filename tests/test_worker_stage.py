"""The one recipe of a stage made in workers (migrate.runtime.worker_stage) and the one call of ATen (migrate.runtime.aten_call)."""

from __future__ import annotations

import torch

from migrate.cache import StageCache
from migrate.evidence.torch_stages import WORKER_STAGES, _stages
from migrate.runtime import recorded
from migrate.runtime.aten_call import Called, call_aten
from migrate.runtime.worker_stage import REPORT, TRYING, WorkerStage, each_overload


def test_a_call_returns_what_aten_returned_or_its_refusal_as_one_line():
    assert call_aten(lambda: 3, 1.0) == Called(3)
    refused = call_aten(lambda: torch.ones(2, dtype=torch.int64).cos_(), 1.0)
    assert refused.refused and refused.returned is None and refused.refusal.startswith("RuntimeError: ")
    assert "\n" not in refused.refusal


def test_a_seeded_call_draws_the_same_values_every_time():
    first, second = (call_aten(lambda: torch.rand(3), 1.0, seed=7).returned for _ in range(2))
    assert torch.equal(first, second)


def test_a_stage_is_made_once_then_read_and_loaded(tmp_path):
    made = []

    def make(jobs):
        made.append(jobs)
        return ["a", "b"]

    stage = WorkerStage("example", make, "making the example", load=tuple)
    cache = StageCache(tmp_path)
    assert stage.stored(cache) is None and stage.cached(cache, []) == ()
    assert stage.loaded(cache, 2) == ("a", "b") and made == [2]
    assert stage.loaded(cache, 2) == ("a", "b") and made == [2]  # read, not made again
    assert stage.cached(cache, []) == ("a", "b")
    assert stage.stage(cache).folder.parent == recorded.folder(cache)  # a fact of the torch release, not of the code


def test_a_job_announces_each_overload_before_its_reports():
    found = list(each_overload(lambda name: [name.upper()] * (name != "b"), ("a", "b")))
    assert found == [{TRYING: "a"}, {REPORT: "A"}, {TRYING: "b"}]


def test_the_stages_a_run_reads_come_from_the_one_list(tmp_path):
    cache = StageCache(tmp_path)
    beside, after = _stages(cache, 2, probe=True, autocast=True, models=True)  # the test set-up installs transformers
    assert len(beside) + len(after) == len(WORKER_STAGES)
    assert beside[-1][0].folder.name.startswith("models-transformers-")
    assert [s.folder.name for s, _ in after] == ["dtype-arguments", "promotion-calls"]
    beside, after = _stages(cache, 2, probe=False, autocast=False)
    assert [s.folder.name for s, _ in beside] == ["schema-calls", "catalogue-calls", "value-calls", "forwards"] and after == []
