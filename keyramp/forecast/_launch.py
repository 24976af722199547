"""``Launch``: the traffic the forecast projects each cell to — a profile's typed ``[launch]``.

The profile owns the section (``keyramp.profile._launch``: declaration, validation, the
resolved table); the forecast only reads it, under the name its API has always used.
"""

from __future__ import annotations

from keyramp.profile import CLUSTER_FIELDS, DEFAULT_DURATION_S, cluster_stores, parse_launch
from keyramp.profile import LaunchSettings as Launch

__all__ = ["CLUSTER_FIELDS", "DEFAULT_DURATION_S", "Launch", "cluster_stores", "parse_launch"]
