"""A cell's launch forecast: the typed entry point (``Forecaster``, ``forecast``) and the
``summary.json`` form the runner and ``keyramp forecast`` write (``forecast_cell``).

One ``Forecaster`` per cell answers any number of launches: the choice of keys (and its
check against the recording) is made once, and each projection is kept per launch
traffic, so a launch that differs only in Bigtable nodes, storage or parameter ranges
reuses it (the launch planner's loop). Everything is deterministic for the same inputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from keyramp.backends import STORES, StoreParams, model_of, store_params
from keyramp.forecast._band import Band, band_points, evaluate_band
from keyramp.forecast._captured import design_keys, index_ranges, recorded_mix
from keyramp.forecast._design import CellDesign, KeysChoice, choose_keys
from keyramp.forecast._launch import Launch
from keyramp.forecast._mix import OpMix
from keyramp.forecast._model import Outcome, run_point
from keyramp.forecast._project import Projection, regenerated_projection
from keyramp.forecast._recorded import RecordedKeys, recorded_keys, recorded_projection
from keyramp.forecast._result import Forecast, Stability
from keyramp.forecast._verdict import span_verdict
from keyramp.keyspace import CellKeys, load_keys
from keyramp.profile import Cell, Profile, Schedule, Settings
from keyramp.results import CellForecast, CellSummary, as_cell

__all__ = ["FinishedCell", "Forecaster", "cell_forecast", "cell_forecaster", "forecast", "forecast_cell",
           "forecast_step", "samples_for"]


#: Parameters that act on throttled requests only: retries re-offer them (at any share), pieces of a
#: split wait for a node (a shorter wait throttles no more than a longer one that throttled nothing).
ONLY_WHEN_THROTTLED = {"retry_reoffer": True, "placement_delay_s": False}


def samples_for(duration_s: float) -> int:
    """Sampled accesses per projected range: ~6 per launch second (60 per 10-s step), 12,000–30,000."""
    return int(min(30_000, max(12_000, 6 * duration_s)))


def _traffic(launch: Launch) -> str:
    """What a projection depends on: the launch's rates over time (not its nodes, storage or params)."""
    spec = {k: v for k, v in launch.spec.items() if k not in ("nodes", "storage", "params", "plan")}
    return json.dumps(spec, sort_keys=True, default=str)


