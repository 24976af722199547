"""A cell's launch forecast (``cells[id].forecast`` in summary.json) as a typed document.

Written by the forecast layer (``keyramp.forecast._result.Forecast.to_doc``), read by every view
of it; every figure here is modelled (docs/keyspace-model.md). Two shapes share the type: a
forecast with a band (the verdict over the parameter box, its figures, sensitivity, projection
and timeline) and one without (``verdict`` None or a verdict without a band, ``reason`` says
why; ``projection`` then names the keys only). Older summaries hold fewer keys (no ``params``,
``timeline``, ``stability``; a shorter ``projection.check``): those fields are simply None.

The writer states the keys it always writes, in order (``written``): a forecast writes some
nulls explicitly (``deciding_param``; ``reason`` without a band) and puts ``reason`` where its
shape has it, which declaration order and defaults alone cannot say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from keyramp.results._doc import JsonDoc
from keyramp.results._doc import doc as _doc

__all__ = [
    "BandFigures",
    "CellForecast",
    "ForecastLaunch",
    "ForecastProjection",
    "ForecastStability",
    "ForecastTimeline",
    "KeysCheck",
    "ParamBounds",
    "SensitivityEnd",
    "SensitivityRow",
    "as_forecast",
    "written",
]

_D = TypeVar("_D", bound=JsonDoc)


def written(doc: _D, *keys: str) -> _D:
    """``doc``, which writes ``keys`` first, in this order, explicit nulls too; then, in declaration
    order, the fields set apart from them (a writer sets an optional part only when it has one)."""
    object.__setattr__(doc, "_keys", keys)
    return doc


@dataclass(kw_only=True)
class ForecastLaunch(JsonDoc):
    """The launch a cell is forecast at (``Launch.for_backend``): the traffic, and the cluster
    where the store has one."""

    kind: str | None = field(default=None, metadata=_doc("constant | ramp | diurnal | spike | …"))
    description: str | None = None
    duration_s: float | None = None
    peak_ops_per_s: float | None = None
    total_ops: int | None = None
    nodes: int | None = field(default=None, metadata=_doc("stores with nodes (Bigtable) only"))
    storage: str | None = field(default=None, metadata=_doc("ssd | hdd (Bigtable only)"))


@dataclass(kw_only=True)
class ParamBounds(JsonDoc):
    """One parameter of the model's box: ``low <= mid <= high`` in ``unit``, and what it rests on."""

    low: float
    mid: float
    high: float
    unit: str | None = None
    source: str | None = field(default=None, metadata=_doc("a URL, or why there is none"))
    note: str | None = None
    published: bool | None = field(default=None, metadata=_doc("the figure itself is published"))


@dataclass(kw_only=True)
class BandFigures(JsonDoc):
    """One modelled figure over the parameter box: its lowest, its value at the mid point, its
    highest (``adapt_s``: None is never, ranked above every number)."""

    low: float | None = None
    mid: float | None = None
    high: float | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("low", "mid", "high")


@dataclass(kw_only=True)
class SensitivityEnd(JsonDoc):
    """The forecast with one parameter at one end of its range, the others at mid."""

    value: float
    throttled_fraction: float
    verdict: str


@dataclass(kw_only=True)
class SensitivityRow(JsonDoc):
    """One varied parameter: the throttled share at its low and its high end (``swing``: the difference)."""

    param: str
    low: SensitivityEnd
    high: SensitivityEnd
    swing: float


@dataclass(kw_only=True)
class KeysCheck(JsonDoc):
    """The recorded key stream against the regenerated one (``agrees``: within ``tolerance``)."""

    measured_hottest_1pct_share: float | None = None
    regenerated_hottest_1pct_share: float | None = None
    measured_append_points: int | None = None
    regenerated_append_points: int | None = None
    append_points_resolved: bool | None = field(default=None, metadata=_doc(
        "whether the recording has enough sampled inserts (8 a point) to show the design's append points"))
    measured_hottest_key_share: float | None = field(default=None, metadata=_doc(
        "the hottest key's share of the sampled operations' writes"))
    expected_hottest_key_share: float | None = field(default=None, metadata=_doc("the design's"))
    agrees: bool | None = None
    tolerance: str | None = None


