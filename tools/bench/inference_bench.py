"""Seção do benchmark: a inferência em lote da lição 06, os degraus da escada em imagens/s.

Os degraus são os das células ``# @save`` da lição (``predict_labels``,
``classificar_recarregando``, ``classificar_com_pool``, ``classificar_com_ray_data``), num
processo novo (``python -m tools.bench.inference_bench JSON``): o limite de threads do TF só vale
antes de o TF iniciar. O modelo é a CNN da lição 05 com pesos aleatórios (a vazão não depende dos
pesos). O limite medido é o dos atores do pool lado a lado, cada um com a sua parte das imagens já
no object store; tarefas, pool e Ray Data são lidos contra o menor entre ele e os núcleos.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labutils.config import pick, sizes
from labutils.system import usable_cpus
from tools.bench import measure_main, run_measure
from tools.bench.report import Measurement, Report, verdict

SECTION = "Inferência em lote (lição 06)"
IPS = "imagens/s"
ROWS = {
    "single": "1 processo, 1 thread (predict_on_batch)",
    "all_threads": "1 processo, threads padrão do TF",
    "tasks": "tarefas Ray que recarregam o modelo",
    "pool": "pool de atores (modelo carregado 1 vez)",
    "side": "atores lado a lado, cada um com sua parte (sem Ray Data): o limite medido",
    "data": "Ray Data: read_parquet → map_batches → write_parquet",
    "data_steady": "Ray Data com os atores no ar (do 1º lote ao último)",
}
#: as linhas lidas contra o lado a lado medido (o menor entre ele e os núcleos)
SIDE_BOUNDED = ("tasks", "pool", "data", "data_steady")
#: meta da issue #27: o Ray Data com os atores no ar a ≥ 90% do limite medido
TARGET_OF_BOUND = 0.90


def run(report: Report, repeats: int, scale: str) -> None:
    """Mede os degraus num processo novo (só a CPU, como a lição) e acrescenta as linhas."""
    args = {"scale": scale, "repeats": repeats}
    timeout = pick(full=1800.0, smoke=300.0, scale=scale)
    hide_gpu = {"CUDA_VISIBLE_DEVICES": ""}  # o limite de cada linha se conta em núcleos
    add_rows(
        report, run_measure("inference_bench", args, scale=scale, timeout=timeout, env=hide_gpu)
    )


def add_rows(report: Report, result: dict[str, Any]) -> None:
    values, meta = result.get("results", {}), result.get("meta", {})
    if "single" not in values:
        for approach in ROWS.values():
            report.skip(SECTION, approach, result.get("error") or "não medido")
        return
    base = statistics.median(values["single"])
    notes = {
        "single": f"linha de base; {meta.get('images')} imagens, lote {meta.get('batch')}: "
        f"{meta.get('source', '')}",
        "all_threads": f"processo novo sem limite de threads (o TF usou {meta.get('threads')})",
        "tasks": f"{meta.get('task_images')} imagens, uma tarefa por lote; "
        f"{meta.get('reload_s', 0):.1f} s somados recarregando o modelo",
        "pool": f"{meta.get('actors')} atores × 1 CPU, 1 thread cada",
        "side": "os mesmos atores, as imagens já no object store, todos começando no mesmo "
        "instante e nada mais rodando: quanto os núcleos dão de fato a processos de 1 thread",
        "data": f"{meta.get('actors')} atores × {meta.get('data_cpus')} CPU "
        "(1 CPU livre para ler e gravar), 1 thread cada; do início ao fim: inclui subir os "
        f"atores ({meta.get('data_startup_s', 0):.1f} s até o 1º lote) e o Parquet",
        "data_steady": "a mesma execução, medida pelos relógios dos atores (BatchPredictor): do "
        "início do 1º lote ao fim do último, sem a partida dos atores; os atores sobre Ray Data "
        "dividem os 2 núcleos com a leitura, a gravação e o executor do Ray Data",
    }
    side = statistics.median(values["side"]) / base if "side" in values else None
    rows = {}
    for key, approach in ROWS.items():  # o processo de medida mede todas ou nenhuma
        speedup = None if key == "single" else statistics.median(values[key]) / base
        bound = None if key == "single" else meta.get("bounds", {}).get(key)
        note = notes[key]
        if bound and side and key in SIDE_BOUNDED:
            note += f"; limite: o menor entre {bound:.2f}x (núcleos) e o lado a lado ({side:.2f}x)"
            bound = min(bound, side)
        rows[key] = report.add(
            Measurement(SECTION, approach, IPS, values[key], speedup, bound, note)
        )
    report.targets.append((SECTION, target_line(rows.get("data_steady"))))


def target_line(steady: Measurement | None) -> str:
    """A meta do Ray Data, conferida com os números desta execução, numa linha."""
    goal = f"Ray Data com os atores no ar ≥ {100 * TARGET_OF_BOUND:.0f}% do limite medido"
    if steady is None or steady.of_bound is None:
        return f"{goal}: não conferida (linha não medida)"
    return (f"{goal}: {steady.speedup:.2f}x = {100 * steady.of_bound:.1f}% de "
            f"{steady.bound:.2f}x → {verdict(steady.of_bound >= TARGET_OF_BOUND)}")  # fmt: skip


def measure(args: dict[str, Any]) -> dict[str, Any]:  # noqa: PLR0915 (os degraus, em ordem)
    from tools.lesson_code import load

    lesson = load("06_inferencia_em_lote")
    lesson.configure_threads(1)  # antes da 1ª operação do TF: a linha de base com 1 thread
    import numpy as np
    import pandas as pd
    import ray
    import tensorflow as tf

    from labutils import inference
    from labutils.lesson05 import create_model
    from labutils.raytools import init_ray

    class SideBySide(lesson.Predictor):
        """O ``Predictor`` da lição e o que só o benchmark mede: espera até ``start_at`` e
        classifica a sua parte inteira, como o processo único."""

        def predict_from(self, images, batch_size, start_at):
            time.sleep(max(0.0, start_at - time.time()))
            start = time.time()
            lesson.predict_labels(self.model, images, batch_size)
            return start, time.time()

    def all_threads(blob, images, batch_size):  # a referência: as threads padrão do TF
        threads = lesson.configure_threads(0)
        model = lesson.model_from_bytes(blob)
        lesson.predict_labels(model, images[:batch_size], batch_size)  # compila o grafo
        start = time.perf_counter()
        lesson.predict_labels(model, images, batch_size)
        return time.perf_counter() - start, threads

    scale, repeats, size = args["scale"], args["repeats"], sizes(args["scale"])
    images = inference.load_images(scale)  # sem os dados: DatasetUnavailableError
    stream, source = images.stream, images.source
    tf.keras.utils.set_random_seed(0)
    model, batch = create_model(), size.inference_batch
    blob = lesson.model_bytes(model)
    task_images = stream[: size.inference_task_batches * batch]
    results: dict[str, list[float]] = {k: [] for k in ROWS}
    init_ray(dashboard=False)
    folder = Path(tempfile.mkdtemp(prefix="labutils-bench-inferencia-"))
    try:
        ctx = ray.data.DataContext.get_current()  # como a lição: sem barras, o leitor V1
        ctx.enable_progress_bars, ctx.use_datasource_v2 = False, False
        ray.data.range(1).materialize()  # sobe os atores de sistema do Ray Data fora das medidas
        n_actors = inference.plan_pool(size.inference_actors)
        data_cpus = inference.data_actor_cpus(n_actors)
        inference.write_image_files(stream, folder / "imagens", files=2 * n_actors)
        blob_ref = ray.put(blob)
        cores = min(float(usable_cpus()), ray.cluster_resources().get("CPU", 1.0))
        reference_task = ray.remote(num_cpus=cores, max_calls=1)(all_threads)  # processo novo
        for _ in range(repeats):
            lesson.predict_labels(model, stream[:batch], batch)  # compila o grafo
            start = time.perf_counter()
            lesson.predict_labels(model, stream, batch)
            results["single"].append(len(stream) / (time.perf_counter() - start))

            seconds, threads = ray.get(reference_task.remote(blob_ref, stream, batch))
            results["all_threads"].append(len(stream) / seconds)

            start = time.perf_counter()
            batches = lesson.batches(task_images, batch)
            out = ray.get([lesson.classificar_recarregando.remote(blob_ref, b) for b in batches])
            results["tasks"].append(len(task_images) / (time.perf_counter() - start))
            reload_s = sum(s for _, s in out)

            actor = ray.remote(num_cpus=1)(SideBySide)
            actors = [actor.remote(blob_ref) for _ in range(inference.plan_pool(n_actors))]
            ray.get([a.info.remote() for a in actors])  # todos com o modelo carregado
            try:
                start = time.perf_counter()
                lesson.classificar_com_pool(actors, stream, batch)
                results["pool"].append(len(stream) / (time.perf_counter() - start))
                parts = [ray.put(p) for p in np.array_split(stream, len(actors))]
                start_at = time.time() + 0.5  # todos os pedidos chegam antes dessa hora
                out = ray.get([a.predict_from.remote(p, batch, start_at)
                               for a, p in zip(actors, parts, strict=True)])  # fmt: skip
                results["side"].append(
                    len(stream) / (max(o[1] for o in out) - min(o[0] for o in out))
                )
            finally:
                for a in actors:
                    ray.kill(a)

            inference.plan_pool(n_actors, data_cpus, reserve=inference.IO_CPUS)
            wall = time.time()
            seconds = lesson.classificar_com_ray_data(
                folder / "imagens", folder / "previsoes", blob, n_actors, batch, data_cpus
            )
            back = pd.read_parquet(folder / "previsoes", columns=["t_start", "t_end"])
            first, last = back["t_start"].min(), back["t_end"].max()
            results["data"].append(len(back) / seconds)
            results["data_steady"].append(len(back) / (last - first))
            startup_s = first - wall
        pooled = inference.cores_bound(n_actors, 1)  # processos de 1 thread lado a lado
        bounds = {"all_threads": inference.cores_bound(1, threads),
                  **dict.fromkeys(("tasks", "pool", "side", "data", "data_steady"), pooled)}  # fmt: skip
        meta = {"images": len(stream), "batch": batch, "source": source, "threads": threads,
                "task_images": len(task_images), "reload_s": reload_s, "actors": n_actors,
                "data_cpus": data_cpus, "bounds": bounds, "data_startup_s": startup_s}  # fmt: skip
    finally:
        ray.shutdown()
    return {"meta": meta, "results": results}


if __name__ == "__main__":
    raise SystemExit(measure_main(measure, sys.argv[1]))
