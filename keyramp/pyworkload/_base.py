"""The Locust-free side of a store user class: what the loader checks a profile's ``user`` against.

The store user classes (``keyramp.DatastoreUser`` …, built by ``run/_pyuser.py`` from each store's
``StoreSpec.user``) add Locust on top; the profile check accepts a subclass of ``WorkloadClass`` without importing the
runner (it sits above the profile in the layer order, docs/architecture.md).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["WorkloadClass"]


class WorkloadClass:
    """Base of the store users; subclass a store's (``keyramp.DatastoreUser`` …), not this."""

    #: Locust's request type in plain runs, and which profile backends the class serves.
    store: ClassVar[str] = ""
    backends: ClassVar[frozenset[str]] = frozenset()