@dataclass(kw_only=True)
class ForecastProjection(JsonDoc):
    """How the cell's key stream was projected to the launch (without a band: the keys only)."""

    keys: str | None = field(default=None, metadata=_doc("regenerated | recorded"))
    why: str | None = None
    ranges: list[str] = field(default_factory=list, metadata=_doc("the key ranges projected"))
    limited_by: str | None = field(default=None, metadata=_doc(
        "what throttles the most operations at the band's mid point: one of ranges, or 'key' (one key's "
        "sustained write limit, key_write_ops_per_s); absent where nothing is throttled"))
    append_points: int | None = None
    samples: int | None = field(default=None, metadata=_doc("sampled accesses (None: nothing sampled)"))
    op_mix: dict[str, float] = field(default_factory=dict, metadata=_doc("op -> share of projected operations"))
    rows_per_op: float | None = None
    read_rows_share: float | None = None
    not_projected: list[str] = field(default_factory=list, metadata=_doc("operations the model leaves out"))
    check: KeysCheck | None = None


@dataclass(kw_only=True)
class ForecastTimeline(JsonDoc):
    """The launch second by second (thinned) at the band's favourable, mid and unfavourable points."""

    t: list[float] = field(default_factory=list)
    offered_ops_per_s: list[float] = field(default_factory=list)
    throttled: dict[str, list[float]] = field(default_factory=dict, metadata=_doc("point -> throttled share"))
    served_ops_per_s: dict[str, list[float]] | None = None


@dataclass(kw_only=True)
class ForecastStability(JsonDoc):
    """The same forecast at twice the samples (another seed): how much sampling moves it."""

    samples: list[int] = field(default_factory=list)
    throttled_fraction_mid: list[float] = field(default_factory=list)
    max_difference: float | None = None
    verdict_at_twice_the_samples: str | None = None
    same_verdict: bool | None = None
    exact: bool | None = field(default=None, metadata=_doc("nothing was sampled: both runs are the same model"))


@dataclass(kw_only=True)
class CellForecast(JsonDoc):
    """One cell's launch forecast (modelled): the verdict over the parameter box, its band, and
    what it rests on; ``verdict`` None: no forecast, ``reason`` says why."""

    modelled: bool | None = None
    launch: ForecastLaunch | None = None
    params: dict[str, ParamBounds] = field(default_factory=dict, metadata=_doc("the parameter box, by name"))
    params_from: str | None = field(default=None, metadata=_doc("'defaults' or the calibration file"))
    verdict: str | None = field(default=None, metadata=_doc("ok | at_risk | hotspot | uncertain | at_risk-hotspot"))
    deciding_param: str | None = field(default=None, metadata=_doc("what decides a split verdict"))
    throttled_fraction: BandFigures | None = None
    peak_throttled_fraction: BandFigures | None = field(default=None, metadata=_doc("the worst 10-s step"))
    adapt_s: BandFigures | None = None
    added_p99_ms: BandFigures | None = None
    verdicts: dict[str, str] = field(default_factory=dict, metadata=_doc("band point -> verdict"))
    sensitivity: list[SensitivityRow] = field(default_factory=list)
    criteria: dict[str, str] = field(default_factory=dict, metadata=_doc("what each verdict means"))
    projection: ForecastProjection | None = None
    timeline: ForecastTimeline | None = None
    reason: str | None = None
    stability: ForecastStability | None = None

    def band(self, name: str) -> BandFigures | None:
        """One of the four figures by name (``throttled_fraction``, …); None for any other name."""
        value = getattr(self, name, None) if name in _FIGURES else None
        return value if isinstance(value, BandFigures) else None


def as_forecast(forecast: object) -> CellForecast | None:
    """A forecast through the model: summary.json's mapping is read at this edge (``DocError``
    naming the field when misshapen); anything but a mapping or a ``CellForecast`` is None."""
    if isinstance(forecast, CellForecast):
        return forecast
    if isinstance(forecast, Mapping):
        return CellForecast.from_json(dict(forecast), where="forecast")
    return None


_FIGURES = ("throttled_fraction", "peak_throttled_fraction", "adapt_s", "added_p99_ms")