class Forecaster:
    """Forecasts of one cell (``CellDesign``) at any launch.

    ``recorded``: the cell's sampled keys (``CellKeys``) or a function that loads them; read
    only when the recorded keys are projected.
    """

    def __init__(self, design: CellDesign, *, recorded: Any = None) -> None:
        self.design = design
        self._recorded_source = recorded
        self._recorded: RecordedKeys | None = None
        self._loaded = False
        self._raw: tuple[CellKeys | None] | None = None
        self._mix: OpMix | None = None
        self._keys: KeysChoice | None = None
        self._projections: dict[tuple[str, int, int, bool], Projection] = {}
        self._keys_cache: dict[str, dict[int, str]] = {}  # launch traffic -> insert index -> key

    def _samples(self) -> CellKeys | None:
        if self._raw is None:
            source = self._recorded_source
            self._raw = (source() if callable(source) else source,)
        return self._raw[0]


    @property
    def mix(self) -> OpMix:
        """The cell's op mix in row accesses: a Python workload's as its recorded requests did (inserts,
        writes, reads per operation), else the design's (``CellDesign.mix``)."""
        if self._mix is None:
            samples = self._samples() if self.design.python_workload else None
            self._mix = (None if samples is None else recorded_mix(samples, self.design.counts)) or self.design.mix
        return self._mix

    def recording(self, keep: int) -> RecordedKeys | None:
        if not self._loaded:
            d, samples = self.design, self._samples()
            own = False
            if self.design.python_workload and samples is not None and d.settings is not None:
                inserted = self.mix.inserts_per_op * sum(d.counts.values())
                own = not design_keys(samples, settings=d.settings, backend=d.backend, strategy=d.strategy,
                                      existing=d.existing or 0, inserted=inserted)
            self._recorded = recorded_keys(samples, settings=d.settings, backend=d.backend, strategy=d.strategy,
                                           existing=d.existing, keep=keep, own_keys=own)
            self._loaded = True
        return self._recorded

    @property
    def keys(self) -> KeysChoice:
        if self._keys is None:
            self._keys = choose_keys(self.design, has_recording=lambda: self.recording(4 * 30_000) is not None,
                                     samples=self._samples)
        return self._keys

    def projection(self, launch: Launch, *, samples: int | None = None, draws: int = 1,
                   index_ranges: bool = True) -> Projection | None:
        """The launch stream: ``draws`` × ``samples`` sampled accesses (kept per launch traffic, samples,
        draws); None: nothing to project. Twice the draws keep the first one (the stability check)."""
        n = samples or samples_for(launch.duration_s)
        traffic = _traffic(launch)
        key = (traffic, n, draws, index_ranges)
        if key not in self._projections:
            made = self._project(launch, n, draws, index_ranges, self._keys_cache.setdefault(traffic, {}))
            if made is None:
                return None
            self._projections[key] = made
        return self._projections[key]

    def _project(self, launch: Launch, n: int, draws: int, index_ranges_wanted: bool,
                 cache: dict[int, str]) -> Projection | None:
        d, keys = self.design, self.keys
        if keys.keys == "regenerated":
            assert d.settings is not None
            return regenerated_projection(settings=d.settings, backend=d.backend, strategy=d.strategy, mix=d.mix,
                                          rate=launch.rate, duration_s=launch.duration_s, existing=d.record_count,
                                          samples=n, seeds=draws, index_ranges=index_ranges_wanted, cache=cache,
                                          rates=launch.rates, key_shards=d.key_shards)
        rec = self.recording(4 * 30_000)
        if rec is None:
            return None
        samples = self._samples()
        indexes = index_ranges(samples) if index_ranges_wanted and samples is not None else []
        return recorded_projection(rec, mix=self.mix, rate=launch.rate, duration_s=launch.duration_s,
                                   samples=n * draws, seed=draws - 1, why=keys.why, rates=launch.rates,
                                   key_shards=d.key_shards, indexes=indexes)

    def variant(self, *, key_shards: int | None = None, indexed: bool | None = None) -> Forecaster:
        """This cell changed as a fix would change it — every key spread over ``key_shards`` adjacent keys (a
        distributed counter), its indexed fields exempted (``indexed=False``) —: the same keys choice, recording
        and mix, its own projections."""
        d = self.design
        other = Forecaster(replace(d, key_shards=d.key_shards if key_shards is None else key_shards,
                                   indexed=d.indexed if indexed is None else indexed), recorded=self._recorded_source)
        other._recorded, other._loaded, other._keys = self._recorded, self._loaded, self._keys
        other._raw, other._mix = self._raw, self._mix
        return other

    def hottest_key(self, launch: Launch, box: StoreParams) -> float:
        """The hottest unit's writes/s at the launch's busiest moment (0: nothing to project)."""
        proj, _ = self._projection_or_reason(launch, box)
        if proj is None:
            return 0.0
        grid = np.linspace(0.0, launch.duration_s, 241)
        return proj.keys.hottest(grid, np.asarray(launch.rates(grid)) * proj.mix.rows_per_op)

    def forecast(self, launch: Launch, *, box: StoreParams | None = None,
                 boxes: Mapping[str, StoreParams] | None = None, stability: bool = True,
                 samples: int | None = None, known: Mapping[str, Outcome] | None = None) -> Forecast:
        """The forecast at ``launch`` over ``box`` (default: the store's published figures and stated
        guesses, or the box of ``boxes``, a calibration file, for the launch's storage). ``samples``: sampled
        accesses per draw (default: ``samples_for`` the launch; the launch planner's searches take fewer);
        ``known``: band points (by label) the launch planner already simulated on the same projection."""
        d = self.design
        box = box or self.box_for(launch, boxes)
        kind = box.kind
        if kind is None:
            raise ValueError(f"{box.store}: its parameter box names no tablet model to run")
        keys = self.keys
        proj, why_not = self._projection_or_reason(launch, box, samples)
        if proj is None:
            disagreement = keys.unavailable is not None and keys.check is not None
            return Forecast(backend=d.backend, launch=launch.for_backend(d.backend), box=box, keys=keys,
                            verdict="uncertain" if disagreement else None, reason=why_not)
        band = self._band(proj, launch, box, kind, known)
        verdict, deciding, reason, stable = band.verdict, band.deciding, None, None
        if stability:
            stable = self._stability(proj, launch, box, kind, band)
            if not stable.same_verdict:
                verdict, deciding = span_verdict(stable.verdicts), "samples"
                reason = (f"sampling: {stable.verdicts[0]} at {stable.samples[0]:,} samples, {stable.verdicts[1]} "
                          "at twice")
        return Forecast(backend=d.backend, launch=launch.for_backend(d.backend), box=box, verdict=verdict,
                        deciding_param=deciding, reason=reason, band=band, keys=keys, projection=proj,
                        stability=stable)

    def box_for(self, launch: Launch, boxes: Mapping[str, StoreParams] | None = None) -> StoreParams:
        """The store's parameter box for the launch's storage (from ``boxes``, a calibration file, if there)."""
        backend = self.design.backend
        return store_params(backend, launch.storage if model_of(backend).storage_types else None,
                            boxes=dict(boxes) if boxes else None)

    def outcome(self, launch: Launch, label: str, *, box: StoreParams, samples: int | None = None) -> Outcome | None:
        """One point of the band (``self.band_points(launch, box)[label]``) at ``launch``, from the same
        projection as ``forecast``: what the launch planner's searches evaluate one point at a time (None:
        nothing to project)."""
        proj, _ = self._projection_or_reason(launch, box, samples)
        if proj is None or box.kind is None:
            return None
        return self._run(proj, launch, box.kind, band_points(box, inert_params(proj, launch, box))[label])

    def _projection_or_reason(self, launch: Launch, box: StoreParams,
                              samples: int | None = None) -> tuple[Projection | None, str]:
        """The launch stream for ``box``'s ranges, or why there is none."""
        d, keys = self.design, self.keys
        if keys.unavailable:
            return None, keys.unavailable if keys.check is not None else "no sampled keys to project"
        if self.mix.rows_per_op <= 0:
            return None, "no projectable operations (only " + ", ".join(self.mix.not_projected) + ")"
        indexes = (d.indexed and STORES.get(d.backend).has("secondary_indexes")
                   and "index_append_ops_per_s" in box.ranges)
        proj = self.projection(launch, samples=samples, index_ranges=indexes)
        return proj, "" if proj is not None else "no sampled keys to project"

    def _band(self, proj: Projection, launch: Launch, box: StoreParams, kind: str,
              known: Mapping[str, Outcome] | None = None) -> Band:
        return evaluate_band(box, lambda point: self._run(proj, launch, kind, point),
                             only_when_throttled=ONLY_WHEN_THROTTLED, known=known,
                             inert=inert_params(proj, launch, box))

    def band_points(self, launch: Launch, box: StoreParams, samples: int | None = None) -> dict[str, dict[str, float]]:
        """The band's points at ``launch`` (``_band.band_points`` without the parameters that cannot act on
        it): what the launch planner's trials ask one at a time."""
        proj, _ = self._projection_or_reason(launch, box, samples)
        return band_points(box, () if proj is None else inert_params(proj, launch, box))

    @staticmethod
    def _run(proj: Projection, launch: Launch, kind: str, point: Mapping[str, float]) -> Outcome:
        return run_point(proj, kind=kind, point=point, rate=launch.rate, duration_s=launch.duration_s,
                         nodes=int(launch.nodes or 1), rates=launch.rates)

    def _stability(self, proj: Projection, launch: Launch, box: StoreParams, kind: str, band: Band) -> Stability:
        exact = not any(r.sampled for r in (proj.docs, *proj.index.values()))
        again = band if exact else None
        if again is None:
            twice = self.projection(launch, samples=proj.samples, draws=2, index_ranges=bool(proj.index))
            assert twice is not None
            again = self._band(twice, launch, box, kind)
        a, b = band.figures["throttled_fraction"], again.figures["throttled_fraction"]
        diff = max(abs((a[k] or 0.0) - (b[k] or 0.0)) for k in ("low", "mid", "high"))
        return Stability(samples=(proj.samples, 2 * proj.samples), mid=(a["mid"] or 0.0, b["mid"] or 0.0),
                         max_difference=diff, verdicts=(band.verdict, again.verdict), exact=exact)


