"""Os auxiliares da busca de hiperparâmetros (lição 02), sem Ray."""

from __future__ import annotations

import csv
import sys
import time
import types

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import mean_squared_error

from labutils import config
from labutils.lesson02 import (
    estimated_cost,
    fit_and_score,
    makespan_lower_bound,
    most_expensive_first,
    speedup_bound,
)
from labutils.search import gather_with_progress, save_results
from tools.lesson_code import load

# a floresta em blocos de árvores: escrita nas células # @save da lição 02
LESSON_02 = load("02_busca_hiperparametros")
combine_chunks = LESSON_02.combine_chunks
fit_chunk_and_predict = LESSON_02.fit_chunk_and_predict
fit_forest_chunk = LESSON_02.fit_forest_chunk
merge_forests = LESSON_02.merge_forests
plan_chunks = LESSON_02.plan_chunks
split_trees = LESSON_02.split_trees
# a fila de tarefas (seção 8): nenhuma lição seguinte a usa, e o labutils não a copia
list_schedule = LESSON_02.list_schedule
list_schedule_makespan = LESSON_02.list_schedule_makespan

SEED_GRID = [(100, 10), (200, 15), (300, 20), (400, 25), (500, 30)]
# tempos por tarefa medidos na grade do roteiro com 1/5 das árvores (shared/FACTS.md)
FACT_TIMES = [1.5, 4.1, 7.0, 9.4, 11.8]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = X[:, 0] * 2 + np.sin(X[:, 1] * 3) + rng.normal(scale=0.1, size=300)
    return X[:240], y[:240], X[240:], y[240:]


def test_fit_and_score_matches_sklearn(data):
    X_train, y_train, X_test, y_test = data
    n, d, mse, seconds = fit_and_score(7, 3, X_train, y_train, X_test, y_test)
    ref = RandomForestRegressor(n_estimators=7, max_depth=3, random_state=42).fit(X_train, y_train)
    assert (n, d) == (7, 3)
    assert isinstance(mse, float) and mse == pytest.approx(
        mean_squared_error(y_test, ref.predict(X_test)), rel=1e-12
    )
    assert 0 < seconds < 30
    # n_jobs só muda o paralelismo, não o modelo
    assert fit_and_score(7, 3, *data, n_jobs=2)[2] == pytest.approx(mse, rel=1e-9)
    # outra semente, outro modelo
    assert fit_and_score(7, 3, *data, random_state=1)[2] != pytest.approx(mse, rel=1e-9)
    # max_features (a grade da escolha do modelo) chega à floresta
    half = RandomForestRegressor(n_estimators=7, max_depth=3, max_features=0.4, random_state=42)
    want = mean_squared_error(y_test, half.fit(X_train, y_train).predict(X_test))
    assert fit_and_score(7, 3, *data, max_features=0.4)[2] == pytest.approx(want, rel=1e-12)


def test_speedup_bound_examples():
    assert speedup_bound([1, 1], 2) == pytest.approx(2.0)
    assert speedup_bound([3, 1], 2) == pytest.approx(4 / 3)  # a tarefa longa manda
    assert speedup_bound([1] * 10, 4) == pytest.approx(4.0)  # o trabalho/núcleos manda
    assert speedup_bound([5, 2], 1) == pytest.approx(1.0)
    total = sum(FACT_TIMES)
    assert speedup_bound(FACT_TIMES, 2) == pytest.approx(2.0)
    assert speedup_bound(FACT_TIMES, 16) == pytest.approx(total / 11.8)
    assert makespan_lower_bound(FACT_TIMES, 2) == pytest.approx(total / 2)


@pytest.mark.parametrize(("times", "cores"), [([], 2), ([1.0], 0), ([1.0, -1.0], 2)])
def test_speedup_bound_rejects_bad_input(times, cores):
    with pytest.raises(ValueError):
        speedup_bound(times, cores)


def test_list_schedule_never_beats_the_bound():
    rng = np.random.default_rng(1)
    for _ in range(200):
        times = rng.exponential(size=rng.integers(1, 12))
        cores = int(rng.integers(1, 6))
        makespan = list_schedule_makespan(times, cores)
        assert makespan >= makespan_lower_bound(times, cores) - 1e-12
        assert makespan <= times.sum() + 1e-12


def test_list_schedule_gives_each_task_its_core_and_times():
    # ordem do roteiro, 2 núcleos: a mais longa (11.8 s) começa aos 8.5 s, quando o núcleo 0 vaga
    plan = list_schedule(FACT_TIMES, 2)
    assert [core for core, _, _ in plan] == [0, 1, 0, 1, 0]
    assert plan[-1][1] == pytest.approx(1.5 + 7.0)
    assert all(
        end - start == pytest.approx(t) for (_, start, end), t in zip(plan, FACT_TIMES, strict=True)
    )
    assert list_schedule_makespan(FACT_TIMES, 2) == pytest.approx(1.5 + 7.0 + 11.8)
    lpt = sorted(FACT_TIMES, reverse=True)  # as mais caras primeiro
    assert list_schedule_makespan(lpt, 2) == pytest.approx(11.8 + 4.1 + 1.5)
    assert list_schedule_makespan(FACT_TIMES, 1) == pytest.approx(sum(FACT_TIMES))
    # num núcleo, nenhuma tarefa começa antes de a anterior acabar
    for core in (0, 1):
        mine = [(s, e) for c, s, e in plan if c == core]
        assert all(prev[1] <= nxt[0] + 1e-12 for prev, nxt in zip(mine, mine[1:], strict=False))


