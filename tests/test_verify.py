"""``verify``: OpInfo samples under the checker, on the narrowed fixture and on the fully migrated real yaml."""

from __future__ import annotations

import re
import shutil

import pytest

from migrate.audit.verify import EXIT_OK, EXIT_VIOLATIONS
from migrate.cli import main
from migrate.cache import StageCache
from migrate.evidence.opinfo.sweep import SweepCache
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow  # OpInfo samples under the checker, in workers

FIXTURE = FIXTURES / "verify" / "native_functions.yaml"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache holding only the OpInfo catalogue (the release's facts hold it): OpInfos are selected by the operators
    they are about."""
    from migrate.evidence.recording import seed
    from migrate.runtime.run_files import CATALOGUE

    seed(StageCache.at())
    folder = tmp_path_factory.mktemp("verify-cache")
    target = SweepCache.of(StageCache.at(folder)).folder
    target.mkdir(parents=True)
    shutil.copyfile(SweepCache.of(StageCache.at()).folder / CATALOGUE, target / CATALOGUE)
    return folder


def verify(capfd, cache, native_functions, *ops):
    cache_dir = ["--cache-dir", str(cache)] if cache is not None else []
    code = main(["verify", "--native-functions", str(native_functions), *(a for op in ops for a in ("--op", op)), "-j", "2", *cache_dir])
    return code, capfd.readouterr().out


def test_the_narrowed_constraint_is_caught_with_its_precise_message(capfd, cache):
    code, out = verify(capfd, cache, FIXTURE, "add.Tensor")
    assert code == EXIT_VIOLATIONS
    lines = out.splitlines()
    assert lines[0] == "aten::add.Tensor:"
    assert "  argument self has dtype torch.float64, not in F = [torch.float32], declared at native_functions.yaml:6" in lines
    assert not any(line.startswith("aten::") for line in lines[1:])  # only the selected overload is checked
    assert not any("has dtype torch.float32," in line for line in lines)
    index = lines.index("  argument self has dtype torch.int64, not in F = [torch.float32], declared at native_functions.yaml:6")
    assert lines[index + 1].startswith("    ") and " calls, from " in lines[index + 1] and "add [torch.int64]" in lines[index + 1]
    total = next(line for line in lines if line.startswith("verify: "))
    assert total.startswith(f"verify: 12 violations in 1 overload of {FIXTURE};")


def test_an_overload_whose_declaration_holds_passes(capfd, cache):
    code, out = verify(capfd, cache, FIXTURE, "where")
    assert code == EXIT_OK
    assert out.startswith(f"verify: 0 violations in 0 overloads of {FIXTURE};")


def test_an_unknown_operator_is_bad_input(capfd, cache):
    cache_dir = ["--cache-dir", str(cache)]
    assert main(["verify", "--native-functions", str(FIXTURE), "--op", "add.Tensr", *cache_dir]) == 2
    assert "unknown operator 'add.Tensr'" in capfd.readouterr().err


BACKWARD_AND_ALIASES = ("gelu_backward", "native_layer_norm_backward", "convolution_backward", "_log_softmax_backward_data", "clip", "__and__.Tensor")


def test_backward_and_alias_overloads_of_the_fully_migrated_real_yaml_hold(capfd, tmp_path):
    """The invariant on the overloads backward samples and aliases type: their OpInfos' samples, forward and
    backward, under the checker (the whole op_db is verified outside the suite; test_run checks every observation)."""
    assert main(["--out", str(tmp_path), "--yaml-only"]) == 0
    capfd.readouterr()
    code, out = verify(capfd, None, tmp_path / "native_functions.yaml", *BACKWARD_AND_ALIASES)
    assert out.splitlines()[0].startswith("verify: 0 violations in 0 overloads of"), out
    assert int(re.search(r"; (\d+) OpInfos run", out).group(1)) >= len(BACKWARD_AND_ALIASES)
    assert code == EXIT_OK
