"""``keyramp scenarios report RUN...``: one verdict per best-practice rule with its evidence.

Evidence comes from each cell's ``probe`` (measured on the emulator) or ``keyspace``
(hotspot metrics measured from the key stream + a modelled tablet store). An effect
the emulator cannot show is reported as "not observable on the emulator", never as
"no difference".
"""

from __future__ import annotations

import argparse
import html
import json
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keyramp._errors import UsageError

__all__ = ["Evidence", "collect", "evidence_for", "render_markdown", "render_html", "write_report", "register"]

#: A measured ratio below this is within emulator noise: the effect is not observable.
_OBSERVABLE_RATIO = 2.0


@dataclass(frozen=True, kw_only=True)
class Evidence:
    rule: str
    profile: str
    cell: str
    kind: str  # "measured" | "modelled" | "not observable" | "unsupported"
    text: str
    #: Numbers the verdict compares across a pair (e.g. aborts of one key vs many).
    values: Mapping[str, Any]


def _ratio_evidence(name: str, r: Mapping[str, Any], key: str, what: str) -> tuple[str, str]:
    ratio = r.get(key)
    observable = ratio is not None and ratio >= _OBSERVABLE_RATIO
    text = f"{what}: ×{ratio}"
    return ("measured" if observable else "not observable", text)


def _probe_evidence(probe: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    name = probe["name"]
    if "unsupported" in probe:
        return "unsupported", f"{name}: {probe['unsupported']}", {}
    r = probe.get("result") or {}
    if name == "consistency":
        kind = "measured" if (r.get("global_stale") or 0) > 0 else "not observable"
        text = (f"global query stale {r['global_stale_rate']:.0%} of {r['attempts']} (expected ≈ "
                f"{r['expected_stale_rate']:.0%} at consistency {r['emulator_consistency']}), ancestor "
                f"{_pct(r.get('ancestor_stale_rate'))}, lookup {_pct(r.get('lookup_stale_rate'))}; "
                f"queries until visible: mean {r['queries_until_visible']['mean']}, "
                f"max {r['queries_until_visible']['max']}")
        return kind, text, {"stale_rate": r.get("global_stale_rate")}
    if name == "contention":
        where = "one entity group" if r.get("same_group") else f"{r['keys']} key(s), {r['assign']}"
        text = (f"{r['threads']} writers × {r['op']} on {where}: {r['committed']} committed "
                f"({r['committed_per_s']}/s), {r['aborted']} aborted ({_pct(r.get('abort_rate'))}), "
                f"p50 {r['latency_ms']['p50']} ms, p99 {r['latency_ms']['p99']} ms")
        samples = r.get("error_samples") or {}
        if samples:
            first = next(iter(samples.values()))
            text += f"; error: `{first['message']}`"
        return "measured", text, {"aborted": r["aborted"], "committed_per_s": r["committed_per_s"],
                                  "hot": r["keys"] == 1 or bool(r.get("same_group"))}
    if name == "offset_cursor":
        kind, text = _ratio_evidence(name, r, "ratio", f"page {r['page']} by offset {r['offset_ms']} ms vs "
                                     f"cursor {r['cursor_ms']} ms")
        return kind, text, {"ratio": r.get("ratio")}
    if name == "projection":
        kind, text = _ratio_evidence(name, r, "full_vs_keys_only", f"{r['entities']} entities: full "
                                     f"{r['full_ms']} ms, projection {r['projection_ms']} ms, keys-only "
                                     f"{r['keys_only_ms']} ms; full vs keys-only")
        if r.get("full_vs_keys_only", 0) > 1.2:
            kind = "measured"
        return kind, text, {"ratio": r.get("full_vs_keys_only")}
    if name == "deleted_range":
        kind, text = _ratio_evidence(name, r, "ratio", f"after deleting {r['deleted']} of {r['entities']}: "
                                     f"head query {r['head_query_ms']} ms vs stored start "
                                     f"{r['stored_start_ms']} ms; head vs stored")
        return kind, text, {"ratio": r.get("ratio")}
    if name == "batch":
        text = (f"{r['entities']} entities: writes {r['single_write_per_s']}/s single vs "
                f"{r['batch_write_per_s']}/s in batches of {r['batch_size']} (×{r['write_speedup']}); reads "
                f"×{r['read_speedup']}")
        kind = "measured" if max(r["write_speedup"], r["read_speedup"]) > 1.2 else "not observable"
        return kind, text, {"ratio": r["write_speedup"]}
    if name == "fanout":
        kind, text = _ratio_evidence(name, r, "indexed_vs_unindexed", f"{r['properties']} properties: indexed "
                                     f"{r['indexed_ms']} ms vs unindexed {r['unindexed_ms']} ms per write "
                                     f"(1 property: {r['one_property_ms']} ms); indexed vs unindexed")
        return kind, text, {"ratio": r.get("indexed_vs_unindexed")}
    if name == "hygiene":
        parts = [f"{c['case']}: " + ("accepted" if c["accepted"] else f"{c['class']} `{c['message']}`")
                 for c in r.get("cases", [])]
        return "measured", "; ".join(parts), {"rejected": r.get("rejected")}
    return "measured", json.dumps(r)[:300], {}


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}"


