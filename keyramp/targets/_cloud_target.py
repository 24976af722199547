"""The cloud target at run time: credentials, hard caps checked once a second, clean-up.

* :class:`CloudGuard` — checked once a second during the measured phase: a one-line abort
  reason once the achieved rate or the elapsed time passes a cap;
* :func:`check_credentials` — Application Default Credentials, one line when there are none;
* :func:`ensure_fresh` / :func:`cleanup_and_verify` — before each cell the namespace must be
  empty; after it, ``Backend.cleanup`` then ``Backend.remaining``.

:class:`CloudTarget` puts them behind the target seam (``targets._base.RunTarget``); the
offline part (opt-in, plan, caps) is ``targets._cloud``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from keyramp.core import RunFailed, UsageError, format_duration
from keyramp.targets._base import RunTarget, Warmup
from keyramp.targets._cloud import (
    BudgetCosts,
    Caps,
    emulator_variables,
    format_count,
    preflight,
    render_budget,
    run_budget,
)

if TYPE_CHECKING:
    from keyramp.backends import Backend, Target
    from keyramp.profile import Cell, Profile

__all__ = ["CloudGuard", "CloudTarget", "check_credentials", "cleanup_and_verify", "ensure_fresh"]

#: What the Google clients need to reach the real services with ADC.
_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


class CloudGuard:
    """Hard caps at run time. The runner's ticker calls :meth:`check` once a second with the
    seconds since the run's first cell started and the operations completed in the last
    second (all workers); a returned string is the one-line reason to fail the run.

    A single second above ``max_ops_per_s × (1 + tolerance)`` aborts, and so do ``sustain_s``
    consecutive seconds above the cap itself: a pacer catching up after a hiccup may overshoot
    for a second, a closed-model run that is simply too fast may not.
    """

    def __init__(self, *, max_ops_per_s: float, max_duration_s: float, tolerance: float = 0.10,
                 sustain_s: int = 3) -> None:
        self.max_ops_per_s = max_ops_per_s
        self.max_duration_s = max_duration_s
        self.tolerance = tolerance
        self.sustain_s = sustain_s
        self._over = 0
        self.reason: str | None = None

    @classmethod
    def for_caps(cls, caps: Caps) -> CloudGuard:
        return cls(max_ops_per_s=caps.max_ops_per_s, max_duration_s=caps.max_duration_s)

    def check(self, *, elapsed_s: float, ops_last_second: float) -> str | None:
        if self.reason is not None:  # tripped stays tripped
            return self.reason
        cap = self.max_ops_per_s
        if elapsed_s > self.max_duration_s:
            self.reason = (f"cloud cap: the run exceeded max_duration {format_duration(self.max_duration_s)} "
                           f"(elapsed {format_duration(elapsed_s)}); aborted")
        elif ops_last_second > cap * (1 + self.tolerance):
            self.reason = (f"cloud cap: {format_count(ops_last_second)} ops/s in the last second > max_ops_per_s "
                           f"{format_count(cap)} (+{self.tolerance:.0%} tolerance); aborted")
        else:
            self._over = self._over + 1 if ops_last_second > cap else 0
            if self._over >= self.sustain_s:
                self.reason = (f"cloud cap: above max_ops_per_s {format_count(cap)} for {self._over} s "
                               f"(last {format_count(ops_last_second)} ops/s); aborted")
        return self.reason


def check_credentials() -> str:
    """Application Default Credentials, or a one-line ``UsageError``; returns who we run as.

    ``google.auth.default`` reads files and environment variables; only when none are
    configured does it probe the GCE metadata server (skipped with ``NO_GCE_CHECK=true``).
    """
    import google.auth  # deferred: start-up cost (google.auth)
    from google.auth.exceptions import DefaultCredentialsError  # deferred: start-up cost (google.auth)

    try:
        credentials, _ = google.auth.default(scopes=list(_SCOPES))
    except DefaultCredentialsError as exc:
        detail = " ".join(str(exc).split())
        if len(detail) > 160:
            detail = detail[:157] + "..."
        raise UsageError("cloud: no Application Default Credentials (run `gcloud auth application-default "
                         f"login` or set GOOGLE_APPLICATION_CREDENTIALS): {detail}") from None
    who = getattr(credentials, "service_account_email", None) or getattr(credentials, "account", None)
    return f"{type(credentials).__name__}" + (f" {who}" if who else "")


def ensure_fresh(backend_class: type[Backend], target: Target) -> None:
    """Refuse to write into (and later delete) a namespace that already holds data."""
    found = backend_class.remaining(target)
    if found:
        raise RunFailed(f"{target.namespace} already holds {found} entities/rows: refusing to write into "
                        f"(and later delete) data this run did not create")


def cleanup_and_verify(backend_class: type[Backend], target: Target, *, attempts: int = 3,
                       pause_s: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Delete the cell's data, then verify nothing is left (retrying: deletes may lag queries).

    Returns ``{"namespace", "deleted", "remaining": 0}`` for the manifest; ``RunFailed``
    (one line) if data remains after ``attempts`` rounds.
    """
    deleted = 0
    left = 0
    for attempt in range(1, attempts + 1):
        deleted += backend_class.cleanup(target)
        left = backend_class.remaining(target)
        if left == 0:
            return {"namespace": target.namespace, "deleted": deleted, "remaining": 0}
        if attempt < attempts and pause_s > 0:
            sleep(pause_s)
    raise RunFailed(f"clean-up of {target.namespace} not verified: {left} entities/rows remain after {attempts} "
                    f"attempts (delete them by hand: see docs/cloud.md)")


