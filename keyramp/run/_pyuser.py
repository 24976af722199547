"""``keyramp.DatastoreUser`` / ``FirestoreUser`` / ``BigtableUser``: the Locust way to write a workload.

Each store's user class is built here from what its package declares (``StoreSpec.user``: the
class name, the docstring, the attributes it takes from the driver), so a new store brings its
own (``user_class(name)``; ``keyramp.<name>`` resolves through it).

A subclass's ``@keyramp.op`` methods each perform one operation with the official client.
Inside an op: ``self.client`` (the official client for the cell's target; Bigtable also
``self.table``), ``self.namespace`` (the cell's kind / collection / table), ``self.keys.new()``
and ``self.keys.existing()`` (keys of the cell's strategy), ``self.document()`` (a record of
the profile's ``[workload.document]`` shape) and ``self.no_retry`` (keyword arguments that
switch the client's own retries off and set the cell's deadline, so every attempt is seen).

Two ways to run the same class:

* ``keyramp run`` (profile ``[workload] user = "file.py:Class"``): the runner builds a user
  class from this one and ``KeyrampUser`` (pacer, recorder, phases) and calls the undecorated
  methods; ``on_start`` here chains to ``KeyrampUser.on_start`` through ``super()``.
* plain ``locust -f file.py``: Locust runs the ``@op`` wrappers as weighted tasks and its own
  stats measure them; on test start the store is prepared and preloaded from
  ``$KEYRAMP_PROFILE`` (or defaults), on the emulator named by the standard variable.
"""

from __future__ import annotations

import functools
import os
import sys
import tomllib
import types
from pathlib import Path
from typing import Any, ClassVar, cast

from locust import User, constant, events

from keyramp.backends import STORES, WorkloadUserSpec, spec_for
from keyramp.core import UsageError
from keyramp.profile import parse_profile
from keyramp.pyworkload import KeyHandle, WorkloadClass
from keyramp.run._plain import plain_cell
from keyramp.workload import UserOps

__all__ = ["WorkloadUser", "user_class", "user_names"]


class WorkloadUser(User, WorkloadClass):
    """Base of the store users (``keyramp.DatastoreUser`` …); subclass one of those, not this."""

    abstract = True
    wait_time = constant(0)
    #: The plain-Locust cell (set on test start); ``keyramp run`` gives its users a ``context``.
    _plain: ClassVar[Any] = None

    #: The driver's attributes a user takes on start (``WorkloadUserSpec.driver_attributes``).
    driver_attributes: ClassVar[tuple[str, ...]] = ()
    backend: Any  # the driver's Backend (Bigtable's has ``table``)
    client: Any
    namespace: str
    keys: KeyHandle
    no_retry: dict[str, Any]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not cls.__dict__.get("abstract") and "context" not in cls.__dict__:
            # Plain `locust -f`: prepare and preload the store when the test starts.
            events.init.add_listener(functools.partial(_check_plain, cls))
            events.test_start.add_listener(functools.partial(_prepare_plain, cls))

    def on_start(self) -> None:
        super().on_start()  # keyramp run: KeyrampUser.on_start (client, UserOps); plain: Locust's no-op
        if getattr(self, "ops", None) is None:
            ctx = type(self)._plain
            if ctx is None:
                raise UsageError(f"{type(self).__name__}: the store was not prepared (test_start did not run)")
            # The official client whatever the profile's driver (which wrote the preload): ops use self.client.
            self.backend = spec_for(ctx.target.backend).driver("client")(ctx.target)
            self.ops = UserOps(ctx.workload, self.backend, user_index=ctx.next_user_index())
        backend = self.backend
        self.client = backend.client
        self.namespace = backend.target.namespace
        self.no_retry = dict(backend.call_options)
        self.keys = KeyHandle(self.ops, convert=spec_for(backend.target.backend).workload_key,
                              namespace=self.namespace)
        for name in type(self).driver_attributes:
            setattr(self, name, getattr(backend, name))  # the store's own handles (Bigtable: table)

    def on_stop(self) -> None:
        super().on_stop()
        if "context" not in type(self).__dict__ and getattr(self, "backend", None) is not None:
            self.backend.close()  # plain Locust (KeyrampUser.on_stop closes it under keyramp run)

    def document(self, index: int | None = None) -> dict[str, Any]:
        """A record of the cell's shape (``[workload.document]``, else ``value_size`` bytes) for
        ``index`` (default: the last ``keys.new()``, so its timestamps agree with the key)."""
        i = self.keys.index if index is None else index
        return self.ops.wl.records.record(0 if i is None else i)