def _keyspace_evidence(ks: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    model = ks.get("model") or {}
    text = (f"hottest 1 % of key space takes {ks.get('hottest_1pct_share', 0):.1%} of accesses, append "
            f"fraction {ks.get('append_fraction', 0):.2f}, moving hotspot {'yes' if ks.get('moving_hotspot') else 'no'}")
    if model:
        text += (f"; modelled: peak {model.get('peak_tablets', '-')} tablets, throttled "
                 f"{model.get('max_throttled_fraction', 0):.1%}")
    return "modelled", text, {"hot1": ks.get("hottest_1pct_share"), "throttled": model.get("max_throttled_fraction")}


def evidence_for(manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> list[Evidence]:
    """Evidence rows of one run: one per rule × cell."""
    profile = manifest.get("profile") or {}
    rules = list(profile.get("rules") or [])
    name = str(manifest.get("profile_name") or profile.get("name") or "?")
    rows: list[Evidence] = []
    for cell_id, cell in (summary.get("cells") or {}).items():
        if "probe" in cell:
            kind, text, values = _probe_evidence(cell["probe"])
        elif cell.get("keyspace"):
            kind, text, values = _keyspace_evidence(cell["keyspace"])
        else:
            total = cell.get("total") or {}
            lat = total.get("latency_ms") or {}
            kind, text, values = "measured", (f"{total.get('ops_per_s', 0)} ops/s, p99 {lat.get('p99')} ms, "
                                              f"error rate {_pct(total.get('error_rate'))}"), {}
        for rule in rules:
            rows.append(Evidence(rule=rule, profile=name, cell=cell_id, kind=kind, text=text, values=values))
    return rows


def _verdict(rule: str, rows: list[Evidence]) -> str:
    kinds = {r.kind for r in rows}
    contention = [r for r in rows if "hot" in r.values]
    hot = [r.values["aborted"] for r in contention if r.values["hot"]]
    spread = [r.values["aborted"] for r in contention if not r.values["hot"]]
    if hot and spread:
        if max(hot) > max(spread):
            return (f"confirmed (measured): the hot key/group aborted {max(hot)} transactions, the spread "
                    f"variant {max(spread)}")
        return "not observable on the emulator: no more aborts on the hot key than on spread keys"
    if "measured" in kinds:
        return "confirmed (measured on the emulator)"
    if "modelled" in kinds:
        hot1 = [r.values.get("hot1") for r in rows if r.values.get("hot1") is not None]
        spread_txt = f" (hottest-1 % share from {min(hot1):.1%} to {max(hot1):.1%} across the pair)" if len(hot1) > 1 else ""
        return f"not observable on the emulator; modelled from the key stream{spread_txt}"
    if "not observable" in kinds:
        return "not observable on the emulator (within noise); see the README for the modelled effect"
    return "no usable evidence (probe unsupported on this store)"


def collect(run_dirs: list[Path]) -> dict[str, list[Evidence]]:
    by_rule: dict[str, list[Evidence]] = defaultdict(list)
    for run in run_dirs:
        try:
            manifest = json.loads((run / "manifest.json").read_text())
            summary = json.loads((run / "summary.json").read_text())
        except FileNotFoundError as exc:
            raise UsageError(f"{run}: not a run directory ({Path(exc.filename).name} missing)") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"{run}: unreadable run file: {exc}") from None
        for row in evidence_for(manifest, summary):
            by_rule[row.rule].append(row)
    return dict(sorted(by_rule.items()))


def render_markdown(by_rule: Mapping[str, list[Evidence]]) -> str:
    lines = ["# keyramp scenario report", ""]
    for rule, rows in by_rule.items():
        lines += [f"## {rule}", "", f"**Verdict:** {_verdict(rule, rows)}", ""]
        lines += [f"- `{r.profile}` / `{r.cell}` ({r.kind}): {r.text}" for r in rows]
        lines.append("")
    return "\n".join(lines)


def render_html(by_rule: Mapping[str, list[Evidence]]) -> str:
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>keyramp scenario report</title>",
             "<style>body{font:14px system-ui,sans-serif;max-width:60em;margin:2em auto}"
             ".measured{color:#064}.modelled{color:#449}.unsupported,.not{color:#840}"
             "li{margin:.3em 0}</style></head><body><h1>keyramp scenario report</h1>"]
    for rule, rows in by_rule.items():
        parts.append(f"<h2 id='{esc(rule)}'>{esc(rule)}</h2><p><b>Verdict:</b> {esc(_verdict(rule, rows))}</p><ul>")
        for r in rows:
            cls = r.kind.split()[0]
            parts.append(f"<li class='{cls}'><code>{esc(r.profile)}</code> / <code>{esc(r.cell)}</code> "
                         f"({esc(r.kind)}): {esc(r.text)}</li>")
        parts.append("</ul>")
    parts.append("</body></html>")
    return "".join(parts)


