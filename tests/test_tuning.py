"""Lição 03 sem Ray: a floresta que cresce, o ``GridSearchCV`` local e as conferências; as buscas
no Ray, a própria lição as confere (nbval)."""

from __future__ import annotations

import numpy as np
import pytest

from labutils import tuning
from labutils.lesson02 import fit_and_score
from tools.lesson_code import load

GRID = [(20, 6), (15, 4), (10, 2)]  # mais caras primeiro


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6))
    y = X[:, 0] * 2 + np.sin(X[:, 1] * 3) + rng.normal(scale=0.1, size=400)
    return X[:300], y[:300], X[300:], y[300:]


@pytest.fixture(scope="module")
def local(data):
    return [fit_and_score(n, d, *data) for n, d in GRID]


def test_grow_forest_ends_at_the_whole_forest(data):
    # a floresta que cresce para o ASHA: escrita numa célula # @save da lição 03
    grow_forest = load("03_ray_tune_joblib").grow_forest
    steps = list(grow_forest(5, 12, 5, data))
    assert [s[0] for s in steps] == [5, 10, 12]
    assert steps[-1][1] == pytest.approx(fit_and_score(12, 5, *data)[2], rel=0, abs=1e-12)


def test_grid_search_cv_local_matches_the_loop(data, local):
    rows = tuning.cv_rows(load("03_ray_tune_joblib").busca_gridsearchcv(GRID, data, n_jobs=1))
    assert [r[:2] for r in rows] == GRID
    assert tuning.search_difference(rows, local) is None


def test_speedup_table():
    df = tuning.speedup_table(10.0, {"a": 5.0, "b": 20.0}, [4.0, 3.0, 3.0], 2)
    assert list(df["speedup"]) == [1.0, 2.0, 0.5]
    assert np.isnan(df["limite"].iloc[0])  # o laço é a referência, sem limite
    assert df["limite"].iloc[1] == pytest.approx(10 / 5)
    assert df["% do limite"].iloc[1] == pytest.approx(100.0)


def test_first_trial_delay_is_measured_to_the_earliest_trial():
    import pandas as pd

    class Grid:  # o que first_trial_delay usa de um ResultGrid
        def get_dataframe(self):
            return pd.DataFrame({"inicio": [105.0, 102.5, 110.0]})

    assert tuning.first_trial_delay(Grid(), 100.0) == pytest.approx(2.5)


def test_search_difference_names_what_differs(local):
    """A conferência da lição 03 fica vermelha se um MSE, a melhor ou as configurações mudam."""
    assert tuning.search_difference(local, local) is None
    assert tuning.search_difference([(*r[:2], r[2] + 1e-10, r[3]) for r in local], local) is None
    nudged = [(n, d, mse + 1e-7, s) for n, d, mse, s in local]
    assert "difere" in tuning.search_difference(nudged, local)
    best = min(local, key=lambda r: r[2])
    worse = [(n, d, mse + (1.0 if (n, d) == best[:2] else 0.0), s) for n, d, mse, s in local]
    assert "melhor configuração" in tuning.search_difference(worse, local)
    assert "configurações diferentes" in tuning.search_difference(local[1:], local)


def test_round_robin_difference_accepts_only_the_turn():
    # 5 jobs em 2 processos: 1, 3 e 5 no mesmo (a vez), como o Pool do Ray os entrega
    assert tuning.round_robin_difference([7, 9, 7, 9, 7], 2) is None
    assert tuning.round_robin_difference([7, 9, 4, 7, 9, 4, 7], 3) is None
    assert "job 2" in tuning.round_robin_difference([7, 9, 9, 7, 7], 2)  # o livre pegou o 3º
    assert "primeiros" in tuning.round_robin_difference([7, 7, 9], 2)