def inert_params(proj: Projection, launch: Launch, box: StoreParams) -> frozenset[str]:
    """Parameters that cannot act on this launch, whatever their value: the per-key limit when no unit
    takes, at the launch's busiest moment and with every retry sent again, as much as its low end."""
    limit = box.ranges.get("key_write_ops_per_s")
    if limit is None or limit.low >= limit.high:
        return frozenset()
    if not proj.keys.empty:
        retry = box.ranges.get("retry_reoffer")
        boost = 1.0 / (1.0 - min(retry.high if retry is not None else 0.0, 0.99))
        grid = np.linspace(0.0, launch.duration_s, 241)
        rows = np.asarray(launch.rates(grid)) * proj.mix.rows_per_op
        if proj.keys.hottest(grid, rows) * boost >= limit.low:
            return frozenset()
    return frozenset({"key_write_ops_per_s"})


def forecast(design: CellDesign, launch: Launch, *, box: StoreParams | None = None, recorded: Any = None,
             stability: bool = True) -> Forecast:
    """One forecast: ``Forecaster(design, recorded=recorded).forecast(launch, box=box)``."""
    return Forecaster(design, recorded=recorded).forecast(launch, box=box, stability=stability)


def forecast_cell(*, backend: str, strategy: str, settings: Settings | None, launch: Launch,
                  cell_summary: CellSummary | Mapping[str, Any], samples: Any = None,
                  boxes: Mapping[str, StoreParams] | None = None, cell_schedule: Schedule | None = None,
                  horizon_s: float = 0.0, stability: bool = True) -> dict[str, Any]:
    """``cells[id].forecast`` for summary.json, as JSON (``cell_forecast`` is the typed document).

    ``settings``: the run's profile, typed (keys are regenerated from it); ``samples``: the cell's
    sampled keys (``CellKeys``) or a function loading them, projected when the keys cannot be
    regenerated or the recording disagrees; ``boxes``: parameter boxes of a calibration file.
    ``cell_summary``: the cell's summary, read through the results model (a mapping at this edge).
    """
    return cell_forecast(backend=backend, strategy=strategy, settings=settings, launch=launch,
                         cell_summary=cell_summary, samples=samples, boxes=boxes, cell_schedule=cell_schedule,
                         horizon_s=horizon_s, stability=stability).to_json()


