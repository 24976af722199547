"""What a run leaves: the run directory writer and the rows and observer protocol it is written
through, threshold evaluation and the generator verdict, the catalog over past runs, baselines."""

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
from keyramp.results._plan_doc import CellPlan, Fix, GoogleRamp, PlanCheck, Ramp, RampShape, RateBand, RunPlan
from keyramp.results._probe_doc import ProbeFigures, ProbeResult

__all__ = ["BandFigures", "BilledLine", "CapacityBand", "CellForecast", "CellPlan", "Fix", "ForecastLaunch",
           "ForecastProjection", "ForecastStability", "ForecastTimeline", "GoogleRamp", "KeysCheck", "KeyspaceFigures",
           "ListPrice", "LiveStatus", "ParamBounds", "PlanCheck", "PlanCost", "PricesUsed", "ProbeFigures",
           "ProbeResult", "Ramp", "RampShape", "RateBand", "RunPlan", "SensitivityEnd", "SensitivityRow",
           "TabletModel", "TabletModelParams", "WindowCost"]
