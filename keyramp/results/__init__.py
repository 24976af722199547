"""What a run leaves: the run directory writer and the rows and observer protocol it is written
through, threshold evaluation and the generator verdict, the catalog over past runs, baselines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.results._cost_doc import BilledLine, ListPrice, PlanCost, PricesUsed, WindowCost
from keyramp.results._forecast_doc import (
    BandFigures,
    CellForecast,
    ForecastLaunch,
    ForecastProjection,
    ForecastStability,
    ForecastTimeline,
    KeysCheck,
    ParamBounds,
    SensitivityEnd,
    SensitivityRow,
)
from keyramp.results._keyspace_doc import CapacityBand, KeyspaceFigures, TabletModel, TabletModelParams
from keyramp.results._live_doc import LiveStatus
from keyramp.results._plan_doc import CellLaunchPlan, Fix, GoogleRamp, LaunchPlan, PlanCheck, Ramp, RampShape, RateBand
from keyramp.results._probe_doc import ProbeFigures, ProbeResult

if TYPE_CHECKING:
    from keyramp.results._alive import DIED, why_dead
    from keyramp.results._baselines import load_baselines, remove_baseline, resolve_baseline, set_baseline
    from keyramp.results._catalog import (
        CELL_ID_RE,
        RUN_ID_RE,
        Run,
        cell_identity,
        list_runs,
        load_run,
        resolve_run,
        safe_run_path,
    )
    from keyramp.results._cost_doc import LABEL
    from keyramp.results._doc import DocError
    from keyramp.results._error_classes import counts_text, errors_text
    from keyramp.results._exceptions import ExceptionExample, cell_exceptions, workload_error_cells
    from keyramp.results._export import export_cell, export_csv, migrate_run
    from keyramp.results._forecast_doc import as_forecast, written
    from keyramp.results._generator import (
        LIMIT_WORDS,
        MACHINE_LIMITED,
        check_generator,
        generator_late,
        generator_limited,
        limit_reason,
        limit_text,
        limit_word,
        littles_rate,
        machine_limited,
        starved_reason,
    )
    from keyramp.results._index import FILTERS, SORT_KEYS, Catalog, RunQuery, latest_runs, query_rows, run_row
    from keyramp.results._keyspace_doc import as_keyspace
    from keyramp.results._legacy import TIMESERIES_CSV
    from keyramp.results._live import LIVE_FILE, STEPPED, LiveFile, warmup_phase
    from keyramp.results._live_doc import LiveCell, LiveStep
    from keyramp.results._observer import Observers, RunObserver, TeeSink
    from keyramp.results._plan_doc import GOOGLE_RAMP, FasterRamp, read_launch_plan
    from keyramp.results._probe_doc import (
        BatchFigures,
        ConsistencyFigures,
        ContentionFigures,
        DeletedRangeFigures,
        FanoutFigures,
        HygieneFigures,
        OffsetCursorFigures,
        ProbeLatency,
        ProjectionFigures,
        VisibleAfter,
    )
    from keyramp.results._read import (
        add_hlog,
        cell_hlogs,
        data_cells,
        data_stamp,
        is_csv_run,
        read_intervals,
        read_keys,
        read_timeseries,
    )
    from keyramp.results._rows import IntervalSink, TimeseriesRow
    from keyramp.results._rundir import RunDirectory, base_manifest, utc_now, write_json_new
    from keyramp.results._summary import (
        CellSummary,
        ErrorClass,
        Latency,
        LoadCpu,
        LoadGenerated,
        ManifestCell,
        OpStats,
        RunManifest,
        RunSummary,
        TargetPoint,
        ThresholdRow,
        as_cell,
    )
    from keyramp.results._target_doc import CellStoreModel, TargetModel
    from keyramp.results._thresholds import evaluate
    from keyramp.results._values import as_dict, as_list, num, text


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
