"""Os gráficos da lição 02: rótulos, alinhamento por configuração, qualquer tamanho de grade."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from labutils import plots


def _results(grid, seconds):
    return [(n, d, 0.1 * i, s) for i, ((n, d), s) in enumerate(zip(grid, seconds, strict=True))]


def _lines(ax):
    return {line.get_label(): line.get_ydata() for line in ax.get_lines()}


@pytest.mark.parametrize("k", [1, 3, 5, 12])
def test_comparison_has_one_tick_per_configuration(k):
    grid = [(10 * (i + 1), i + 2) for i in range(k)]
    central = _results(grid, np.arange(1, k + 1, dtype=float))
    dist = _results(grid, np.full(k, 0.5))
    fig = plots.plot_comparison(central, 9.0, dist, 3.0, grid)
    ax_t, ax_b = fig.axes
    assert [t.get_text() for t in ax_t.get_xticklabels()] == [f"({n}, {d})" for n, d in grid]
    assert ax_t.get_xlabel() and "(s)" in ax_t.get_ylabel() and "(s)" in ax_b.get_xlabel()
    lines = _lines(ax_t)
    np.testing.assert_allclose(lines["Centralizado (acumulado)"], np.cumsum(np.arange(1, k + 1)))
    np.testing.assert_allclose(lines["Distribuído (cada tarefa)"], np.full(k, 0.5))
    assert [p.get_width() for p in ax_b.patches] == [9.0, 3.0]
    assert "3.00×" in ax_b.get_title()
    plt.close(fig)


def test_comparison_aligns_results_by_configuration_not_position():
    grid = [(100, 10), (200, 15), (300, 20)]
    central = _results(grid, [1.0, 2.0, 3.0])
    # a busca distribuída devolveu as mais caras primeiro
    dist = [(300, 20, 0.0, 30.0), (200, 15, 0.0, 20.0), (100, 10, 0.0, 10.0)]
    fig = plots.plot_comparison(central, 6.0, dist, 3.5, grid)
    np.testing.assert_allclose(_lines(fig.axes[0])["Distribuído (cada tarefa)"], [10.0, 20.0, 30.0])
    # sem grade explícita, vale a ordem dos resultados centralizados
    fig2 = plots.plot_comparison(central, 6.0, dist, 3.5)
    assert fig2.axes[0].get_xticklabels()[0].get_text() == "(100, 10)"
    plt.close("all")


def test_plot_speedups_shows_bars_and_bounds():
    fig = plots.plot_speedups(["roteiro", "blocos"], [1.4, 1.8], [2.0, 1.95], cores=2)
    ax = fig.axes[0]
    assert [p.get_width() for p in ax.patches] == [1.4, 1.8]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["roteiro", "blocos"]
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 0], [2.0, 1.95])
    assert "Speedup" in ax.get_xlabel()
    plt.close(fig)


def test_timeline_has_one_row_per_process_and_one_bar_per_task():
    # 3 tarefas em 2 processos (o PID 7 roda duas), e a fila simulada com 2 núcleos
    measured = [(7, 0.0, 1.0), (9, 0.1, 2.0), (7, 1.1, 3.0)]
    simulated = [(0, 0.0, 1.0), (1, 0.0, 1.9), (0, 1.0, 2.9)]
    fig = plots.plot_timeline(measured, ["a", "b", "c"], simulated=simulated)
    ax_m, ax_s = fig.axes
    assert [t.get_text() for t in ax_m.get_yticklabels()] == ["PID 7", "PID 9"]
    assert len(ax_m.patches) == 3
    bars = sorted((p.get_x(), p.get_width(), p.get_y() + p.get_height() / 2) for p in ax_m.patches)
    np.testing.assert_allclose(bars, [(0.0, 1.0, 0.0), (0.1, 1.9, 1.0), (1.1, 1.9, 0.0)])
    assert [t.get_text() for t in ax_s.get_yticklabels()] == ["núcleo 0", "núcleo 1"]
    assert len(ax_s.patches) == 3
    plt.close(fig)


def test_worker_timelines_have_one_panel_per_mode_and_one_row_per_process():
    # os mesmos 3 jobs: no joblib o 3º espera o PID 7 (a vez dele); nas tarefas, vai ao PID 9 livre
    labels = ["a", "b", "c"]
    panels = {
        "joblib": [(7, 0.5, 2.5), (9, 0.5, 1.5), (7, 2.5, 3.5)],
        "tarefas": [(3, 0.0, 2.0), (4, 0.0, 1.0), (4, 1.0, 2.0)],
    }
    fig = plots.plot_worker_timelines(panels, labels)
    ax_j, ax_t = fig.axes
    assert [ax.get_title() for ax in fig.axes] == ["joblib", "tarefas"]
    assert [t.get_text() for t in ax_j.get_yticklabels()] == ["PID 7", "PID 9"]
    assert [t.get_text() for t in ax_t.get_yticklabels()] == ["PID 3", "PID 4"]
    rows = sorted((p.get_x(), p.get_y() + p.get_height() / 2) for p in ax_t.patches)
    np.testing.assert_allclose(rows, [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0)])
    plt.close(fig)
