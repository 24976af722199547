"""The registered stores' parameter boxes: each store declares its own (``StoreSpec.tablets``).

The ranges and the source of every bound live in the store's spec module
(``keyramp/backends/<store>/_spec.py``, docs/keyspace-model.md lists them); this module
looks them up by backend and storage type, under the names calibration files use.
"""

from __future__ import annotations

from collections.abc import Mapping

from keyramp.backends._params import ParamRange, StoreParams, TabletModel
from keyramp.backends._registry import STORES
from keyramp.core import UsageError

__all__ = ["default_boxes", "model_of", "store_key", "store_params", "tablet_capacity_band"]


def model_of(backend: str) -> TabletModel:
    """The registered store's tablet model; ``UsageError`` if it has none."""
    spec = STORES.get(backend) if backend in STORES else None
    if spec is None or spec.tablets is None:
        raise UsageError(f"no forecast model for backend {backend!r}")
    return spec.tablets


def default_boxes() -> dict[str, StoreParams]:
    """Every registered store's boxes by calibration name (``firestore``, ``bigtable-ssd``, …)."""
    return STORES.tablet_boxes()


def store_key(backend: str, storage: str | None = None) -> str:
    """The calibration name of ``backend``'s box for ``storage`` (its default storage when None)."""
    model = model_of(backend)
    key = model.default if storage is None else storage
    model.box(key)  # a storage type the store does not have is a UsageError
    return f"{backend}-{key}" if key else backend


def store_params(backend: str, storage: str | None = None, *,
                 boxes: Mapping[str, StoreParams] | None = None) -> StoreParams:
    """``backend``'s box for ``storage``: from ``boxes`` (a calibration file) or the store's spec."""
    key = store_key(backend, storage)
    if boxes and key in boxes:
        return boxes[key]
    return model_of(backend).box(storage)


def tablet_capacity_band(backend: str, storage: str | None = None) -> ParamRange:
    """What one key range (tablet) serves, ops/s: the band measured hot windows are held against."""
    box = store_params(backend, storage)
    return box.ranges[box.capacity_param]
