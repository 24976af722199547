"""Validation against figures the model was NOT given: the table in docs/keyspace-model.md, run here.

Each row: a published figure, what the model was given, what it predicts through the path
``keyramp forecast RUN`` takes (``reforecast`` on a finished run), and pass or fail. The
test computes every row and holds the document's table to it, so the table cannot drift
from what the model does. Rows whose result follows from an input are labelled
"design constraint" in the table; they stay, but are not counted as evidence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _designs import DesignRuns, diagonal_line

from keyramp.backends._boxes import default_boxes
from keyramp.backends._params import load_params_file
from keyramp.forecast._reforecast import reforecast
from keyramp.results._forecast_doc import CellForecast

DOC = Path(__file__).resolve().parents[2] / "docs" / "keyspace-model.md"
_SHARD_TIMESTAMP = "https://firebase.google.com/docs/firestore/solutions/shard-timestamp"
_PERFORMANCE = "https://cloud.google.com/bigtable/docs/performance"
_RAMP = "https://cloud.google.com/firestore/docs/best-practices#ramping_up_traffic"
_KEYVIS = "https://cloud.google.com/datastore/docs/keyvis-patterns-index"
_COUNTERS = "https://firebase.google.com/docs/firestore/solutions/counters"


@dataclass(frozen=True)
class Row:
    check: str
    published: str
    given: str
    predicted: str
    passed: bool

    def markdown(self) -> str:
        return f"| {self.check} | {self.published} | {self.given} | {self.predicted} | " \
               f"{'pass' if self.passed else 'FAIL'} |"


def _steady(fc: CellForecast, label: str) -> float:
    tl = fc.timeline
    assert tl is not None and tl.served_ops_per_s is not None
    t = np.asarray(tl.t)
    return float(np.asarray(tl.served_ops_per_s[label])[t > 0.75 * t[-1]].mean())


def _params(path: Path, store: str, **ranges: float) -> Path:
    """A calibration-style file that fixes parameters at one value (what the row gives the model)."""
    doc = {"schema": 1, "stores": {store: {name: {"low": v, "mid": v, "high": v, "source": "given by the test"}
                                           for name, v in ranges.items()}}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def sharded_timestamps(runs: DesignRuns, tmp: Path) -> Row:
    """Shard-timestamp: one sequential range takes 500 writes/s; n shards 500·n. The model is given
    only one range's 500 (every range at exactly 500, no retries); n ranges' total must emerge."""
    params = _params(tmp / "one-range.json", "firestore", tablet_ops_per_s=500.0, retry_reoffer=0.0)
    got = {}
    for n in (1, 4, 16, 64):
        run = runs.run("firestore", f"shard({n})#timestamp", ops={"insert": 1.0})
        (fc,) = reforecast(run, launch_file=runs.launch_file("constant", duration="2h"), rate=2.0 * 500 * n,
                           params=params).values()
        got[n] = _steady(fc, "mid")
    ok = all(abs(v - 500 * n) <= 0.05 * 500 * n for n, v in got.items())
    shards = ", ".join(f"{n} shard{'s' if n > 1 else ''} → {v:,.0f}" for n, v in got.items())
    predicted = f"{shards} writes/s (±5 % of 500·n)"
    return Row(f"n-way sharded timestamps take 500·n writes/s ([shard-timestamp]({_SHARD_TIMESTAMP}))",
               "500·n writes/s", "one range takes 500 writes/s", predicted, ok)


def bigtable_nodes(runs: DesignRuns, tmp: Path) -> Row:
    """Performance page: 10 SSD nodes up to 140,000 rows/s. Given: one node's 14,000 (favourable end).
    Design constraint in part: the cluster's cap is nodes × one node; what the row holds is that a
    new table splits and its pieces reach the other nodes, so random keys get there."""
    run = runs.run("bigtable", "random", ops={"insert": 1.0})
    got = {}
    for nodes in (1, 3, 10):
        (fc,) = reforecast(run, launch_file=runs.launch_file("constant", duration="2h"), rate=200_000.0,
                           nodes=nodes).values()
        got[nodes] = _steady(fc, "favourable")
    ok = all(abs(v - 14_000 * n) <= 0.03 * 14_000 * n for n, v in got.items())
    predicted = ", ".join(f"{n} node{'s' if n > 1 else ''} → {v:,.0f}" for n, v in got.items()) + " rows/s"
    return Row(f"Bigtable throughput is linear in nodes: 10 SSD nodes, 140,000 rows/s ([performance]({_PERFORMANCE}))"
               " — design constraint in part (cluster = nodes × a node)", "140,000 rows/s at 10 nodes",
               "14,000 rows/s for one node", predicted, ok)


def ramp_vs_jump(runs: DesignRuns, tmp: Path) -> Row:
    """500/50/5: start at 500, +50 % every 5 minutes. A ramp of uniform keys stays unthrottled (the
    split ranges are bounded by this rule: design constraint); a jump to 10× the start is not (held out)."""
    run = runs.run("firestore", "random", ops={"insert": 1.0})
    (ramp,) = reforecast(run, launch_file=runs.launch_file("ramp_500_50_5", duration="95m"),
                         rate=1_000_000.0).values()
    (jump,) = reforecast(run, launch_file=runs.launch_file("constant", duration="30m"), rate=5000.0).values()
    assert jump.timeline is not None and ramp.peak_throttled_fraction is not None
    first = {label: max(jump.timeline.throttled[label][:3]) for label in ("favourable", "mid", "unfavourable")}
    worst = ramp.peak_throttled_fraction.high
    ok = ramp.verdict == "ok" and worst is not None and worst <= 0.01 and min(first.values()) >= 0.3
    predicted = (f"ramp: {ramp.verdict}, worst step {worst or 0.0:.1%}; jump to 5,000: "
                 f"first 30 s throttled {min(first.values()):.0%}–{max(first.values()):.0%} across the band")
    return Row(f"+50 %/5 min is safe for uniform keys, a 10× jump is not ([500/50/5]({_RAMP})) — the safe half is a "
               "design constraint", "ramp safe, 10× jump throttled", "split trigger and delay bounded by 500/50/5",
               predicted, ok)


def keyvis_diagonal(runs: DesignRuns, tmp: Path) -> Row:
    """Key Visualizer: 'a single bright diagonal line' is a strictly increasing key. Held against the
    heatmap keyramp draws (positions against the range at each moment) of the regenerated stream:
    the hottest bucket climbs with time for sequential ids; for random ids there is no line. The
    same check on a real emulator run's measured heatmap: tests/keyspace/test_keyspace_runs.py."""
    from keyramp.forecast._mix import op_mix
    from keyramp.forecast._project import regenerated_projection
    from keyramp.keyspace import heatmap_data

    def line(strategy: str) -> tuple[float, float]:
        run = runs.run("datastore", strategy, ops={"insert": 1.0})
        settings = run.manifest.settings
        proj = regenerated_projection(settings=settings, backend="datastore", strategy=strategy,
                                      mix=op_mix({"insert": 3000}, settings.workload), rate=lambda t: 300.0,
                                      duration_s=10.0, existing=500, samples=3000, exact=False)
        assert proj.positions is not None
        return diagonal_line(heatmap_data(proj.positions, proj.t, buckets=100, time_bins=20)["counts"])

    seq, rnd = line("padded_sequential"), line("random")
    ok = seq[0] >= 0.95 and seq[1] >= 0.9 and abs(rnd[0]) < 0.5 and rnd[1] < 0.3
    predicted = (f"sequential: hottest bucket vs time r = {seq[0]:.2f}, {seq[1]:.0%} of each second within 10 % of "
                 f"the range; random: r = {rnd[0]:.2f}, {rnd[1]:.0%}")
    return Row(f"a strictly increasing key draws one bright diagonal line ([Key Visualizer patterns]({_KEYVIS}))",
               "a diagonal line", "nothing about heatmaps (the regenerated stream's heatmap)", predicted, ok)


