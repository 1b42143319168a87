"""``dtype-migrate docs``: OperatorDtypes.md, autocast.md and index.html from an annotated yaml and a report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from migrate.model.dtypes import TENSOR_DTYPES, named
from migrate.model.plan import Evidence, OverloadPlan, Plan, Variable, Verdicts
from tests.conftest import probed, run_cli, snapshot

YAML = """\
- func: add.Tensor(T self, T other, *, Scalar alpha=1) -> T
  type_constraints: {T: [torch.int64, torch.float32]}
  type_promotion: {kind: default, args: [self, other]}
  variants: function, method
  tags: [core, pointwise]

- func: mm(TFloat self, TFloat mat2) -> TFloat
  autocast: {CPU: lower_precision_fp, CUDA: lower_precision_fp}
  dispatch_dtypes: {CPU: {TFloat: [torch.float32, torch.float64]}}
  variants: function, method
  tags: core

- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  autocast: {CUDA: fp32_set_opt_dtype}
  tags: reduction

- func: scaled_dot_product_attention(TFloat query, TFloat key, TFloat value, T? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> TFloat
  type_constraints: {T: [torch.bool, torch.float32, query.dtype]}
  autocast: {CPU: lower_precision_fp}
  python_module: nn
  tags: nondeterministic_seeded

- func: stack(TFloat[] tensors, int dim=0) -> TFloat
  autocast: {CPU: promote}
"""

SETS = """\
- name: TFloat
  dtypes: [torch.float16, torch.bfloat16, torch.float32, torch.float64]
  desc: floating_types_and(torch.half, torch.bfloat16)
"""

MESSAGE = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Bool' </script>"


def _report() -> Plan:
    """A run's report for mm alone: every verdict kind, evidence and a message (with text that must not close a <script>)."""
    verdicts = Verdicts(named("float16", "bfloat16", "float32", "float64"), named("complex32"), ((named("bool")[0], MESSAGE),))
    evidence = (
        Evidence("opinfo", "OpInfo mm (float16, bfloat16, float32, float64)", named("float16", "bfloat16", "float32", "float64"), ("self", "mat2"), 8),
        probed(("self",), named("bool"), refused=MESSAGE, made_by="OpInfo mm (2 calls)", count=2),
        Evidence("declared", "OpInfo mm declares for cuda", named("complex32"), ("self",)),
    )
    variable = Variable("TFloat", named("float16", "bfloat16", "float32", "float64"), ("self", "mat2", "return.0"), evidence, (), verdicts)
    return Plan((), (OverloadPlan("mm", (variable,)),))


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "native_functions.yaml").write_text(YAML)
    (folder / "type_constraints.yaml").write_text(SETS)
    _report().write(folder / "report.json")
    return folder / "native_functions.yaml", folder / "report.json"


def _docs(capfd, yaml: Path, report: Path | None, out: Path, *more: str) -> int:
    return run_cli(capfd, "docs", yaml, "-o", out, *(("--report", report) if report else ()), *more)[0]


def _page_data(html: str) -> dict:
    text = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S).group(1)
    return json.loads(text)


