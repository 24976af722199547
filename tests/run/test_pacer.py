from __future__ import annotations

import pytest

from keyramp.run._pacer import Pacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_slots_are_evenly_spaced_at_the_target_rate() -> None:
    clock = FakeClock()
    pacer = Pacer(rate=lambda t: 200.0, start=100.0, duration_s=1.0, clock=clock)
    slots = []
    while (slot := pacer.next_slot()) is not None:
        slots.append(slot)
        clock.now = slot  # a user that keeps up exactly
    assert len(slots) == 200
    assert slots[1] - slots[0] == pytest.approx(1 / 200)
    assert pacer.dropped == 0


def test_time_scale_compresses_schedule_time() -> None:
    clock = FakeClock()
    # Schedule: 10 ops/s for 60 schedule-seconds, then 20; at 60x that switch is 1 wall second in.
    pacer = Pacer(rate=lambda t: 10.0 if t < 60 else 20.0, start=100.0, duration_s=2.0, time_scale=60, clock=clock)
    slots = []
    while (slot := pacer.next_slot()) is not None:
        slots.append(slot)
        clock.now = slot
    first = [s for s in slots if s < 101.0]
    second = [s for s in slots if s >= 101.0]
    assert len(first) == 10
    assert len(second) == pytest.approx(20, abs=1)
    assert pacer.target_rate(1.5) == 20.0


def test_slots_older_than_drop_after_are_dropped_and_counted() -> None:
    clock = FakeClock()
    pacer = Pacer(rate=lambda t: 1000.0, start=100.0, duration_s=10.0, drop_after_s=0.5, clock=clock)
    clock.now = 102.0  # users stalled for 2 s: 1.5 s worth of slots are beyond the drop window
    slot = pacer.next_slot()
    assert slot is not None
    assert 101.5 <= slot <= 102.0
    assert pacer.dropped == pytest.approx(1500, rel=0.01)


def test_pacer_ends_and_zero_rate_issues_nothing() -> None:
    clock = FakeClock()
    pacer = Pacer(rate=lambda t: 0.0, start=100.0, duration_s=3.0, clock=clock)
    assert pacer.next_slot() is None
    assert pacer.issued == 0
