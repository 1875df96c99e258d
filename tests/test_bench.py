"""Benchmark (``python -m tools.bench``): o relatório e uma execução rápida de ponta a ponta.

Não testa a velocidade da máquina: testa que o relatório sai com todas as linhas, que as contas
(mediana, dispersão, fração do limite) estão certas e que os limites fazem sentido. Se um speedup
passa do seu limite, só se lê num ``make bench`` com a máquina quieta: no ``make test``, o
benchmark smoke divide os 2 núcleos com o outro processo do pytest-xdist, e uma linha de base
medida num instante disputado já deu 3,35x contra o limite de 2x.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from labutils import system
from tools.bench import inference_bench, ray_overheads, search_bench, tf_bench
from tools.bench.report import Measurement, Report, machine_info

ROOT = Path(__file__).resolve().parents[1]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------- o relatório


def test_measurement_statistics():
    m = Measurement("s", "a", "tempo (s)", [3.0, 1.0, 2.0, 10.0], speedup=1.5, bound=2.0)
    assert m.median == 2.5
    assert m.spread == (1.0, 10.0)
    assert m.of_bound == pytest.approx(0.75)
    assert Measurement("s", "b", "tempo (s)", [1.0]).of_bound is None
    with pytest.raises(ValueError, match="nenhuma repetição"):
        Measurement("s", "c", "tempo (s)", [])


def test_report_markdown_csv_and_figure(tmp_path):
    report = Report(machine_info("smoke"))
    report.add(Measurement("Busca", "laço", "tempo (s)", [4.0, 5.0, 6.0], note="base"))
    report.add(Measurement("Busca", "Ray", "tempo (s)", [2.5, 3.0], speedup=1.8, bound=2.0))
    report.add(Measurement("TF", "fit", "imagens/s", [500.0], higher_is_better=True))
    report.skip("TF", "multi-worker", "faltam\n os dados")
    paths = report.write(tmp_path)

    text = paths["markdown"].read_text(encoding="utf-8")
    for needle in ("| Busca | laço |", "| Busca | Ray |", "| TF | fit |", "90%", "1.8x"):
        assert needle in text
    assert "**TF / multi-worker**: faltam os dados" in text
    for key in ("núcleos disponíveis", "memória", "GPU", "carga média (1 min) no início"):
        assert f"**{key}**" in text

    rows = _rows(paths["csv"])
    assert [r["abordagem"] for r in rows] == ["laço", "Ray", "fit", "multi-worker"]
    assert float(rows[0]["mediana"]) == 5.0
    assert (float(rows[0]["minimo"]), float(rows[0]["maximo"])) == (4.0, 6.0)
    assert float(rows[1]["fracao_do_limite"]) == pytest.approx(0.9)
    assert rows[1]["valores"].split() == ["2.5", "3"]
    assert rows[3]["metrica"] == "não medido" and rows[3]["nota"] == "faltam os dados"
    assert paths["figure"].stat().st_size > 1000


def test_tf_rows_missing_are_reported_not_faked():
    report = Report({})
    local = {
        "meta": {"device_kind": "cpu", "replicas": 2, "images": 8, "source": "mock"},
        "results": {k: [10.0] for k in ("pipe_plain", "pipe_cached", "fit_plain", "fit_central")},
        "errors": {},
    }
    local["results"]["fit_mirrored"] = [5.0]
    tf_bench._add_rows(report, local, {"error": "passou do limite de 9 s"})
    mirrored = next(r for r in report.rows if r.approach == "MirroredStrategy")
    assert mirrored.speedup == pytest.approx(0.5) and mirrored.bound == 1.0
    assert [s.approach for s in report.skipped] == [
        "MultiWorkerMirrored, 1 worker",
        "MultiWorkerMirrored, 2 workers",
    ]
    assert all("passou do limite" in s.reason for s in report.skipped)


def test_inference_rows_have_speedup_and_bound_or_say_why_not():
    report = Report({})
    inference_bench.add_rows(report, {"error": "passou do limite de 9 s"})
    assert not report.rows and len(report.skipped) == len(inference_bench.ROWS)
    assert all("passou do limite" in s.reason for s in report.skipped)

    values = {k: [100.0, 120.0, 110.0] for k in inference_bench.ROWS}
    values["data"] = [180.0]
    bounds = {k: 2.0 for k in ("all_threads", "tasks", "pool", "data")}
    report = Report({})
    inference_bench.add_rows(report, {"results": values, "meta": {"bounds": bounds}})
    rows = {r.approach: r for r in report.rows}
    assert len(rows) == len(inference_bench.ROWS) and not report.skipped
    base = rows[inference_bench.ROWS["single"]]
    assert base.speedup is None and base.median == 110.0
    data = rows[inference_bench.ROWS["data"]]
    assert data.speedup == pytest.approx(180 / 110) and data.of_bound == pytest.approx(0.818, 1e-3)


def test_speedup_agrees_with_the_printed_medians_for_even_repeats():
    """Com um número par de repetições, o speedup de cada linha é a razão das medianas que o
    relatório imprime ao lado (``statistics.median``: a média dos dois do meio), em todas as
    seções que calculam o speedup longe do ``Measurement``."""
    report = Report({})
    values = {
        k: [100.0 * (i + 1), 130.0 * (i + 1) ** 1.5] for i, k in enumerate(inference_bench.ROWS)
    }
    inference_bench.add_rows(report, {"results": values, "meta": {"bounds": {}}})
    base = report.rows[0]
    for row in report.rows[1:]:
        assert row.speedup == pytest.approx(row.median / base.median), row.approach

    report = Report({})
    results = {k: [10.0 * (i + 1), 17.0 * (i + 1) ** 1.5] for i, k in enumerate(tf_bench.ROWS)}
    tf_bench._add_rows(report, {"results": results, "meta": {}}, {"meta": {}})
    rows = {r.approach: r for r in report.rows}
    pairs = {
        "pipe_cached": "pipe_plain",
        "fit_central": "fit_plain",
        "fit_mirrored": "fit_central",
        "mw_2": "mw_1",
    }
    for key, base_key in pairs.items():
        row, base_row = rows[tf_bench.ROWS[key][1]], rows[tf_bench.ROWS[base_key][1]]
        assert row.speedup == pytest.approx(row.median / base_row.median), key

    report = Report({})
    ray_overheads._add_pair(report, "x", ("a", [1.0, 3.0]), ("b", [1.0, 1.5, 2.0, 9.0]), "")
    first, second = report.rows
    assert second.speedup == pytest.approx(first.median / second.median)


# ---------------------------------------------------------------- o treino multi-worker com prazo


class _FakeTrainer:
    def __init__(self, fit):
        self.fit = fit


def test_multiworker_fit_returns_the_result_or_times_out_instead_of_hanging():
    from tools.bench.tf_measure import fit_with_timeout

    assert fit_with_timeout(_FakeTrainer(lambda: "ok"), 5) == "ok"
    with pytest.raises(ZeroDivisionError):  # o erro do treino passa como é
        fit_with_timeout(_FakeTrainer(lambda: 1 / 0), 5)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ray.shutdown"):
        fit_with_timeout(_FakeTrainer(lambda: time.sleep(30)), 0.5)
    assert time.monotonic() - start < 3


# ---------------------------------------------------------------- fora do pacote dos alunos


def test_measure_processes_find_tools_from_any_folder(tmp_path):
    """Os processos de medida (``python -m tools.bench.X``) e os workers do Ray que eles iniciam
    herdam o ``PYTHONPATH`` com a raiz do repositório: acham o ``tools`` fora dela."""
    from tools.bench import ROOT as BENCH_ROOT
    from tools.bench import measure_env

    env = measure_env({"LABUTILS_SCALE": "smoke"})
    assert BENCH_ROOT == ROOT and env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    done = system.run(
        [sys.executable, "-c", "import tools.bench.tf_measure, tools.bench.inference_bench"],
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_notebook_or_lesson_module_imports_the_bench():
    """O benchmark é ferramenta de mantenedor: nem as lições nem o ``labutils`` dependem dele."""
    imports_bench = re.compile(r"^\s*(from|import)\s+(tools\.bench|tools\s+import\s+bench)", re.M)
    sources = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "labutils").rglob("*.py")}
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        sources[nb.name] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
    hits = sorted(name for name, text in sources.items() if imports_bench.search(text))
    assert not hits, f"importam o benchmark: {hits}"
    assert not (ROOT / "labutils" / "bench").exists(), "o benchmark mora em tools/bench/"


# ---------------------------------------------------------------- dados ausentes: mensagem, não número


def test_full_scale_without_data_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("LABUTILS_DATA_DIR", str(tmp_path))
    from labutils.data import DatasetUnavailableError

    with pytest.raises(DatasetUnavailableError, match="--synthetic-data"):
        search_bench.load_data("full")
    report = Report({})
    search_bench.run(report, 1, "full")  # sem dados: nenhuma linha medida, nenhum Ray iniciado
    assert not report.rows
    assert [s.approach for s in report.skipped] == list(search_bench.APPROACHES)
    assert all("California Housing" in s.reason for s in report.skipped)
    data, source = search_bench.load_data("full", synthetic=True)
    assert len(data[0]) + len(data[2]) == search_bench.HOUSING_ROWS
    assert "SINTÉTICOS" in source

    report = Report({})
    tf_bench.run(report, 1, "full")  # um processo só: falha rápido, sem iniciar o Ray
    assert not report.rows
    assert len(report.skipped) == len(tf_bench.ROWS)
    assert all("CIFAR-100" in s.reason for s in report.skipped)


# ---------------------------------------------------------------- de ponta a ponta, escala smoke


#: limite do benchmark smoke inteiro (as 4 seções, ~4 min num 2 núcleos quieto); vale para o
#: preparo da fixture, que o pytest-timeout conta no primeiro teste que a usa
SMOKE_BENCH_LIMIT_S = 600


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "LABUTILS_SCALE": "smoke"}
    proc = system.run(
        [
            sys.executable,
            "-m",
            "tools.bench",
            "--scale",
            "smoke",
            "--repeats",
            "1",
            "--out",
            str(out),
        ],
        timeout=SMOKE_BENCH_LIMIT_S - 30,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stdout


@pytest.mark.slow
@pytest.mark.timeout(SMOKE_BENCH_LIMIT_S)
def test_smoke_run_has_every_row(smoke_report):
    out, stdout = smoke_report
    rows = _rows(out / "resultados.csv")
    measured = {(r["secao"], r["abordagem"]) for r in rows if r["metrica"] != "não medido"}
    skipped = {
        (r["secao"], r["abordagem"]): r["nota"] for r in rows if r["metrica"] == "não medido"
    }
    assert not skipped, f"linhas não medidas: {skipped}"
    for approach in search_bench.APPROACHES:
        assert (search_bench.SECTION, approach) in measured
    for section, approach in tf_bench.ROWS.values():
        assert (section, approach) in measured
    assert sum(r["secao"] == "Ray: custos fixos" for r in rows) == 6
    assert "## Máquina" in stdout and "| seção | abordagem |" in stdout  # a tabela é impressa
    assert (out / "relatorio.md").read_text(encoding="utf-8").count("\n| ") == len(rows) + 2
    assert (out / "resultados.png").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.timeout(SMOKE_BENCH_LIMIT_S)
def test_smoke_run_bounds_are_consistent(smoke_report):
    out, _ = smoke_report
    rows = [r for r in _rows(out / "resultados.csv") if r["limite"]]
    search = [r for r in rows if r["secao"] == search_bench.SECTION]
    assert len(search) == len(search_bench.APPROACHES) - 1  # todas menos a linha de base
    cores = float(machine_info("smoke")["núcleos disponíveis"])
    for r in rows:
        speedup, bound = float(r["speedup"]), float(r["limite"])
        if r in search:  # um limite de speedup nunca passa do número de núcleos
            assert 1.0 <= bound <= cores + 1e-9, f"{r['abordagem']}: limite {bound}"
        assert float(r["fracao_do_limite"]) == pytest.approx(speedup / bound)
