import time

from labutils.timing import Timer


def test_timer_measures_wall_time():
    with Timer() as t:
        time.sleep(0.2)
        during = t.seconds
    assert 0.0 < during <= t.seconds
    assert 0.18 <= t.seconds < 10.0  # limite folgado: máquina ocupada não é erro
    frozen = t.seconds
    time.sleep(0.05)
    assert t.seconds == frozen  # depois do bloco o valor não muda
