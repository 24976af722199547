"""Python workloads: the application's own operations as ``@keyramp.op`` methods of a store user.

Locust-free, so the profile check can load and check a user's class before any load:
``_ops`` (the decorator), ``_keys`` (``self.keys``), ``_base`` (``WorkloadClass``, what the
loader accepts) and ``_loader`` (a profile's ``[workload] user``). The Locust user classes
themselves (``keyramp.DatastoreUser`` …) live with the runner, in ``run/_pyuser.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.pyworkload._base import WorkloadClass
from keyramp.pyworkload._loader import LoadedUser, load_user
from keyramp.pyworkload._ops import RESERVED, OpSpec, collect_ops, op, operation

if TYPE_CHECKING:
    from keyramp.pyworkload._keys import KeyHandle


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
