"""The application's own parts of a profile: a Python workload (``[workload] user``) and a
document shape (``[workload.document]``), validated with the rest of the profile.

Everything here runs when the profile is read, before any emulator starts: a workload
that does not import, a shape a store would reject, a query on a property the shape does
not index — one line naming the file and field, exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keyramp.backends import spec_for
from keyramp.core import UsageError
from keyramp.keys import DocumentShape, parse_shape, shape_problem
from keyramp.pyworkload import load_user

__all__ = ["check_query_field", "check_shape", "resolve_document", "resolve_user"]


def _fail(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message}")


def resolve_document(workload: Mapping[str, Any], src: str) -> DocumentShape:
    """``[workload.document]`` parsed (the fields it replaces are declared ``not_with`` it)."""
    try:
        return parse_shape(workload["document"])
    except UsageError as exc:
        raise _fail(src, str(exc)) from None


def resolve_user(workload: dict[str, Any], src: str, base_dir: Path) -> None:
    """``workload.user``: import the class now (one line and exit 2 if anything is wrong); its
    ``@keyramp.op`` weights become ``ops``, and ``user`` the absolute ``path:Class``."""
    try:
        loaded = load_user(workload["user"], base_dir=base_dir)
    except UsageError as exc:
        raise _fail(src, f"workload.user: {exc}") from None
    workload["user"] = loaded.spec
    workload["ops"] = loaded.shares()
    workload["insert_ops"] = loaded.insert_ops()


def check_query_field(query: Mapping[str, Any], shape: DocumentShape, src: str) -> None:
    """With a document shape, a query filters and orders by properties the shape has, indexed."""
    if not shape:
        return
    props = {p.name: p for p in shape.properties}
    for name in ("field", "order_by"):
        field_name = str(query[name]).lstrip("-")
        if not field_name or field_name.split(".")[0] in ("__key__", "__name__"):
            continue
        prop = props.get(field_name.split(".")[0])
        if prop is None:
            raise _fail(src, f"workload.query.{name}: '{field_name}' is not a workload.document property "
                             f"(one of: {', '.join(props)})")
        if not prop.is_indexed:
            raise _fail(src, f"workload.query.{name}: '{field_name}' has indexed = false: the query would "
                             "find nothing")


def check_shape(backends: list[str], document: Mapping[str, Any], src: str, *, driver: str) -> None:
    """Each store's limits on the document shape (its spec's ``RecordLimits``, and the value
    types ``driver`` cannot write); ``indexed`` on a profile whose stores have no secondary
    indexes (Bigtable) does not apply."""
    shape = parse_shape(document)
    explicit = shape.explicit_indexed()
    specs = [spec_for(b) for b in backends]
    if explicit and not any(spec.has("secondary_indexes") for spec in specs):
        raise _fail(src, f"workload.document.{explicit[0]}.indexed: does not apply to {', '.join(backends)} "
                         f"({specs[0].why_not('secondary_indexes')})")
    used = shape.types()
    for backend, spec in zip(backends, specs, strict=True):
        lacking = sorted(set(used) & spec.driver_lacks.get(driver, frozenset()))
        if lacking:
            raise _fail(src, f"workload.document.{used[lacking[0]]}: the {driver} driver of {backend} cannot "
                             f"write {lacking[0]} values yet (use driver = \"client\")")
        problem = shape_problem(shape, spec.records, backend)
        if problem:
            raise _fail(src, f"workload.document: {backend}: {problem}")
