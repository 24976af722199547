"""Python workloads: the application's own operations as ``@keyramp.op`` methods of a store user.

``_ops`` (the decorator, no Locust import), ``_loader`` (a profile's ``[workload] user``,
checked before any load), ``_user`` (the Locust user classes; imports Locust).
"""

from __future__ import annotations

from keyramp.pyworkload._loader import LoadedUser, load_user
from keyramp.pyworkload._ops import RESERVED, OpSpec, collect_ops, op, operation

__all__ = ["RESERVED", "LoadedUser", "OpSpec", "collect_ops", "load_user", "op", "operation"]
