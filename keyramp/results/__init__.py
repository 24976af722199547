"""What a run leaves: the run directory writer and the rows and observer protocol it is written
through, threshold evaluation and the generator verdict, the catalog over past runs, baselines."""

from keyramp.results._keyspace_doc import CapacityBand, KeyspaceFigures, TabletModel, TabletModelParams
from keyramp.results._plan_doc import CellPlan, Fix, GoogleRamp, PlanCheck, Ramp, RampShape, RateBand

__all__ = ["CapacityBand", "CellPlan", "Fix", "GoogleRamp", "KeyspaceFigures", "PlanCheck", "Ramp", "RampShape",
           "RateBand", "TabletModel", "TabletModelParams"]
