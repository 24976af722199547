"""The raw-gRPC plumbing that needs no store: routing headers, field paths, statuses, tokens."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import grpc
from google.auth.credentials import Credentials

from keyramp.backends._errors import classify
from keyramp.backends._rpc import CloudAuth, StatusError, field_path, routing


def test_routing_header_encodes_like_the_official_clients() -> None:
    # Values seen on the wire from google-cloud-firestore / -bigtable (tests/backends/test_grpc.py
    # compares whole calls; these pin the encoding rules).
    assert routing(database="projects/p/databases/(default)") == (
        "x-goog-request-params", "database=projects/p/databases/%28default%29")
    assert routing(table_name="projects/p/instances/i/tables/t", app_profile_id="") == (
        "x-goog-request-params", "table_name=projects/p/instances/i/tables/t&app_profile_id=")


def test_field_paths_quote_what_is_not_an_identifier() -> None:
    assert field_path("counter") == "counter"
    assert field_path("_f0") == "_f0"
    assert field_path("a.b") == "`a.b`"
    assert field_path("it`s") == "`it\\`s`"
    assert field_path("0lead") == "`0lead`"


def test_status_inside_a_response_classifies_as_its_code() -> None:
    assert classify(StatusError(13, "unknown family")) == "INTERNAL"
    assert classify(StatusError(10, "contention")) == "ABORTED"
    err = StatusError(999, "from the future")
    assert err.code() is grpc.StatusCode.UNKNOWN and classify(err) == "UNKNOWN"


class _Tokens(Credentials):  # type: ignore[misc]
    """google-auth's credentials contract: ``refresh`` sets ``token`` and ``expiry`` (naive UTC)."""

    def __init__(self, valid_s: float) -> None:
        super().__init__()
        self.valid_s = valid_s
        self.refreshes = 0

    def refresh(self, request: Any) -> None:
        self.refreshes += 1
        self.token = f"t{self.refreshes}"
        self.expiry = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(seconds=self.valid_s)


def test_cloud_token_is_fetched_once_and_renewed_before_it_expires() -> None:
    creds = _Tokens(valid_s=3600)
    auth = CloudAuth(["scope"], credentials=creds)
    assert auth.metadata() == (("authorization", "Bearer t1"),)
    assert auth.metadata() == (("authorization", "Bearer t1"),) and creds.refreshes == 1
    # Renewed 5 minutes before expiry.
    assert 3600 - 300 - 5 < auth._refresh_at - time.monotonic() <= 3600 - 300
    auth._refresh_at = time.monotonic() - 1  # that moment has come
    assert auth.metadata() == (("authorization", "Bearer t2"),)


def test_short_lived_token_is_renewed_at_half_life() -> None:
    auth = CloudAuth(["scope"], credentials=_Tokens(valid_s=60))
    auth.metadata()
    assert 25 < auth._refresh_at - time.monotonic() <= 30
