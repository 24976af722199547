"""Error classes for the recorder: a gRPC status name, or ``CLIENT_<ExceptionName>``.

Runs on the hot path whenever an operation fails, so it only looks at attributes and
the exception chain (no string parsing, no imports at call time).
"""

from __future__ import annotations

from typing import Final

import grpc
from google.api_core import exceptions as gexc

__all__ = ["classify", "raised_by_workload"]

# google.rpc.Code numbers -> names (Bigtable row statuses and mutation entries carry ints).
_CODE_NAMES: Final = {code.value[0]: code.name for code in grpc.StatusCode}
_MAX_DEPTH: Final = 5


def _status_name(exc: BaseException) -> str | None:
    if isinstance(exc, gexc.GoogleAPICallError):
        code = exc.grpc_status_code
        if code is not None:
            return str(code.name)
        # HTTP-only errors (no gRPC mapping): name the HTTP class instead.
        return None
    if isinstance(exc, grpc.RpcError):
        code_fn = getattr(exc, "code", None)
        if callable(code_fn):
            code = code_fn()
            if isinstance(code, grpc.StatusCode):
                return str(code.name)
    code = getattr(exc, "code", None)  # google.rpc.status_pb2.Status-like objects
    if isinstance(code, int) and not isinstance(code, bool) and code in _CODE_NAMES:
        return _CODE_NAMES[code]
    return None


def classify(exc: BaseException) -> str:
    """``ABORTED``, ``DEADLINE_EXCEEDED``, … or ``CLIENT_<ExceptionName>`` when no status is found.

    Follows ``__cause__`` (Firestore wraps an aborted commit in ``ValueError`` raised from
    ``Aborted``; Bigtable's ``FailedMutationEntryError`` is raised from the RPC error) and the
    first member of exception groups (Bigtable ``MutationsExceptionGroup``/``RetryExceptionGroup``).
    """
    current: BaseException | None = exc
    for _ in range(_MAX_DEPTH):
        if current is None:
            break
        name = _status_name(current)
        if name is not None:
            return name
        members = getattr(current, "exceptions", None)
        # Explicit chaining only (``__cause__``): ``__context__`` may be unrelated.
        current = members[0] if isinstance(members, (tuple, list)) and members else current.__cause__
    return f"CLIENT_{type(exc).__name__}"


def _from_store(exc: BaseException) -> bool:
    """Whether ``exc`` is the store's answer (a Google API error, a gRPC error), not an
    exception of the code that called it; ``classify`` names it by its status where it has one."""
    return isinstance(exc, (gexc.GoogleAPIError, grpc.RpcError))


def raised_by_workload(error_class: str, exc: BaseException) -> bool:
    """Whether ``exc`` (classified as ``error_class``) is the calling code's own exception — a
    Python workload's bug — rather than the store's answer: no status in it, not a Google API
    or gRPC error."""
    return error_class.startswith("CLIENT_") and not _from_store(exc)