def cell_forecast(*, backend: str, strategy: str, settings: Settings | None, launch: Launch,
                  cell_summary: CellSummary | Mapping[str, Any], samples: Any = None,
                  boxes: Mapping[str, StoreParams] | None = None, cell_schedule: Schedule | None = None,
                  horizon_s: float = 0.0, stability: bool = True) -> CellForecast:
    """``forecast_cell``'s document, typed (``CellSummary.forecast``)."""
    design = CellDesign.from_summary(backend=backend, strategy=strategy, settings=settings,
                                     cell_summary=as_cell(cell_summary), schedule=cell_schedule, horizon_s=horizon_s)
    return Forecaster(design, recorded=samples).forecast(launch, boxes=boxes, stability=stability).to_doc()


def cell_samples(run: Path | Any, cell_id: str) -> Callable[[], Any]:
    """A loader of one cell's sampled keys (read only if the forecast projects them)."""
    return _quietly(lambda: load_keys(run, cell=cell_id).get(cell_id))


def _quietly(load: Callable[[], CellKeys | None]) -> Callable[[], CellKeys | None]:
    """``load``, with an unreadable key file as no keys: the forecast then regenerates the design's."""
    def quiet() -> CellKeys | None:
        try:
            return load()
        except (OSError, ValueError):
            return None

    return quiet


class FinishedCell(Protocol):
    """A cell the runner just measured, as its analysis steps see it (``keyramp.run._analysis.CellAnalysis``)."""

    run_dir: Path
    profile: Profile
    cell: Cell
    summary: CellSummary
    #: The cell had a measured phase (a probe cell has none, and no key samples).
    measured: bool
    #: Built by the forecast step, reused by the plan step.
    forecaster: Forecaster | None

    def keys(self) -> CellKeys | None:
        """The cell's sampled keys, read once for all the steps (the key-space step reads them first)."""
        ...


def forecast_step(a: FinishedCell) -> None:
    """The run's analysis step after each cell: adds ``summary["forecast"]`` when the profile has a
    ``[launch]``; a probe cell has no key stream."""
    launch = a.profile.launch
    if launch is None or not a.measured:
        return
    a.summary.forecast = cell_forecaster(a).forecast(launch, boxes=launch.boxes()).to_doc()


def cell_forecaster(a: FinishedCell) -> Forecaster:
    """A finished cell's forecaster, built once: the forecast and plan steps share its design, recorded keys
    and projections."""
    if a.forecaster is None:
        a.forecaster = Forecaster(CellDesign.of_cell(a.cell, a.summary), recorded=_quietly(a.keys))
    return a.forecaster
