"""``keyramp forecast RUN``: a finished run re-projected without re-running it (forecast/_reforecast.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _synthetic import make_run

from keyramp.cli._main import main
from keyramp.profile._profile import parse_profile

CELLS = (("firestore", "sequential"), ("firestore", "random"), ("bigtable", "random"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic run whose manifest holds a resolved profile with a [launch] (as keyramp run writes it)."""
    run = make_run(tmp_path_factory.mktemp("fc"), cells=CELLS, ops=("insert",), seconds=5)
    manifest = json.loads((run / "manifest.json").read_text())
    profile = parse_profile({"name": "synthetic", "backend": ["firestore", "bigtable"], "duration": "5s",
                             "workload": {"ops": {"insert": 1.0}, "record_count": 1000},
                             "keys": {"strategy": ["sequential", "random"]},
                             "schedule": {"kind": "constant", "rate": 200},
                             "launch": {"kind": "constant", "rate": 4000, "duration": "20m"}})
    manifest["profile"] = json.loads(json.dumps(profile.data))
    (run / "manifest.json").write_text(json.dumps(manifest))
    _as_the_strategies_wrote(run, profile)
    return run


def _as_the_strategies_wrote(run: Path, profile: Any) -> None:
    """The synthetic keys replaced by the ones each cell's strategy writes (insert after insert past the
    preload): a recording of other keys is projected as recorded, never regenerated over."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from keyramp.core._types import key_sort_text
    from keyramp.workload import CellWorkload

    for path in sorted((run / "keys").glob("*.parquet")):
        table = pq.read_table(path)
        backend, strategy = next((b, s) for b, s in CELLS if path.stem.endswith(f"{b}-{s}"))
        wl = CellWorkload(backend=backend, strategy=strategy, settings=profile)
        keys = [key_sort_text(wl.key_of(1000 + i)) for i in range(table.num_rows)]  # type: ignore[arg-type]
        pq.write_table(table.set_column(table.schema.get_field_index("key"), "key", pa.array(keys)), path)


def test_table_for_the_runs_own_launch(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("launch: constant 4000 ops/s for 20m")
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("c0")}
    assert "hotspot" in rows["c00-firestore-sequential"] and "regenerated" in rows["c00-firestore-sequential"]
    # 0 -> 4,000 ops/s at once on a new collection: random keys throttle until the range has split,
    # and how long that takes is the unpublished split delay. Even the shortest delay throttles a
    # 10-s step beyond ok, so no point of the band is ok: at_risk to hotspot, never "uncertain".
    assert "at_risk-hotspot (split delay)" in rows["c01-firestore-random"]
    assert "* modelled" in out


def test_json_with_more_nodes_and_a_higher_rate(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", str(run_dir), "--json", "--cell", "c02-bigtable-random", "--rate", "30000",
                 "--nodes", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["c02-bigtable-random"]
    fc = doc["c02-bigtable-random"]
    assert fc["launch"]["peak_ops_per_s"] == 30000 and fc["launch"]["nodes"] == 3
    assert fc["modelled"] is True and fc["throttled_fraction"]["low"] < fc["throttled_fraction"]["high"]


def test_a_launch_file_replaces_the_profiles(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "launch.toml"
    path.write_text('[launch]\nkind = "ramp_500_50_5"\nceiling = 2000\nduration = "30m"\n')
    assert main(["forecast", str(run_dir), "--launch", str(path), "--json", "--cell", "c01-firestore-random"]) == 0
    assert json.loads(capsys.readouterr().out)["c01-firestore-random"]["launch"]["kind"] == "ramp_500_50_5"


def test_out_writes_the_json_and_keeps_the_table(run_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # --out FILE (issue 30, as compare): the document --json prints, written to FILE; the table stays.
    argv = ["forecast", str(run_dir), "--cell", "c01-firestore-random"]
    assert main([*argv, "--json"]) == 0
    printed = capsys.readouterr().out
    target = tmp_path / "fc" / "forecast.json"
    assert main([*argv, "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == printed  # the same document, byte for byte
    assert capsys.readouterr().out.startswith("launch: constant 4000 ops/s")
    assert main([*argv, "--out", str(run_dir / "manifest.json" / "x.json")]) == 2
    assert "keyramp: cannot write " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cell", "c99"], "unknown cell 'c99'"),
        (["--nodes", "0"], "--nodes: must be at least 1"),
        (["--launch", "/nonexistent.toml"], "no such file"),
        (["--params", "/nonexistent.json"], "no such parameter file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_dir: Path, args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forecast", str(run_dir), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_run_without_a_launch_needs_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A hand-made run (unresolved profile, no [launch]): --rate makes a constant launch and the
    # recorded positions are replayed, since the keys cannot be rebuilt from that profile.
    run = make_run(tmp_path, cells=(("datastore", "random"),), ops=("insert",), seconds=5)
    assert main(["forecast", str(run)]) == 2
    assert "no [launch]" in capsys.readouterr().err
    assert main(["forecast", str(run), "--rate", "800", "--duration", "10m", "--json"]) == 0
    fc = json.loads(capsys.readouterr().out)["c00-datastore-random"]
    assert fc["projection"]["keys"] == "recorded" and fc["launch"]["description"] == "constant 800 ops/s for 10m"