@functools.cache
def _built(user: WorkloadUserSpec, backends: frozenset[str]) -> type[WorkloadUser]:
    """One class per declaration and stores served: ``keyramp.DatastoreUser`` is the same class on
    every access, so a workload module's subclass is one of it."""
    namespace = {"__doc__": user.doc, "__module__": "keyramp", "__qualname__": user.name, "abstract": True,
                 "store": user.store, "backends": backends, "driver_attributes": user.driver_attributes}
    built = types.new_class(user.name, (WorkloadUser,), exec_body=lambda ns: ns.update(namespace))  # UserMeta
    return cast("type[WorkloadUser]", built)


def user_names() -> tuple[str, ...]:
    """The user class names the registered stores declare (``DatastoreUser`` …)."""
    return tuple(sorted(STORES.users()))


def user_class(name: str) -> type[WorkloadUser]:
    """The user class ``name`` a registered store declares (``StoreSpec.user``); ``AttributeError``
    for a name no store declares (``keyramp.<name>`` resolves through this)."""
    found = STORES.users().get(name)
    if found is None:
        raise AttributeError(f"no store declares a user class {name!r} (declared: {', '.join(user_names())})")
    return _built(*found)


# -- plain Locust --------------------------------------------------------------------------------

_PLAIN_DEFAULTS: dict[str, Any] = {"workload": {"record_count": 1000}, "keys": {"strategy": "random"}}


def _plain_profile(cls: type[WorkloadUser]) -> tuple[str, Any]:
    """(backend, profile) for a plain run: ``$KEYRAMP_PROFILE`` without its ``user`` and
    ``thresholds`` (Locust measures; the class is the one Locust loaded), else defaults."""
    path = os.environ.get("KEYRAMP_PROFILE")
    raw: dict[str, Any] = {"name": cls.__name__, **_PLAIN_DEFAULTS}
    source = "<plain locust>"
    if path:
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{path}: cannot read profile: {exc}") from None
        source = path
        raw.pop("thresholds", None)
        workload = dict(raw.get("workload") or {})
        workload.pop("user", None)
        raw["workload"] = workload
    wanted = raw.get("backend") or sorted(cls.backends)[0]
    choices = wanted if isinstance(wanted, list) else [wanted]
    served = [b for b in choices if b in cls.backends]
    if not served:
        raise UsageError(f"{source}: backend {wanted!r} does not serve {cls.__name__} (a {cls.store} user)")
    if len(served) > 1:  # several cells: plain Locust runs one, and must not silently take the first
        raise UsageError(f"{source}: backend lists {len(served)} stores for {cls.__name__} ({', '.join(served)}) and "
                         f"plain `locust -f` runs one cell: keep one (backend = {served[0]!r}), or run them all "
                         f"with `keyramp run {source}`")
    backend = served[0]
    raw["backend"] = backend
    profile = parse_profile(raw, source=source, path=Path(path) if path else None)
    plain_cell(profile, backend)  # one key strategy, or a usage error saying how to pick one
    return backend, profile


def _runs_plain(cls: type[WorkloadUser], environment: Any) -> bool:
    return any(issubclass(u, cls) for u in getattr(environment, "user_classes", ()) or ())


def _check_plain(cls: type[WorkloadUser], environment: Any, **_: Any) -> None:
    """Plain ``locust -f`` (its ``init`` event, which ``keyramp run`` never fires): a profile that
    does not name one cell for ``cls`` stops Locust now, in one line, exit 2, before any load."""
    if not _runs_plain(cls, environment):
        return
    try:
        _plain_profile(cls)
    except UsageError as exc:
        sys.stderr.write(f"keyramp: $KEYRAMP_PROFILE: {exc}\n")
        raise SystemExit(2) from None


def _prepare_plain(cls: type[WorkloadUser], environment: Any, **_: Any) -> None:
    if not _runs_plain(cls, environment):
        return  # another user class of the locustfile is running, not this one
    from keyramp.run._locustfile import plain_context, prepare  # deferred: start-up cost (plain `locust -f` only)

    backend, profile = _plain_profile(cls)
    ctx = plain_context(backend, profile)
    prepare(ctx)
    cls._plain = ctx
