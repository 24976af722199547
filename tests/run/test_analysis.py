"""The generator check after each cell, on real runs: a run asking more than one load process can
do is flagged ``generator_limited`` everywhere it shows (summary, table, thresholds, UI and its
JSON, scenario report); a run at 150 ops/s is not — unless the test machine was saturated, when
it is machine-limited (issue 32) and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _runs import emulator_env, keyramp, load, write_profile

from keyramp.results._generator import MACHINE_LIMIT
from keyramp.targets._emulators import RunningEmulator

pytestmark = pytest.mark.emulator


def _run(tmp_path: Path, name: str, rate: int, env: dict[str, str]) -> tuple[int, Path]:
    profile = write_profile(
        tmp_path / f"{name}.toml",
        {"name": name, "backend": "bigtable", "duration": "3s", "rules": ["BP-RAMP-1"],
         "description": "anti-pattern: more than the generator can do" if rate > 1000 else "best practice"},
        # No key samples: the scenario report then judges the cell on its measured latency.
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 200, "key_samples_per_s": 0},
        keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": rate, "warmup": "0s"},
        thresholds={"p99_ms": 60_000, "error_rate": 0.01},  # the latency limit passes on its value
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / name), "--quiet", env=env)
    # (a profile with rules also leaves its scenario report beside the run directory)
    runs = [p for p in (tmp_path / name).iterdir() if (p / "manifest.json").exists()]
    assert len(runs) == 1, (result.stderr[-2000:], runs)
    return result.returncode, runs[0]


def test_generator_limited_everywhere_it_shows_and_not_at_150_ops(tmp_path: Path,
                                                                 bigtable_emulator: RunningEmulator) -> None:
    env = emulator_env(bigtable_emulator)
    calm_code, calm = _run(tmp_path, "calm", 150, env)
    # The client driver costs a few hundred µs of CPU per operation: one process cannot reach this.
    over_code, over = _run(tmp_path, "over", 20_000, env)

    calm_cell = next(iter(load(calm, "summary.json")["cells"].values()))
    assert calm_cell["load_cpu"]["processes"] == 1 and 0 < calm_cell["load_cpu"]["cores"] < 0.9
    assert calm_cell["load_cpu"]["store_local"] is True  # the emulator shares this machine
    # On a saturated test box even 150 ops/s is the machine's (issue 32): machine-limited, said so.
    calm_saturated = calm_cell["load_cpu"]["machine_busy"] >= MACHINE_LIMIT
    assert calm_cell["generator"]["machine_limited"] is calm_saturated, calm_cell["generator"]
    if calm_saturated:
        assert calm_cell["generator"]["reason"].startswith("the test machine was saturated") and calm_code == 1
        assert {t["name"]: t["verdict"] for t in calm_cell["thresholds"]}["p99_ms"] == "inconclusive"
    else:
        assert calm_code == 0
        assert calm_cell["generator_limited"] is False, calm_cell["generator"]
        assert {t["verdict"] for t in calm_cell["thresholds"]} == {"pass"}

    summary = load(over, "summary.json")
    cell_id, cell = next(iter(summary["cells"].items()))
    generator = cell["generator"]
    assert cell["generator_limited"] is True, generator
    assert generator["late_fraction"] > 0.1 or generator["dropped_fraction"] > 0.01
    assert generator["reason"] and "\n" not in generator["reason"]
    # Latency thresholds: inconclusive, never pass (the run exits 1); the others still judged.
    verdicts = {t["name"]: t["verdict"] for t in cell["thresholds"]}
    assert verdicts == {"p99_ms": "inconclusive", "error_rate": "pass"}
    assert over_code == 1 and summary["thresholds_passed"] is False

    report = (over / "report.txt").read_text()
    # On a saturated test box (the emulator on it) the cell is machine-limited: its own wording.
    word = "machine-limited" if generator["machine_limited"] else "generator-limited"
    assert f"{cell_id} †" in report and f"{cell_id} {word}" in report

    from keyramp.web import create_app

    client = create_app(over.parent).test_client()
    page = client.get(f"/runs/{over.name}").data.decode()
    assert f"<b>{word}</b>" in page and word.capitalize() not in page and "inconclusive" in page
    twin = client.get(f"/runs/{over.name}.json").get_json()["run"]
    assert twin["generator_limited_cells"] == [cell_id]
    assert twin["cells"][0]["generator_limited"] is True
    runs_page = create_app(over.parent).test_client().get("/").data.decode()
    assert f">{word}</span>" in runs_page  # the run list names the cell with the same word

    from keyramp.scenarios import report_for_runs

    out = report_for_runs([calm, over], out=tmp_path / "scenarios")
    rule = json.loads((out / "report.json").read_text())["rules"]["BP-RAMP-1"]
    limited = [e for e in rule["evidence"] if e["run"] == str(over)]
    assert limited and all(e["kind"] == word for e in limited)  # the same word in the scenario report
    assert "inconclusive" in rule["verdict"]
    # The limited cell's latency is never cited; the calm one's is, unless the machine limited it too.
    over_p99 = cell["total"]["latency_ms"]["p99"]
    assert f"p99 {over_p99} ms" not in rule["verdict"]
    assert (f"p99 {calm_cell['total']['latency_ms']['p99']} ms" in rule["verdict"]) is not calm_saturated
