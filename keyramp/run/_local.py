"""Users in this process: a Locust ``LocalRunner`` for one cell (the ``CellLoad`` of a
single-process run), around the per-process phase driver every load process uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gevent
from locust.env import Environment

from keyramp.run._driver import ProcessLoad
from keyramp.run._pacer import Pacing
from keyramp.run._phases import DRAIN_S

if TYPE_CHECKING:
    from keyramp.backends import Backend, Target
    from keyramp.run._recorder import Recorder
    from keyramp.workload import CellWorkload

__all__ = ["LocalLoad", "stop_runner"]


def stop_runner(runner: Any, *, grace_s: float = DRAIN_S + 3.0) -> None:
    """``runner.quit()``, bounded: a user stuck in a client call that swallows the kill
    (e.g. a Firestore transaction rolling back under a held lock) must not hold the run."""
    stopper = gevent.spawn(runner.quit)
    stopper.join(timeout=grace_s)
    if not stopper.dead:
        runner.user_greenlets.kill(block=False)
        stopper.kill(block=False)


class LocalLoad(ProcessLoad):
    """One cell's users in this process: a ``ProcessLoad`` whose users a Locust
    ``LocalRunner`` on ``environment`` spawns and stops."""

    def __init__(self, environment: Environment, *, workload: CellWorkload, backend_class: type[Backend],
                 target: Target, recorder: Recorder, pacing: Pacing) -> None:
        super().__init__(workload=workload, backend_class=backend_class, target=target, recorder=recorder,
                         pacing=pacing, stop_users=lambda: stop_runner(self.runner))
        self.environment = environment
        environment.user_classes = [self.user_class]
        self.runner = environment.create_local_runner()

    def connect(self) -> int:
        return 1

    def spawn(self, users: int, *, warmup_interval: float | None) -> None:
        self.warm_up(warmup_interval)
        # Locust warns above 100 users/s; 50 users connect within a second anyway.
        self.runner.start(users, spawn_rate=min(max(users, 1) * 10, 100))

    def problem(self) -> str | None:
        errors = self.user_errors()
        return f"could not create a client: {errors[0]}" if errors else None

    def worker_meta(self) -> None:
        return None
