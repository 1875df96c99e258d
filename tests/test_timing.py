import time

import pytest

from labutils.timing import Timer, timed


def test_timer_measures_wall_time():
    with Timer() as t:
        time.sleep(0.2)
        during = t.seconds
    assert 0.0 < during <= t.seconds
    assert 0.18 <= t.seconds < 1.0
    frozen = t.seconds
    time.sleep(0.05)
    assert t.seconds == frozen  # depois do bloco o valor não muda


def test_timer_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="ainda não foi iniciado"):
        _ = Timer().seconds


def test_timed_returns_result_and_seconds():
    result, seconds = timed(lambda a, b: (time.sleep(0.1), a + b)[1], 2, b=3)
    assert result == 5
    assert 0.09 <= seconds < 1.0