def test_operator_dtypes_has_one_row_per_overload_grouped_by_python_module(inputs, tmp_path, capfd):
    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    text = (tmp_path / "out" / "OperatorDtypes.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == ["| `add.Tensor`", "| `mm`", "| `sum`", "| `stack`", "| `scaled_dot_product_attention`"]
    assert text.index("## torch") < text.index("`stack`") < text.index("## nn") < text.index("`scaled_dot_product_attention`")
    assert rows[0] == (
        "| `add.Tensor` | `self`: T, `other`: T, `return.0`: T | T: int64, float32 | default (self, other) |  |  | T: no runtime evidence |"
    )
    assert rows[1] == (
        "| `mm` | `self`: TFloat, `mat2`: TFloat, `return.0`: TFloat | TFloat: float16, bfloat16, float32, float64 |  "
        "| CPU: lower_precision_fp, CUDA: lower_precision_fp | CPU: TFloat without float16, bfloat16 | TFloat: lower bound, 15 unknown; CUDA only: complex32 |"
    )
    assert rows[2] == "| `sum` | `self`: Tensor, `return.0`: Tensor | not declared |  | CUDA: fp32_set_opt_dtype |  | not declared |"
    assert "| T: bool, float32, TFloat |" in rows[4].replace("<br>", " | ")


def test_a_promoting_out_overload_states_what_its_out_may_hold(tmp_path, capfd):
    """The reader's rule for ``out``: a dtype of the set that torch casts the computation dtype to, as the checker judges it."""
    (tmp_path / "native_functions.yaml").write_text(
        "- func: add.out(T self, T other, *, Scalar alpha=1, T(a!) out) -> T(a!)\n"
        "  type_constraints: {T: [torch.int64, torch.float32]}\n"
        "  type_promotion: {kind: default, args: [self, other]}\n"
    )
    (tmp_path / "type_constraints.yaml").write_text(SETS)
    assert _docs(capfd, tmp_path / "native_functions.yaml", None, tmp_path / "out") == 0
    cell = "default (self, other); out: a dtype of the set the result casts to (torch.can_cast)"
    assert f"| {cell} |" in (tmp_path / "out" / "OperatorDtypes.md").read_text()
    assert _page_data((tmp_path / "out" / "index.html").read_text())["ops"][0][4] == cell


def test_autocast_md_lists_each_keys_ops_per_policy_as_amp_does(inputs, tmp_path, capfd):
    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    text = (tmp_path / "out" / "autocast.md").read_text()
    assert "## CPU Op-Specific Behavior\n\n### CPU Ops that can autocast to `bfloat16`\n\n`mm`, `scaled_dot_product_attention`\n" in text
    assert "### CPU Ops that promote to the widest input type\n\nThey take several floating-point inputs" in text
    assert text.split("### CPU Ops that promote to the widest input type\n\n")[1].split("\n\n")[1] == "`stack`"
    assert "### CUDA Ops that can autocast to `float16`\n\n`mm`\n" in text
    assert "### CUDA Ops that can autocast to `float32` unless given a `dtype`\n\n`sum`\n" in text
    assert text.index("## CPU") < text.index("## CUDA")


def test_the_page_is_one_self_contained_file_with_every_verdict_and_message(inputs, tmp_path, capfd):
    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    html = (tmp_path / "out" / "index.html").read_text()
    assert not re.search(r"(src|href)=|https?://|@import|fetch\(", html.replace('href="#', ""))  # nothing loaded from elsewhere
    assert html.count("</script>") == 2  # the message's "</script>" is escaped inside the data
    data = _page_data(html)
    assert data["dtypes"] == [d.name for d in TENSOR_DTYPES]
    by_overload = {}
    for row in data["rows"]:
        by_overload.setdefault(data["ops"][row[0]][0], []).append(row)
    assert [len(by_overload[name]) for name in ("add.Tensor", "mm", "sum", "stack", "scaled_dot_product_attention")] == [1, 1, 1, 1, 2]
    mm = by_overload["mm"][0]
    column = {name: i for i, name in enumerate(data["dtypes"])}
    assert (mm[4][column["float32"]], mm[4][column["complex32"]], mm[4][column["bool"]], mm[4][column["int64"]]) == ("a", "o", "r", "u")
    assert [data["text"][text] for dtype, text in mm[7] if dtype == column["bool"]] == [MESSAGE]
    assert "self cast alone, OpInfo mm (2 calls): rejected" in data["text"]  # the shared message is shown per dtype instead
    add = by_overload["add.Tensor"][0]
    assert add[4] == "".join("d" if d in named("int64", "float32") else "n" for d in TENSOR_DTYPES)  # no report verdict: the set alone
    assert by_overload["sum"][0][4] == "n" * 21
    assert [data["tags"][t] for t in data["ops"][by_overload["add.Tensor"][0][0]][2]] == ["core", "pointwise"]
    attn_mask = by_overload["scaled_dot_product_attention"][1]
    assert attn_mask[1] == "T" and attn_mask[8] == sum(1 << column[d] for d in ("bool", "float16", "bfloat16", "float32", "float64"))


def test_a_variable_the_run_did_not_write_takes_no_verdicts(inputs, tmp_path, capfd):
    yaml, report = inputs
    yaml.write_text(YAML.replace("- func: mm(TFloat self, TFloat mat2) -> TFloat", "- func: mm(TFloat self, U mat2) -> TFloat\n  type_constraints: {U: TFloat}"))
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    data = _page_data((tmp_path / "out" / "index.html").read_text())
    mm = [row for row in data["rows"] if data["ops"][row[0]][0] == "mm"]
    assert [(row[1], row[4].count("d"), row[6]) for row in mm] == [("TFloat", 4, []), ("U", 4, [])]  # the set alone, no evidence


def test_outputs_are_deterministic_and_check_finds_stale_files(inputs, tmp_path, capfd):
    yaml, report = inputs
    first, second = tmp_path / "first", tmp_path / "second"
    assert _docs(capfd, yaml, report, first) == 0 and _docs(capfd, yaml, report, second) == 0
    assert snapshot(first) == snapshot(second)
    assert sorted(snapshot(first)) == ["OperatorDtypes.md", "autocast.md", "index.html"]
    assert _docs(capfd, yaml, report, first, "--check") == 0
    yaml.write_text(YAML.replace("{T: [torch.int64, torch.float32]}", "{T: [torch.int64, torch.float64]}"))  # a one-line change
    before = snapshot(first)
    code, _, err = run_cli(capfd, "docs", yaml, "-o", first, "--report", report, "--check")
    assert code == 1 and "OperatorDtypes.md is not what" in err and "index.html is not what" in err and "autocast.md" not in err
    assert snapshot(first) == before  # --check writes nothing
    assert _docs(capfd, yaml, report, first, "--check") == 1
    assert _docs(capfd, yaml, None, first, "--check") == 1  # without the report the page says less


def test_bad_input_writes_nothing(inputs, tmp_path, capfd):
    yaml, report = inputs
    yaml.write_text(YAML.replace("{T: [torch.int64, torch.float32]}", "{T: [torch.int65]}"))
    code, _, err = run_cli(capfd, "docs", yaml, "-o", tmp_path / "out", "--report", report)
    assert code == 2 and "native_functions.yaml:2: add.Tensor: unknown dtype 'torch.int65'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a browser
def test_the_page_in_chromium_shows_a_rejected_cells_message_and_filters(inputs, tmp_path, capfd):
    from tests.chromium import Browser

    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    overloads = "[...document.querySelectorAll('.row')].map((r) => r.dataset.overload + ':' + r.dataset.variable)"
    with Browser() as browser:
        page = browser.page()
        page.open((tmp_path / "out" / "index.html").as_uri())
        page.wait_for("document.body.dataset.ready")
        assert page.evaluate(overloads) == [  # the yaml's order
            "add.Tensor:T",
            "mm:TFloat",
            "sum:",
            "scaled_dot_product_attention:TFloat",
            "scaled_dot_product_attention:T",
            "stack:TFloat",
        ]
        page.type("#search", "aten::mm")
        assert page.evaluate(overloads) == ["mm:TFloat"]
        cells = page.evaluate("Object.fromEntries([...document.querySelectorAll('.row .c')].map((c) => [c.dataset.dtype, c.dataset.verdict]))")
        assert (cells["float32"], cells["complex32"], cells["bool"], cells["int64"]) == ("accepted", "other-device", "rejected", "unknown")
        page.click('.row[data-overload="mm"] .c[data-dtype="bool"]')
        assert page.evaluate("document.getElementById('d-verdict').dataset.verdict") == "rejected"
        assert page.evaluate("document.getElementById('d-message').textContent") == MESSAGE
        evidence = page.evaluate("[...document.querySelectorAll('#d-evidence li')].map((li) => li.textContent)")
        assert evidence == ["probe self cast alone, OpInfo mm (2 calls): rejected (2 calls)"]
        page.screenshot(tmp_path / "rejected.png")
        page.evaluate("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
        page.click('.chip[data-filter="verdict"][data-value="r"]')
        assert page.evaluate(overloads) == ["mm:TFloat"]
        page.click('.chip[data-filter="verdict"][data-value="r"]')
        page.click(f'.chip[data-filter="tag"][data-value="{_page_data((tmp_path / "out" / "index.html").read_text())["tags"].index("pointwise")}"]')
        assert page.evaluate(overloads) == ["add.Tensor:T"]
        page.screenshot(tmp_path / "pointwise.png")
        page.open("about:blank")
        page.open((tmp_path / "out" / "index.html").as_uri() + "#aten::scaled_dot_product_attention")  # a link to a search
        page.wait_for("document.body.dataset.ready")
        assert page.evaluate("document.getElementById('search').value") == "aten::scaled_dot_product_attention"
        assert page.evaluate(overloads) == ["scaled_dot_product_attention:TFloat", "scaled_dot_product_attention:T"]
        page.evaluate("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
        page.evaluate(
            "(() => { const m = document.getElementById('module'); m.value = [...m.options].find((o) => o.text === 'nn').value;"
            " m.dispatchEvent(new Event('change')); })()"
        )
        assert page.evaluate(overloads) == ["scaled_dot_product_attention:TFloat", "scaled_dot_product_attention:T"]
        page.click('.chip[data-filter="tag"][data-value="0"]')  # a fresh page: no filter on until clicked
        page.click("#incomplete")
        assert page.evaluate(overloads) == []
        assert page.evaluate("document.getElementById('count').textContent") == "0 variables of 0 overloads"


@pytest.mark.slow  # a browser
def test_the_header_row_shows_every_dtype_name_whole_and_the_rows_name_their_sets(inputs, tmp_path, capfd):
    """At 1400 px: every dtype header shows its whole name (no column cut to 9 characters), the 'how the set stands'
    column its words, and a row its variable's set name, whole on hover."""
    from tests.chromium import Browser

    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    with Browser(width=1400, height=900) as browser:
        page = browser.page()
        page.open((tmp_path / "out" / "index.html").as_uri())
        page.wait_for("document.body.dataset.ready")
        cut = page.evaluate(
            "[...document.querySelectorAll('#head .c')].filter((c) => {"
            " const r = document.createRange(); r.selectNodeContents(c); const text = r.getBoundingClientRect(), box = c.getBoundingClientRect();"
            " return text.top < box.top - 0.5 || text.bottom > box.bottom + 0.5; }).map((c) => c.textContent)"
        )
        assert cut == []
        headers = page.evaluate("[...document.querySelectorAll('#head .c')].map((c) => c.textContent)")
        assert "float8_e4m3fnuz" in headers and "complex32" in headers and len(headers) == 21
        stands = page.evaluate("[...document.querySelectorAll('.row .stands')].map((s) => [s.textContent, s.scrollWidth <= s.clientWidth])")
        assert stands[0] == ["no runtime evidence", True] and all(whole for _, whole in stands), stands
        title = page.evaluate("document.querySelector('.row[data-overload=mm] .stands').title")
        assert title == "lower bound, 15 unknown; CUDA only: complex32"  # the column says 'lower bound', the title all
        variable = page.evaluate("(() => { const v = document.querySelector('.row[data-overload=\"mm\"] .var'); return [v.textContent, v.title]; })()")
        assert variable == ["TFloat: self, mat2, return.0", "TFloat = [float16, bfloat16, float32, float64]"]
        page.screenshot(tmp_path / "header.png")


@pytest.mark.slow  # a browser
def test_the_backend_switch_shows_each_backends_set(inputs, tmp_path, capfd):
    """mm's set is TFloat on any backend but CPU, which states float32 and float64 alone (dispatch_dtypes:)."""
    from tests.chromium import Browser

    yaml, report = inputs
    assert _docs(capfd, yaml, report, tmp_path / "out") == 0
    dots = "[...document.querySelectorAll('.row[data-overload=mm] .c.in')].map((c) => c.dataset.dtype)"
    with Browser(width=1400, height=900) as browser:
        page = browser.page()
        page.open((tmp_path / "out" / "index.html").as_uri())
        page.wait_for("document.body.dataset.ready")
        assert page.evaluate("[...document.querySelectorAll('#backend option')].map((o) => o.value)") == ["", "CPU"]
        assert page.evaluate(dots) == ["float16", "bfloat16", "float32", "float64"]
        page.evaluate("(() => { const s = document.getElementById('backend'); s.value = 'CPU'; s.dispatchEvent(new Event('change')); })()")
        assert page.evaluate(dots) == ["float32", "float64"]
        page.click('.row[data-overload="mm"] .c[data-dtype="float16"]')
        facts = page.evaluate("Object.fromEntries([...document.querySelectorAll('#d-facts dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))")
        assert facts["in the set"] == "no (on CPU)" and facts["per backend"] == "CPU: float32, float64"