class CloudTarget(RunTarget):
    """``target = "cloud"``: every refusal at construction (before a run directory exists),
    the plan and credentials at :meth:`open`, the guard each second, clean-up after each cell."""

    kind: ClassVar[str] = "cloud"

    def __init__(self, profile: Profile, *, allow_cloud: str | None, environ: Mapping[str, str] | None = None,
                 max_ops_per_s: float | None = None, max_duration_s: float | None = None,
                 budget_costs: BudgetCosts | None = None) -> None:
        super().__init__(profile)
        plan = preflight(profile, allow_cloud=allow_cloud, environ=environ, max_ops_per_s=max_ops_per_s,
                         max_duration_s=max_duration_s)
        if plan is None:
            raise UsageError(f"{profile.name}: not a cloud profile (target = {profile.target!r})")
        self.plan = plan
        #: The plan's estimated cost, priced now: a bad price location is refused before the run.
        self.cost_text = budget_costs(profile, plan) if budget_costs is not None else None
        self.guard = CloudGuard.for_caps(plan.caps)
        self.credentials: str | None = None
        self.started: float | None = None
        #: Between clean-up rounds: a store may list deleted entities for a moment.
        self.cleanup_pause_s = 2.0

    @classmethod
    def check_host(cls, environ: Mapping[str, str]) -> None:
        """A worker got a cloud cell: the master's opt-in checks ran on another host."""
        found = emulator_variables(environ)
        if found:
            raise UsageError(f"target = 'cloud' but {', '.join(found)} is set on this host: "
                             "its clients would silently go to an emulator")

    def open(self, *, say: Callable[[str], None], note: Callable[[str], None],
             namespaces: Mapping[str, str]) -> dict[str, Any]:
        """Print the plan (with the run's real namespaces) and load credentials; then the clock starts."""
        say(render_budget(run_budget(self.profile, self.plan.caps, namespaces=namespaces)))
        if self.cost_text:
            say(self.cost_text)
        self.credentials = check_credentials()
        say(f"cloud: credentials {self.credentials}")
        self.started = time.perf_counter()
        return {"cloud": {"project": self.profile.project, "credentials": self.credentials,
                          "max_ops_per_s": self.plan.caps.max_ops_per_s,
                          "max_duration_s": self.plan.caps.max_duration_s}}

    def address(self, cell: Cell, base: Target) -> Target:
        """The real service: no endpoint, ``[cloud]`` instance and database."""
        self.check_host(os.environ)
        cloud = self.profile.cloud
        return replace(base, endpoint=None, instance=cloud.instance or base.instance, database=cloud.database)

    def before_cell(self, cell: Cell, backend_class: type[Backend], address: Target,
                    phase: Callable[[str], None]) -> Warmup:
        ensure_fresh(backend_class, address)  # never write into (and later delete) data we did not create
        return Warmup()

    def check(self, cell: Cell | None = None, *, ops_last_second: int, now: float | None = None) -> str | None:
        """The guard, with the elapsed time measured from :meth:`open`."""
        if self.started is None:
            return None
        return self.guard.check(elapsed_s=(time.perf_counter() if now is None else now) - self.started,
                                ops_last_second=ops_last_second)

    def after_cell(self, backend_class: type[Backend], address: Target, *,
                   failed: bool = False) -> dict[str, Any] | None:
        """Clean up after a cell (the manifest entry). After a failed cell (keep its error) a
        clean-up failure is recorded instead of raised."""
        if not self.plan.cleanup:
            return None
        try:
            return cleanup_and_verify(backend_class, address, pause_s=self.cleanup_pause_s)
        except Exception as exc:
            if not failed:
                raise
            return {"namespace": address.namespace, "error": " ".join(f"{type(exc).__name__}: {exc}".split())}