def write_report(run_dirs: list[Path], out: Path) -> Path:
    by_rule = collect(run_dirs)
    if not by_rule:
        raise UsageError("no rules found: the runs' profiles name no `rules`")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render_markdown(by_rule))
    (out / "report.html").write_text(render_html(by_rule))
    return out


def _expand(paths: list[str]) -> list[Path]:
    runs: list[Path] = []
    for item in paths:
        p = Path(item)
        if (p / "manifest.json").is_file():
            runs.append(p)
        elif p.is_dir():  # a results directory: every run in it
            runs.extend(sorted(d for d in p.iterdir() if (d / "manifest.json").is_file()))
        else:
            raise UsageError(f"{p}: no such run directory")
    if not runs:
        raise UsageError("no run directories found")
    return runs


def _cmd_report(args: argparse.Namespace) -> int:
    runs = _expand(args.runs)
    out = Path(args.out) if args.out else Path("results") / f"scenarios-{time.strftime('%Y%m%dT%H%M%S')}"
    write_report(runs, out)
    print(f"report: {out / 'report.md'} and {out / 'report.html'}")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("scenarios", help="best-practice scenario tools")
    sub = parser.add_subparsers(dest="scenarios_command", required=True)
    report = sub.add_parser("report", help="per-rule verdicts with evidence from scenario runs")
    report.add_argument("runs", nargs="+", metavar="RUN", help="run directories (or a results dir holding runs)")
    report.add_argument("--out", default=None, help="report directory (default results/scenarios-<stamp>)")
    report.set_defaults(func=_cmd_report)
