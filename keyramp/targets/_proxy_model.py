"""The model a store proxy offers requests to: the per-operation store model of the forecast
(``keyramp.storemodel``) at the store's parameter box, capacities ÷ K and delays ÷ T."""

from __future__ import annotations

from typing import Final

from keyramp.backends import ModelTypes, StoreSpec
from keyramp.core import UsageError
from keyramp.storemodel import Access, Decision, StoreModel, StoreOp
from keyramp.targets._proxy import StoreModelLike
from keyramp.targets._proxy_stats import ProxyConfig

__all__ = ["MODEL_TYPES", "AdmitAll", "make_model", "model_params"]

#: What the stores' decoders build: the model's own operation types.
MODEL_TYPES: Final = ModelTypes(access=Access, op=StoreOp)
_ADMITTED: Final = Decision(True, 0.0, None)


class AdmitAll:
    """Admits every operation at once (``mode = "admit"``): the proxy's cost without the model's."""

    def offer(self, op: StoreOp, now: float) -> Decision:
        return _ADMITTED


def model_params(spec: StoreSpec, config: ProxyConfig) -> dict[str, float]:
    """The parameter point the proxy's model runs (published units, before K and T)."""
    if spec.tablets is None:
        raise UsageError(f"{spec.name}: no store model (its spec has no tablet parameters)")
    box = spec.tablets.box(config.storage)
    return {name: r.at(config.point) for name, r in box.ranges.items()}  # type: ignore[arg-type]


def make_model(spec: StoreSpec, config: ProxyConfig) -> StoreModelLike:
    """The model ``config`` asks for, built once per configuration (each cell gets a fresh one)."""
    if config.mode == "admit":
        return AdmitAll()
    return StoreModel.for_store(spec, model_params(spec, config), storage=config.storage, nodes=config.nodes,
                                scale=config.scale, time_scale=config.time_scale, seed=config.seed)
