"""What a run leaves: the run directory writer and the rows and observer protocol it is written
through, threshold evaluation and the generator verdict, the catalog over past runs, baselines."""

from keyramp.results._live_doc import LiveStatus
from keyramp.results._probe_doc import ProbeFigures, ProbeResult

__all__ = ["LiveStatus", "ProbeFigures", "ProbeResult"]