def test_most_expensive_first():
    assert most_expensive_first(SEED_GRID) == SEED_GRID[::-1]
    grid = [(10, 50), (100, 2), (30, 5)]
    assert most_expensive_first(grid) == [(10, 50), (100, 2), (30, 5)]
    # com poucas amostras a profundidade satura em log2(amostras): as árvores mandam
    assert most_expensive_first(grid, n_samples=16) == [(100, 2), (30, 5), (10, 50)]


@pytest.mark.parametrize(("n", "k"), [(10, 3), (7, 7), (3, 10), (1, 1)])
def test_split_trees_covers_all_trees(n, k):
    parts = split_trees(n, k)
    assert sum(size for _, size in parts) == n
    assert [first for first, _ in parts] == list(np.cumsum([0] + [s for _, s in parts])[:-1])
    assert max(s for _, s in parts) - min(s for _, s in parts) <= 1


def test_plan_chunks_covers_grid_and_balances():
    chunks = plan_chunks(SEED_GRID, cores=2, chunks_per_core=4)
    for n, d in SEED_GRID:
        mine = sorted(
            (c.first_tree, c.n_trees) for c in chunks if (c.n_estimators, c.max_depth) == (n, d)
        )
        assert mine[0][0] == 0 and sum(s for _, s in mine) == n
    assert len(chunks) > len(SEED_GRID)
    costs = [estimated_cost(c.n_trees, c.max_depth) for c in chunks]
    assert costs == sorted(costs, reverse=True)
    # o bloco mais caro custa bem menos que a configuração mais cara inteira
    assert max(costs) < 0.5 * estimated_cost(500, 30)


def test_plan_chunks_leaves_no_core_idle_at_the_end():
    """Blocos de custo igual ainda deixam um núcleo parado no fim da fila; ``plan_chunks`` simula
    a fila e usa blocos menores até o núcleo mais carregado ficar a 1% do ideal."""
    samples = 16512  # o treino do California Housing
    for cores in (2, 3, 4):
        chunks = plan_chunks(SEED_GRID, cores, chunks_per_core=4, n_samples=samples)
        costs = [estimated_cost(c.n_trees, c.max_depth, samples) for c in chunks]
        assert list_schedule_makespan(costs, cores) <= 1.01 * sum(costs) / cores
        # controle: exatamente 4 blocos por núcleo (sem simular a fila) ficam 2% a 9% acima
        fixed = plan_chunks(
            SEED_GRID, cores, chunks_per_core=4, n_samples=samples, tolerance=float("inf")
        )
        costs = [estimated_cost(c.n_trees, c.max_depth, samples) for c in fixed]
        assert list_schedule_makespan(costs, cores) > 1.01 * sum(costs) / cores


def test_merged_forest_predicts_like_whole_forest_and_mismatched_chunks_are_refused(data):
    X_train, y_train, X_test, _ = data
    whole = RandomForestRegressor(n_estimators=12, max_depth=6, random_state=42).fit(
        X_train, y_train
    )
    parts = [
        fit_forest_chunk(size, 6, X_train, y_train, first_tree=first)
        for first, size in split_trees(12, 3)
    ]
    merged = merge_forests(parts)
    assert merged.n_estimators == 12 and len(merged.estimators_) == 12
    assert merged.get_params() == whole.get_params()
    for a, b in zip(merged.estimators_, whole.estimators_, strict=True):
        assert a.random_state == b.random_state
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
    np.testing.assert_allclose(merged.predict(X_test), whole.predict(X_test), rtol=1e-12)
    a = fit_forest_chunk(2, 3, X_train, y_train)  # blocos de florestas diferentes: recusados
    b = fit_forest_chunk(2, 4, X_train, y_train, first_tree=2)
    with pytest.raises(ValueError, match="max_depth"):
        merge_forests([a, b])
    with pytest.raises(ValueError, match="Nenhuma"):
        merge_forests([])


def test_combine_chunks_gives_whole_forest_mse(data):
    X_train, y_train, X_test, y_test = data
    grid = [(9, 4), (5, 3)]
    chunks = plan_chunks(grid, cores=2, chunks_per_core=3)
    assert len(chunks) > len(grid)
    parts = [fit_chunk_and_predict(c, X_train, y_train, X_test) for c in chunks]
    combined = {(n, d): (mse, s) for n, d, mse, s in combine_chunks(parts, y_test)}
    for n, d in grid:
        expected = fit_and_score(n, d, X_train, y_train, X_test, y_test)[2]
        assert combined[(n, d)][0] == pytest.approx(expected, rel=1e-10)
        assert combined[(n, d)][1] > 0
    with pytest.raises(ValueError, match="árvores"):
        combine_chunks(parts[1:], y_test)


