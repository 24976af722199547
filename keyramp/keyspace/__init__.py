"""Key-space analysis: where a cell's load lands (measured) and what tablets would do (modelled).

The emulators never split tablets, so keyramp measures the key stream (heatmap,
hotspot metrics) and models a range-partitioned store from it. Model figures carry
``modelled: true``; see docs/keyspace-model.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.keyspace._analyse import cell_heatmap, summarize_run_cell
from keyramp.keyspace._components import Frontiers
from keyramp.keyspace._headline import keyspace_headline
from keyramp.keyspace._heatmap import heatmap_data, render_png
from keyramp.keyspace._load import (
    CellKeys,
    KeyPositions,
    Reference,
    key_positions,
    load_keys,
    make_reference,
)
from keyramp.keyspace._metrics import analyze_cell, hotspot_metrics, summarize_cell
from keyramp.keyspace._reference import cell_reference
from keyramp.keyspace._run_keyspace import run_keyspace
from keyramp.keyspace._tablets import (
    SYNTHETIC_PATTERNS,
    TabletParams,
    TabletTimeline,
    has_model,
    params_for,
    simulate,
    synthetic_stream,
)

if TYPE_CHECKING:
    from keyramp.keyspace._analyse import as_inserts, existing_records, reference_or_none
    from keyramp.keyspace._encode import key_bytes
    from keyramp.keyspace._headline import FIGURE, FIGURES
    from keyramp.keyspace._metrics import append_runs
    from keyramp.keyspace._reference import preload_indexes
    from keyramp.keyspace._run_keyspace import format_table


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