def test_rung_decisions_replays_asha_in_arrival_order():
    # degrau 5: o 1º nunca para; o 2º (pior que o 1º) para; o 3º fica abaixo da mediana dos 2
    rungs = {5: [("a", 3.0), ("b", 4.0), ("c", 1.0), ("d", 3.6)], 10: [("a", 2.0), ("c", 0.5)]}
    df = tuning.rung_decisions(rungs, reduction_factor=2)
    at5 = df[df["degrau"] == 5]
    assert list(at5["trial_id"]) == ["a", "b", "c", "d"] and list(at5["chegada"]) == [1, 2, 3, 4]
    assert list(at5["parou"]) == [False, True, False, True]
    assert np.isnan(at5["corte"].iloc[0]) and at5["corte"].iloc[3] == pytest.approx(3.0)
    assert list(df[df["degrau"] == 10]["parou"]) == [False, False]
    # a mesma chegada na ordem inversa: ninguém para (cada um melhor que os anteriores)
    rev = tuning.rung_decisions({5: [("x", 4.0), ("y", 3.0), ("z", 1.0)]}, reduction_factor=2)
    assert not rev["parou"].any()
    # empate com o corte não para (o ASHA para só abaixo dele); reduction_factor=3: o melhor terço
    tie = tuning.rung_decisions({5: [("a", 2.0), ("b", 2.0)]}, reduction_factor=2)
    assert list(tie["parou"]) == [False, False]
    third = tuning.rung_decisions({5: [("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]}, 3)
    late = tuning.rung_decisions(
        {5: [*third[["trial_id", "mse"]].itertuples(index=False), ("e", 2.5)]}, 3
    )
    assert late["parou"].iloc[-1] and late["corte"].iloc[-1] == pytest.approx(2.0)


def test_asha_rungs_reads_the_scheduler_in_arrival_order():
    from ray.tune.schedulers import ASHAScheduler

    asha = ASHAScheduler(
        metric="mse", mode="min", time_attr="arvores", max_t=20, grace_period=5, reduction_factor=2
    )

    class Trial:  # o que o _Bracket usa de um trial
        def __init__(self, trial_id):
            self.trial_id = trial_id

    bracket = asha._brackets[0]
    decisions = {}
    for tid, mse in [("b", 2.0), ("a", 1.0), ("c", 3.0)]:
        decisions[tid] = bracket.on_result(Trial(tid), 5, -mse)
    bracket.on_result(Trial("a"), 20, -0.5)  # o degrau de max_t fica de fora
    rungs = tuning.asha_rungs(asha)
    assert rungs == {5: [("b", 2.0), ("a", 1.0), ("c", 3.0)], 10: []}
    replay = tuning.rung_decisions(rungs, 2).set_index("trial_id")["parou"]
    assert {t: d == "STOP" for t, d in decisions.items()} == replay.to_dict()


def _asha_run(concurrency: int):
    """Uma busca simulada contra o ``_Bracket`` do próprio Ray: 8 trials (custo por árvore e mse
    por degrau), ``concurrency`` de cada vez, na ordem da grade; um trial parado libera a vaga.
    Devolve o scheduler e ``{(trial, degrau): parou}`` como o Ray decidiu."""
    import heapq

    from ray.tune.schedulers import ASHAScheduler

    asha = ASHAScheduler(
        metric="mse", mode="min", time_attr="arvores", max_t=45, grace_period=5, reduction_factor=3
    )
    bracket = asha._brackets[0]
    cost = [1.0, 0.3, 0.7, 0.2, 0.9, 0.5, 0.4, 0.8]  # segundos por árvore
    mse = [
        [3.0, 2.0],
        [2.5, 2.4],
        [1.0, 0.8],
        [4.0, 3.5],
        [1.5, 1.2],
        [2.5, 1.9],
        [3.2, 3.0],
        [1.2, 0.9],
    ]  # mse nos degraus 5 e 15 (o de 45 termina o trial)

    class Trial:
        def __init__(self, trial_id):
            self.trial_id = trial_id

    events, waiting, decided = [], list(range(len(cost))), {}

    def start(now):
        i = waiting.pop(0)
        for k, rung in enumerate((5, 15, 45)):
            heapq.heappush(events, (now + rung * cost[i], i, k, rung))

    for _ in range(min(concurrency, len(cost))):
        start(0.0)
    stopped = set()
    while events:
        now, i, k, rung = heapq.heappop(events)
        if i in stopped:
            continue
        value = mse[i][k] if k < 2 else 0.0
        stop = bracket.on_result(Trial(f"t{i}"), rung, -value) == "STOP"
        if rung < 45:
            decided[(f"t{i}", rung)] = stop
        if stop or rung == 45:
            stopped.add(i)
            if waiting:
                start(now)
    return asha, decided


@pytest.mark.parametrize("concurrency", range(1, 17))
def test_rung_decisions_match_ray_asha_at_every_concurrency(concurrency):
    """As paradas do ASHA dependem da ordem de chegada, logo da concorrência (1–16 CPUs): a
    tabela da lição 03 (``rung_decisions``) refaz a decisão do Ray em cada ordem."""
    asha, decided = _asha_run(concurrency)
    replay = tuning.rung_decisions(tuning.asha_rungs(asha), 3)
    got = {(r.trial_id, r.degrau): r.parou for r in replay.itertuples()}
    assert got == decided
    assert not replay[replay["chegada"] == 1]["parou"].any(), "o 1º a chegar nunca para"


def test_asha_stops_depend_on_concurrency():
    stops = {c: sum(_asha_run(c)[1].values()) for c in (1, 2, 8)}
    assert len(set(stops.values())) > 1, stops
