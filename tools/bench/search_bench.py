"""Seção 1 do benchmark: a busca de hiperparâmetros da lição 02, abordagem por abordagem.

Em cada repetição, na mesma execução e intercaladas (para que uma variação de carga da máquina
atinja todas por igual): o laço sequencial, a versão Ray do roteiro (ordem da grade, dados
capturados pela função), a versão Ray com as mais caras primeiro, a versão em blocos de árvores, o
``n_jobs=-1`` do scikit-learn e as ferramentas da lição 03: Ray Tune (um trial por configuração) e
o ``GridSearchCV`` no Ray pelo backend joblib, ambos na ordem "mais caras primeiro". O aquecimento dos workers do Ray fica fora das medidas.

O limite de cada abordagem vem dos tempos das tarefas medidos no laço e dos núcleos:
nenhuma ordem de envio termina antes da tarefa mais longa nem antes de ``trabalho / núcleos``
(:func:`labutils.search.speedup_bound`). A nota de cada linha traz também o speedup que a própria
fila preveria naquela ordem (:func:`labutils.search.list_schedule_makespan`), o que separa o
que é culpa da ordem do que é custo do Ray ou da máquina.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from labutils.config import pick, sizes
from labutils.search import (
    Chunk,
    fit_and_score,
    list_schedule_makespan,
    most_expensive_first,
    plan_chunks,
    speedup_bound,
    validate_grid,
)
from labutils.timing import Timer
from tools.bench.report import Measurement, Report
from tools.bench.search_runs import (
    remote_fns,
    run_chunks,
    run_expensive_first,
    run_joblib_ray,
    run_loop,
    run_seed_ray,
    run_tune,
    warm_up,
)

SECTION = "Busca de hiperparâmetros"
#: tamanho do California Housing real (linhas)
HOUSING_ROWS = 20_640
APPROACHES = (
    "laço sequencial",
    "Ray, roteiro (ordem da grade, dados capturados)",
    "Ray, mais caras primeiro (ray.put)",
    "Ray, blocos de árvores (ray.put)",
    "scikit-learn n_jobs=-1",
    "Ray Tune (mais caras primeiro)",
    "GridSearchCV no Ray (joblib, mais caras primeiro)",
)


def chunks_per_core(scale: str) -> int:
    """Blocos por núcleo: mais blocos = fila mais equilibrada, mas mais tarefas (custo fixo)."""
    return pick(full=8, smoke=2, scale=scale)


# ---------------------------------------------------------------- dados


def load_data(scale: str, synthetic: bool = False) -> tuple[tuple[Any, ...], str]:
    """``((X_train, y_train, X_test, y_test), descrição da fonte)``, como na lição 02.

    Na escala ``full`` usa o California Housing real de ``data/`` (sem baixar nada). Se ele não
    estiver lá, só com ``synthetic=True`` gera um arquivo SINTÉTICO com o tamanho real
    (20 640 linhas) numa pasta temporária — e a fonte diz isso; sem a opção, levanta o erro.
    """
    from sklearn.model_selection import train_test_split

    from labutils.data import DatasetUnavailableError, load_california_housing

    try:
        bunch = load_california_housing(scale, download=False)
        source = bunch.source
        if getattr(bunch, "is_fixture", False):
            source += f", {len(bunch.target)} linhas"
    except DatasetUnavailableError as err:
        if not synthetic:
            raise DatasetUnavailableError(
                f"{err}\nOu meça com dados sintéticos do mesmo tamanho, dito no relatório: "
                "python -m tools.bench --synthetic-data"
            ) from None
        from sklearn.datasets import fetch_california_housing

        from labutils.data import make_housing_fixture

        home = Path(tempfile.mkdtemp(prefix="labutils-bench-housing-"))
        make_housing_fixture(home, n_samples=HOUSING_ROWS)
        bunch = fetch_california_housing(data_home=str(home), download_if_missing=False)
        source = (
            f"dados SINTÉTICOS do tamanho do California Housing ({HOUSING_ROWS} linhas; "
            "o real não está em data/)"
        )
    X_train, X_test, y_train, y_test = train_test_split(
        bunch.data, bunch.target, test_size=0.2, random_state=42
    )
    return (X_train, y_train, X_test, y_test), source


def _check_same_mse(name: str, got, expected) -> None:
    by_cfg = {(n, d): mse for n, d, mse, _ in got}
    want = {(n, d): mse for n, d, mse, _ in expected}
    if by_cfg.keys() != want.keys() or not np.allclose(
        [by_cfg[k] for k in want], list(want.values())
    ):
        raise RuntimeError(
            f"{name}: os erros (MSE) diferem do laço sequencial; a medida de tempo não valeria nada."
        )


# ---------------------------------------------------------------- a seção


def run(report: Report, repeats: int, scale: str, *, synthetic: bool = False) -> None:
    """Mede as sete abordagens ``repeats`` vezes e acrescenta uma linha por abordagem."""
    import joblib
    import ray

    from labutils.data import DatasetUnavailableError
    from labutils.raytools import init_ray

    grid = validate_grid(sizes(scale).grid)
    try:
        data, source = load_data(scale, synthetic)
    except DatasetUnavailableError as err:  # nada é medido, e o relatório diz o que falta
        for name in APPROACHES:
            report.skip(SECTION, name, f"DatasetUnavailableError: {err}")
        return
    n_samples = len(data[0])
    fit_and_score(5, 3, *data[:2], *data[2:])  # importa e aquece o scikit-learn (fora das medidas)

    ray.shutdown()
    init_ray(dashboard=False)
    try:
        cores = int(ray.cluster_resources().get("CPU", 1))
        local_cores = joblib.cpu_count()
        warm_s = warm_up(cores)
        fit_config, fit_chunk = remote_fns()
        chunks = plan_chunks(grid, cores, chunks_per_core(scale), n_samples=n_samples)
        tiny = ray.put(data)  # exporta as funções remotas aos workers (fora das medidas)
        ray.get([fit_config.remote(2, 2, tiny), fit_chunk.remote(Chunk(2, 2, 0, 2), tiny)])
        del tiny

        totals: dict[str, list[float]] = {name: [] for name in APPROACHES}
        task_s: dict[str, list[float]] = {name: [] for name in APPROACHES}
        loop_by_cfg: dict[tuple[int, int], list[float]] = {cfg: [] for cfg in grid}
        tune_delays: list[float] = []
        for _ in range(repeats):
            with Timer() as t:
                loop = run_loop(grid, data)
            totals[APPROACHES[0]].append(t.seconds)
            for n, d, _, s in loop:
                loop_by_cfg[(n, d)].append(s)
            steps = (
                (APPROACHES[1], lambda: run_seed_ray(grid, data)),
                (APPROACHES[2], lambda: run_expensive_first(grid, data, fit_config, n_samples)),
                (APPROACHES[3], lambda: run_chunks(chunks, data, fit_chunk)),
                (APPROACHES[4], lambda: run_loop(grid, data, n_jobs=-1)),
                (APPROACHES[5], lambda: run_tune(grid, data, n_samples, tune_delays)),
                (APPROACHES[6], lambda: run_joblib_ray(grid, data, n_samples)),
            )
            for name, step in steps:
                with Timer() as t:
                    got = step()
                totals[name].append(t.seconds)
                task_s[name].append(sum(r[3] for r in got))
                _check_same_mse(name, got, loop)
    finally:
        ray.shutdown()

    _add_rows(report, grid, chunks, totals, task_s, loop_by_cfg, cores, local_cores, n_samples)
    tune_row = next(r for r in reversed(report.rows) if r.approach == APPROACHES[5])
    tune_row.note += (
        f"; o 1º trial começou {statistics.median(tune_delays):.1f} s depois de chamar o fit "
        "(mediana): o custo fixo do Tune"
    )
    first = report.rows[-len(APPROACHES)]
    first.note = (
        f"linha de base; {len(grid)} configurações, {n_samples} linhas de treino: {source}; "
        f"Ray com {cores} CPU(s), aquecimento {warm_s:.1f} s fora das medidas"
    )


def longest_position(times: list[float]) -> str:
    """Onde a tarefa mais longa fica na fila, em palavras ("por último", "em 3º de 5")."""
    pos = int(np.argmax(times))
    return "por último" if pos == len(times) - 1 else f"em {pos + 1}º de {len(times)}"


def _predicted(times: list[float], cores: int) -> float:
    return sum(times) / list_schedule_makespan(times, cores)


def _add_rows(report, grid, chunks, totals, task_s, loop_by_cfg, cores, local_cores, n_samples):
    cfg_s = {cfg: statistics.median(v) for cfg, v in loop_by_cfg.items()}
    work = sum(cfg_s.values())
    cfg_times = [cfg_s[cfg] for cfg in grid]
    bound_cfg = speedup_bound(cfg_times, cores)
    chunk_times = [
        cfg_s[(c.n_estimators, c.max_depth)] * c.n_trees / c.n_estimators for c in chunks
    ]
    bound_chunks = speedup_bound(chunk_times, cores)
    tree_times = [cfg_s[(n, d)] / n for n, d in grid for _ in range(n)]
    bound_trees = speedup_bound(tree_times, local_cores)
    base = statistics.median(totals[APPROACHES[0]])
    longest = max(cfg_times)

    def slowdown(name: str) -> float:
        return statistics.median(task_s[name]) / work

    fifo = _predicted(cfg_times, cores)
    place = longest_position(cfg_times)
    lpt = _predicted([cfg_s[cfg] for cfg in most_expensive_first(grid, n_samples)], cores)
    rows = [
        (APPROACHES[0], None, ""),
        (
            APPROACHES[1],
            bound_cfg,
            f"ordem da grade: a tarefa mais longa ({longest:.2f} s) sai {place}; a própria fila "
            f"prevê {fifo:.2f}x ({100 * fifo / bound_cfg:.0f}% do limite); "
            f"tarefas {slowdown(APPROACHES[1]):.2f}x mais lentas que no laço",
        ),
        (
            APPROACHES[2],
            bound_cfg,
            f"fila prevê {lpt:.2f}x; limite = trabalho {work:.2f} s / max(mais longa {longest:.2f} s, "
            f"trabalho/{cores}); tarefas {slowdown(APPROACHES[2]):.2f}x mais lentas que no laço",
        ),
        (
            APPROACHES[3],
            bound_chunks,
            f"{len(chunks)} blocos ({len(chunks) / cores:.0f} por núcleo); fila prevê "
            f"{_predicted(chunk_times, cores):.2f}x; tarefas {slowdown(APPROACHES[3]):.2f}x mais "
            "lentas que no laço",
        ),
        (
            APPROACHES[4],
            bound_trees,
            f"threads em {local_cores} núcleo(s); limite com a árvore como unidade de trabalho",
        ),
        (
            APPROACHES[5],
            bound_cfg,
            f"1 CPU por trial, até {cores} ao mesmo tempo; inclui criar os actors dos trials; "
            f"fila prevê {lpt:.2f}x; tarefas {slowdown(APPROACHES[5]):.2f}x mais lentas que no laço",
        ),
        (
            APPROACHES[6],
            bound_cfg,
            "PredefinedSplit (mesma avaliação do laço); inclui criar o pool de actors do joblib; "
            f"treinos {slowdown(APPROACHES[6]):.2f}x mais lentos que no laço",
        ),
    ]
    for name, bound, note in rows:
        values = totals[name]
        speedup = base / statistics.median(values)
        report.add(Measurement(SECTION, name, "tempo (s)", values, speedup, bound, note))