def distributed_counter(runs: DesignRuns, tmp: Path) -> Row:
    """Firestore's distributed counters: "write throughput increases linearly with the number of shards, so a
    distributed counter with 10 shards can handle 10x as many writes as a traditional counter". Given: one
    document's 1 sustained write/s (the extension's page), nothing about shards. Predicted through the path
    ``keyramp plan``'s fix takes (the run's counter, its key spread over n keys): the writes/s served once
    split, at 4 × n offered."""
    from keyramp.forecast._forecast import Forecaster
    from keyramp.forecast._run_designs import run_designs
    from keyramp.profile._launch import LaunchSettings

    boxes = load_params_file(_params(tmp / "one-document.json", "firestore", key_write_ops_per_s=1.0,
                                     retry_reoffer=0.0), default_boxes())
    (cell,) = run_designs(runs.run("firestore", "random", ops={"increment": 1.0},
                                   workload={"record_count": 1})).cells
    counter = Forecaster(cell.design, recorded=cell.samples)
    got = {}
    for n in (1, 10, 100):
        launch = LaunchSettings.from_data({"kind": "constant", "rate": 4.0 * n, "duration_s": 7200.0})
        fc = counter.variant(key_shards=n).forecast(launch, boxes=boxes, stability=False).to_doc()
        got[n] = _steady(fc, "mid")
    ok = all(abs(v - n) <= 0.05 * n for n, v in got.items())
    predicted = ", ".join(f"{n} shard{'s' if n > 1 else ''} → {v:,.1f}" for n, v in got.items()) + \
        f" writes/s: ×{got[10] / got[1]:.1f} and ×{got[100] / got[1]:.1f} one document's"
    return Row(f"a distributed counter's write throughput is linear in its shards, 10 shards take 10× "
               f"([distributed counters]({_COUNTERS})) — design constraint in part (each shard is a key of its "
               "own); held out: the shards' reads and the splits among them take nothing from it",
               "10 shards: 10× a counter's writes", "one document sustains 1 write/s", predicted, ok)


ROWS: tuple[Callable[[DesignRuns, Path], Row], ...] = (sharded_timestamps, bigtable_nodes, ramp_vs_jump,
                                                       keyvis_diagonal, distributed_counter)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[Row]:
    tmp = tmp_path_factory.mktemp("validation")
    runs = DesignRuns(tmp / "runs")
    return [make(runs, tmp) for make in ROWS]


def test_every_held_out_figure_is_predicted(rows: list[Row]) -> None:
    failed = [r.check for r in rows if not r.passed]
    assert not failed, "\n".join(r.markdown() for r in rows)


def _doc_rows() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("<!-- validation table: tests/forecast/test_validation.py -->")[1].split("<!-- end -->")[0]
    return [line for line in section.strip().splitlines() if line.startswith("| ") and not re.match(r"\|[-| ]+\|$",
                                                                                                  line)][1:]


def test_the_documented_table_is_what_the_model_predicts(rows: list[Row]) -> None:
    expected = [r.markdown() for r in rows]
    assert _doc_rows() == expected, "update docs/keyspace-model.md's validation table:\n" + "\n".join(expected)
