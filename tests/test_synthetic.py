"""The synthetic-run helper's fast mean is the histogram library's own, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from _synthetic import _mean, _new_hist, _record


@pytest.mark.parametrize("seed", range(8))
def test_the_fast_mean_is_the_librarys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    hist = _new_hist()
    _record(hist, rng.lognormal(2 + seed, 1.5, 5_000))  # from a few µs (the first bucket) to the range's top
    assert _mean(hist) == hist.get_mean_value()