def test_save_results_writes_csv(tmp_path, monkeypatch):
    monkeypatch.setenv(config.RESULTS_DIR_ENV, str(tmp_path / "res"))
    path = save_results([(10, 4, 0.5, 1.25), (20, 6, 0.25, 2.5)], "busca")
    assert path == tmp_path / "res" / "busca.csv"
    rows = list(csv.reader(path.open(encoding="utf-8")))
    assert rows[1:] == [["10", "4", "0.5", "1.25"], ["20", "6", "0.25", "2.5"]]


class _FakeRay(types.ModuleType):
    """Ray de mentira: as tarefas terminam na ordem inversa do envio (ou nunca, ``stall``)."""

    def __init__(self, values, stall=False):
        super().__init__("ray")
        self.values, self.stall = values, stall

    def wait(self, pending, num_returns=1, timeout=None):
        if self.stall:
            return [], pending
        return [pending[-1]], pending[:-1]

    def get(self, ref):
        return self.values[ref]


def test_gather_returns_submission_order_and_times_out_instead_of_hanging(monkeypatch):
    values = [(10, 4, 0.3, 1.0), (20, 6, 0.2, 2.0), (30, 8, 0.1, 3.0)]
    monkeypatch.setitem(sys.modules, "ray", _FakeRay(values))
    assert gather_with_progress([0, 1, 2]) == values  # chegam na ordem inversa
    monkeypatch.setitem(sys.modules, "ray", _FakeRay([(1, 1, 0.0, 0.0)], stall=True))
    with pytest.raises(TimeoutError, match="Nenhuma tarefa terminou"):
        gather_with_progress([0], timeout_s=0.01)


@pytest.mark.parametrize(("cores", "copies", "bound"), [(4, 8, 4.0), (8, 8, 8.0), (2, 16, 2.0),
                                                        (16, 16, 16.0)])  # fmt: skip
def test_measured_bound_on_a_fake_machine(monkeypatch, cores, copies, bound):
    """Uma máquina de ``cores`` núcleos de verdade onde o Ray declara ``copies`` CPUs: k cópias
    levam ``ceil(k / cores)`` vezes o tempo de uma; o limite medido é o dos núcleos."""
    import math

    from labutils import search

    calls = []

    def fake(target, args, k, timeout, warm=None):
        calls.append(k)
        return 1.5 * math.ceil(k / cores), [None] * k

    monkeypatch.setattr(search, "side_by_side", fake)
    monkeypatch.setattr(search, "usable_cpus", lambda: cores)  # SMT à parte: núcleos = lógicas
    assert search.measured_bound(print, (), copies) == pytest.approx(bound)
    # com mais lógicas que núcleos (SMT: 2 por núcleo), k cópias até as lógicas
    monkeypatch.setattr(search, "usable_cpus", lambda: 2 * cores)
    assert search.measured_bound(print, (), copies) == pytest.approx(bound)
    assert max(calls) <= 2 * cores, "cópias além das CPUs lógicas só alongam a medida"
    calls.clear()
    assert search.measured_bound(print, (), 1) == 1.0 and not calls  # 1 CPU: nada a medir


def test_side_by_side_starts_the_copies_together(monkeypatch):
    """Cópias que não disputam núcleo (dormir): lado a lado levam o tempo de uma, e o limite
    medido é o número de cópias; o tempo de subir os processos fica fora da medida."""
    from labutils import search

    monkeypatch.setattr(search, "usable_cpus", lambda: 3)  # dormir não ocupa núcleo

    seconds, got = search.side_by_side(time.sleep, (0.5,), 3, timeout=60)
    assert got == [None] * 3 and 0.45 < seconds < 1.2
    assert 2.4 < search.measured_bound(time.sleep, (0.5,), 3, timeout=60) <= 3.3


def test_measured_bound_repeats_a_short_fit_until_it_lasts(monkeypatch):
    """Um treino de 0,1 s medido uma vez é ruído: cada cópia o repete até ~1 s."""
    from labutils import search

    repeats = []

    def fake(target, args, k, timeout, warm=None):
        times = args[2] if target is search._repeat else 1
        repeats.append(times)
        return 0.1 * times * (k / 2 if k > 2 else 1), [None] * k

    monkeypatch.setattr(search, "side_by_side", fake)
    monkeypatch.setattr(search, "usable_cpus", lambda: 4)
    assert search.measured_bound(print, (), 4) == pytest.approx(2.0)
    assert max(repeats) >= 10


def test_sum_of_squares_is_lesson_01s_loop():
    from labutils import search

    assert search.sum_of_squares(10) == sum(i * i for i in range(10)) == 285
