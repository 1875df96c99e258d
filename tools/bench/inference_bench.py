"""Seção do benchmark: inferência em lote (lição 06), os degraus da escada em imagens/s.

Roda num processo Python novo (``python -m tools.bench.inference_bench JSON``): o limite de
threads do TensorFlow só vale antes de o TF iniciar, e o Ray iniciado lá morre com o processo.
Devolve as medidas como JSON na última linha; passou do limite de tempo, o grupo de processos
inteiro é encerrado (SIGKILL) e o relatório diz isso. Nunca trava.

O modelo é a CNN da lição 05 com pesos aleatórios (``create_model``): a vazão não depende dos
pesos. Imagens: o mock do tfds na escala ``smoke``; na ``full``, o teste real do CIFAR-100 de
``data/`` repetido até ``inference_images``; sem ele, nada é medido, a não ser com
``--synthetic-data`` (imagens aleatórias do mesmo tamanho, e o relatório diz isso).

"Lado a lado": os atores do pool, cada um com sua parte das imagens já no object store,
começando juntos: o limite que os núcleos dão de fato, medido (o "2x" supõe núcleos ideais).
As tarefas, o pool e o Ray Data são lidos contra o menor entre ele e os núcleos, como a busca
(``report.effective_bound``). Antes das repetições, ``warm_up_ray_data`` sobe os atores de
sistema do Ray Data.

Ray Data: a linha "do início ao fim" inclui subir os atores (importar o TF, carregar o modelo) e
o Parquet; a linha "com os atores no ar" é a mesma execução medida pelos relógios do
``Predictor`` (do início do 1º lote ao fim do último), e nesse trecho o ``CpuSampler`` mede para
onde foram os núcleos (atores, leitura e gravação, driver, Ray, o resto, ociosa): a meta
(:data:`TARGET_OF_BOUND`) é conferida numa linha, e, não cumprida, a linha traz essa conta.
No Ray 2.60 o leitor novo do
``read_parquet`` (DataSourceV2) subia 32 atores ``FooterReader`` e entregava 1 bloco só ao pool
(smoke: 35 imagens/s, ~30 s por execução); ``inference_runs.read_images`` usa o leitor V1.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from labutils import system
from labutils.config import pick, sizes
from labutils.system import usable_cpus
from tools.bench import run_measure
from tools.bench.report import Measurement, Report, effective_bound, verdict

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


def timeout_s(scale: str) -> float:
    return pick(full=1800.0, smoke=300.0, scale=scale)


def run(report: Report, repeats: int, scale: str, *, synthetic: bool = False) -> None:
    """Mede os degraus num processo novo e acrescenta as linhas ao relatório."""
    args = {"scale": scale, "repeats": repeats, "synthetic": synthetic}
    # só a CPU, como a lição 06: o limite de cada linha se conta em núcleos
    hide_gpu = {"CUDA_VISIBLE_DEVICES": ""}
    result = run_measure(
        "inference_bench", args, scale=scale, timeout=timeout_s(scale), env=hide_gpu
    )
    add_rows(report, result)


def add_rows(report: Report, result: dict[str, Any]) -> None:
    values, meta = result.get("results", {}), result.get("meta", {})
    if "single" not in values:
        for approach in ROWS.values():
            report.skip(SECTION, approach, result.get("error") or "não medido")
        return
    base = statistics.median(values["single"])
    bounds = meta.get("bounds", {})
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
        "data_steady": "a mesma execução, medida pelos relógios dos atores (Predictor): do "
        "início do 1º lote ao fim do último, sem a partida dos atores; os atores sobre Ray Data "
        "dividem os 2 núcleos com a leitura, a gravação e o executor do Ray Data",
    }
    side = statistics.median(values["side"]) / base if "side" in values else None
    cpu = cpu_line(meta.get("data_cpu", {}))
    if cpu:
        notes["data_steady"] += f"; {cpu}"
    rows = {}
    for key, approach in ROWS.items():
        if key not in values:
            report.skip(SECTION, approach, result.get("errors", {}).get(key, "não medido"))
            continue
        median = statistics.median(values[key])
        speedup = None if key == "single" else median / base
        bound = None if key == "single" else bounds.get(key)
        note = notes[key]
        if bound and side and key in SIDE_BOUNDED:
            note += f"; limite: o menor entre {bound:.2f}x (núcleos) e o lado a lado ({side:.2f}x)"
            bound = effective_bound(bound, side)
        rows[key] = report.add(
            Measurement(SECTION, approach, IPS, values[key], speedup, bound, note, True)
        )
    report.conclude(SECTION, target_line(rows.get("data_steady"), cpu))


def cpu_line(shares: dict[str, float]) -> str:
    """``para onde foi a CPU no trecho: atores 78%, ...`` (as frações medidas), ou vazio."""
    if not shares:
        return ""
    parts = ", ".join(f"{role} {100 * share:.0f}%" for role, share in shares.items())
    return f"para onde foram os núcleos nesse trecho (CpuSampler): {parts}"


def target_line(steady: Measurement | None, cpu: str) -> str:
    """A meta do Ray Data, conferida com os números desta execução, numa linha."""
    goal = f"Ray Data com os atores no ar ≥ {100 * TARGET_OF_BOUND:.0f}% do limite medido"
    if steady is None or steady.of_bound is None:
        return f"{goal}: não conferida (linha não medida)"
    ok = steady.of_bound >= TARGET_OF_BOUND
    line = (f"{goal}: {steady.speedup:.2f}x = {100 * steady.of_bound:.1f}% de "
            f"{steady.bound:.2f}x → {verdict(ok)}")  # fmt: skip
    return line if ok or not cpu else f"{line}; {cpu}"


# ---------------------------------------------------------------- lado do processo de medida


def load_stream(scale: str, synthetic: bool) -> tuple[Any, str]:
    """``(imagens uint8 do fluxo, fonte)``; levanta ``DatasetUnavailableError`` sem dados."""
    import numpy as np

    from labutils import inference
    from labutils.data import DatasetUnavailableError

    try:
        images = inference.load_images(scale)
        return images.stream, images.source
    except DatasetUnavailableError:
        if not synthetic:
            raise
    n = sizes(scale).inference_images
    rng = np.random.default_rng(0)
    stream = rng.integers(0, 256, size=(n, *inference.IMAGE_SHAPE), dtype=np.uint8)
    return stream, f"imagens SINTÉTICAS ({n}, aleatórias): o CIFAR-100 real falta"


def measure(args: dict[str, Any]) -> dict[str, Any]:
    from labutils import inference
    from tools.bench import inference_runs

    inference_runs.configure_threads(1)
    import ray
    import tensorflow as tf

    from labutils.lesson05 import create_model
    from labutils.raytools import init_ray

    scale, repeats = args["scale"], args["repeats"]
    size = sizes(scale)
    stream, source = load_stream(scale, args["synthetic"])
    tf.keras.utils.set_random_seed(0)
    model = create_model()
    blob = inference_runs.model_bytes(model)
    batch = size.inference_batch
    task_images = stream[: size.inference_task_batches * batch]
    results: dict[str, list[float]] = {k: [] for k in ROWS}
    init_ray(dashboard=False)
    folder = Path(tempfile.mkdtemp(prefix="labutils-bench-inferencia-"))
    try:
        actors_n = inference.plan_pool(size.inference_actors)
        data_cpus = inference.data_actor_cpus(actors_n)
        inference.write_image_files(stream, folder / "imagens", files=2 * actors_n)
        inference_runs.warm_up_ray_data()
        reload_s = startup_s = 0.0
        data_cpu: dict[str, list[float]] = {}
        for _ in range(repeats):
            single = inference_runs.run_single(model, stream, batch)
            reference = {len(stream): single.predictions}
            rungs = {"single": single,
                     "all_threads": inference_runs.run_single_all_threads(blob, stream, batch),
                     "tasks": inference_runs.run_reload_tasks(blob, task_images, batch)}  # fmt: skip
            reload_s = rungs["tasks"].extra["reload_s"]
            reference[len(task_images)] = tuple(p[: len(task_images)] for p in single.predictions)
            actors = inference_runs.start_actors(blob, inference.plan_pool(actors_n))
            try:
                rungs["pool"] = inference_runs.run_actor_pool(actors, stream, batch)
                rungs["side"] = inference_runs.run_side_by_side(actors, stream, batch)
            finally:
                for actor in actors:
                    ray.kill(actor)
            inference.plan_pool(actors_n, data_cpus, reserve=inference.IO_CPUS)
            rungs["data"] = inference_runs.run_ray_data(
                blob, folder / "imagens", folder / "previsoes", actors=actors_n,
                batch_size=batch, cpus=data_cpus,
            )  # fmt: skip
            for key, rung in rungs.items():
                inference.check_same_labels(reference[rung.images], rung.predictions, rung.name)
                results[key].append(rung.images_per_s)
            results["data_steady"].append(rungs["data"].extra["steady_images_per_s"])
            for role, share in rungs["data"].extra.items():
                if role.startswith("cpu:"):
                    data_cpu.setdefault(role[4:], []).append(share)
            startup_s = rungs["data"].extra["startup_s"]
        threads = int(rungs["all_threads"].extra["threads"])
        cores = usable_cpus()
        pooled = inference.cores_bound(actors_n, 1)  # processos de 1 thread lado a lado
        bounds = {
            "all_threads": inference.cores_bound(1, threads),
            **dict.fromkeys(("tasks", "pool", "side", "data", "data_steady"), pooled),
        }
        meta = {"images": len(stream), "batch": batch, "source": source, "threads": threads,
                "task_images": len(task_images), "reload_s": reload_s, "actors": actors_n,
                "data_cpus": data_cpus, "bounds": bounds, "cores": cores,
                "data_startup_s": startup_s,
                "data_cpu": {k: statistics.median(v) for k, v in data_cpu.items()}}  # fmt: skip
    finally:
        ray.shutdown()
    return {"meta": meta, "results": results}


def _main(argv: list[str]) -> int:
    from labutils.data import DatasetUnavailableError

    try:
        out = measure(json.loads(argv[0]))
    except DatasetUnavailableError as err:
        out = {"error": "DatasetUnavailableError: " + " ".join(str(err).split())}
    except Exception as err:  # a linha do relatório diz o que falhou
        out = {"error": f"{type(err).__name__}: {' '.join(str(err).split())[:400]}"}
    print(system.JSON_MARK + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
