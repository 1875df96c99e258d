"""Os degraus da inferência em lote da lição 06, como o benchmark os mede: cada um devolve um
:class:`Rung` (imagens, segundos, rótulos). A lição escreve estes mesmos degraus nas células
(a tarefa, o ator, o ``ActorPool`` e o pipeline do Ray Data); aqui ficam os do ``make bench``,
com o que só ele mede (os atores lado a lado, :meth:`Predictor.predict_from`).

Leitor do Ray Data (:func:`run_ray_data`): no Ray 2.60 o ``read_parquet`` usa por padrão o
leitor novo (DataSourceV2, ``ListFiles → ReadFiles``). Antes de ler, a listagem cria 32 atores
``FooterReader`` (um processo novo cada, para ler os rodapés dos arquivos): numa máquina de
2 núcleos, 12–20 s só subindo processos. E ele junta arquivos pequenos num bloco de até 128 MiB,
ignorando ``override_num_blocks``: só 1 ator do pool recebia lotes. Por isso o degrau desliga o
V2 (``DataContext.use_datasource_v2 = False``, a opção documentada do Ray) só nessa leitura.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labutils.inference import IMAGE_SHAPE, Preds, decode
from labutils.system import usable_cpus
from tools.lesson_code import load

#: classificar um lote (predict_batch e companhia), as threads do TF e o modelo em bytes são
#: escritos nas células da lição 06
LESSON_06 = load("06_inferencia_em_lote")
configure_threads = LESSON_06.configure_threads
model_bytes = LESSON_06.model_bytes
model_from_bytes = LESSON_06.model_from_bytes
batches = LESSON_06.batches
predict_batch = LESSON_06.predict_batch
predict_labels = LESSON_06.predict_labels


def predict_reloading(blob: bytes, images: np.ndarray, threads: int) -> tuple[Preds, float]:
    """Corpo da tarefa ingênua: recarrega o modelo a cada chamada. ``(previsões, s carregando)``."""
    configure_threads(threads)
    start = time.perf_counter()
    model = model_from_bytes(blob)
    loading = time.perf_counter() - start
    return predict_labels(model, images, len(images)), loading


class Predictor:
    """Carrega o modelo UMA vez (no construtor) e classifica lotes. Serve de ator
    (``ray.remote(Predictor)``) e de classe do ``map_batches`` (lotes ``{"id", "image"}``)."""

    def __init__(self, blob: bytes, threads: int = 1):
        start = time.perf_counter()
        self.threads = configure_threads(threads)
        self.model = model_from_bytes(blob)
        self.model.predict_on_batch(np.zeros((1, *IMAGE_SHAPE), np.float32))  # compila o grafo
        self.load_s = time.perf_counter() - start

    def predict(self, images: np.ndarray) -> Preds:
        return predict_batch(self.model, images)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Lote do Ray Data. ``t_start``/``t_end``: relógio (``time.time``) do início e do fim
        deste lote, repetido em cada linha: medem a vazão com os atores já no ar; ``load_s``: quanto
        o construtor deste ator levou (importar o TF, carregar e compilar o modelo)."""
        start = time.time()
        labels, confidence = self.predict(decode(batch["image"]))
        n, end = len(labels), time.time()
        stamps = {"t_start": start, "t_end": end, "load_s": self.load_s}
        out = {"id": batch["id"], "label": labels, "confidence": confidence}
        return out | {k: np.full(n, v) for k, v in stamps.items()}

    def predict_from(self, images: np.ndarray, batch_size: int, start_at: float) -> Any:
        """Espera até ``start_at`` (``time.time()``) e classifica ``images`` lote a lote, como o
        processo único: ``(início, fim, rótulos, confiança)``. Atores que recebem a mesma hora
        começam juntos (a medida de "processos lado a lado", sem Ray Data no caminho)."""
        time.sleep(max(0.0, start_at - time.time()))
        start = time.time()
        labels, confidence = predict_labels(self.model, images, batch_size)
        return start, time.time(), labels, confidence

    def info(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "threads": self.threads, "load_s": self.load_s}


@dataclass
class Rung:
    """Um degrau medido: quantas imagens, em quantos segundos, e os rótulos previstos."""

    name: str
    images: int
    seconds: float
    labels: np.ndarray
    confidence: np.ndarray
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def predictions(self) -> tuple[np.ndarray, np.ndarray]:
        return self.labels, self.confidence

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds


def run_single(model: Any, images: np.ndarray, batch_size: int, name: str = "") -> Rung:
    """Degrau 1: este processo classifica lote a lote (depois de um lote de aquecimento)."""
    predict_labels(model, images[:batch_size], batch_size)  # 1ª chamada compila o grafo
    start = time.perf_counter()
    labels, confidence = predict_labels(model, images, batch_size)
    seconds = time.perf_counter() - start
    return Rung(name or "1 processo (predict_on_batch)", len(images), seconds, labels, confidence)


def _single_in_worker(blob: bytes, images: np.ndarray, batch_size: int, threads: int) -> Any:
    used = configure_threads(threads)
    rung = run_single(model_from_bytes(blob), images, batch_size, f"1 processo, {used} threads")
    rung.note, rung.extra = (
        f"processo novo, sem limite de threads: o TF usou {used}",
        {"threads": used},
    )
    return rung


def run_single_all_threads(blob: bytes, images: np.ndarray, batch_size: int) -> Rung:
    """Referência: um processo novo com as threads padrão do TF (todos os núcleos)."""
    import ray

    cores = usable_cpus()
    cpus = min(float(cores), float(ray.cluster_resources().get("CPU", 1.0)))
    task = ray.remote(num_cpus=cpus, max_calls=1)(_single_in_worker)  # max_calls: processo único
    return ray.get(task.remote(blob, images, batch_size, 0))


def run_reload_tasks(
    blob: bytes, images: np.ndarray, batch_size: int, *, threads: int = 1, cpus: float = 1
) -> Rung:
    """Degrau 2: uma tarefa Ray por lote, cada uma recarregando o modelo."""
    import ray

    task = ray.remote(num_cpus=cpus)(predict_reloading)
    blob_ref = ray.put(blob)  # uma cópia no object store, não uma por tarefa
    start = time.perf_counter()
    out = ray.get([task.remote(blob_ref, b, threads) for b in batches(images, batch_size)])
    seconds = time.perf_counter() - start
    loading = sum(s for _, s in out)
    note = f"{len(out)} tarefas; {loading:.1f} s somados só recarregando o modelo"
    labels, confidence = (np.concatenate([p[i] for p, _ in out]) for i in (0, 1))
    extra = {"tasks": len(out), "reload_s": loading}
    name = "tarefas Ray (recarregam o modelo)"
    return Rung(name, len(images), seconds, labels, confidence, note, extra)


def start_actors(blob: bytes, n: int, *, threads: int = 1, cpus: float = 1) -> list[Any]:
    """Cria ``n`` atores :class:`Predictor` e espera todos carregarem o modelo."""
    import ray

    actor = ray.remote(num_cpus=cpus)(Predictor)
    blob_ref = ray.put(blob)
    actors = [actor.remote(blob_ref, threads) for _ in range(n)]
    ray.get([a.info.remote() for a in actors])
    return actors


def run_actor_pool(actors: list[Any], images: np.ndarray, batch_size: int) -> Rung:
    """Degrau 3: ``ray.util.ActorPool`` distribui os lotes entre atores já carregados."""
    from ray.util import ActorPool

    pool = ActorPool(actors)
    start = time.perf_counter()
    out = list(pool.map(lambda a, b: a.predict.remote(b), batches(images, batch_size)))
    seconds = time.perf_counter() - start
    labels, confidence = (np.concatenate([p[i] for p in out]) for i in (0, 1))
    name = f"pool de {len(actors)} atores (modelo carregado 1 vez)"
    return Rung(name, len(images), seconds, labels, confidence, f"lote de {batch_size}")


def run_side_by_side(actors: list[Any], images: np.ndarray, batch_size: int) -> Rung:
    """O limite que a máquina dá na prática: cada ator já carregado recebe sua parte das imagens
    (no object store antes de medir) e todos começam no mesmo instante; nada mais roda. Mede
    ``len(images)`` / (fim do último − início do primeiro)."""
    import ray

    parts = [ray.put(p) for p in np.array_split(images, len(actors))]
    start_at = time.time() + 0.5  # todos os pedidos chegam antes dessa hora
    calls = [
        a.predict_from.remote(p, batch_size, start_at) for a, p in zip(actors, parts, strict=True)
    ]
    out = ray.get(calls)
    seconds = max(o[1] for o in out) - min(o[0] for o in out)
    labels, confidence = (np.concatenate([o[i] for o in out]) for i in (2, 3))
    name = f"{len(actors)} atores lado a lado (cada um com sua parte, sem Ray Data)"
    return Rung(name, len(images), seconds, labels, confidence, f"lote de {batch_size}")


def run_ray_data(
    blob: bytes, images_dir: Path, out_dir: Path, *, actors: int, batch_size: int,
    threads: int = 1, cpus: float = 1,
) -> Rung:  # fmt: skip
    """Degrau 4: ``read_parquet`` → ``map_batches(Predictor)`` → ``write_parquet``, e a leitura.

    ``seconds`` vai do início ao fim (inclui subir os atores, ler e gravar). ``extra`` traz o
    que os próprios atores mediram (:meth:`Predictor.__call__`): ``startup_s`` até o 1º lote
    começar (``load_s`` dele no construtor do ator mais lento), ``steady_s`` do 1º lote ao fim do
    último e ``compute_s`` somado dentro dos lotes; ``cpu:PAPEL``, a fração dos núcleos que cada
    papel de :data:`CPU_ROLES` usou nesse trecho (:class:`CpuSampler`)."""
    import logging

    import ray

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # notebook sem barras
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    with CpuSampler() as cpu:  # a 1ª e a última amostra ficam fora do tempo medido
        wall, start = time.time(), time.perf_counter()
        predictions = read_images(images_dir, blocks=4 * actors).map_batches(
            Predictor,
            fn_constructor_kwargs={"blob": blob, "threads": threads},
            compute=ray.data.ActorPoolStrategy(size=actors),
            batch_size=batch_size,
            num_cpus=cpus,
            batch_format="numpy",
            udf_modifying_row_count=False,  # uma linha de saída por imagem
        )
        predictions.write_parquet(str(out_dir), mode="overwrite")
        seconds = time.perf_counter() - start
    back = read_predictions(out_dir)
    labels, confidence = back["label"].to_numpy(), back["confidence"].to_numpy()
    first, last = back["t_start"].min(), back["t_end"].max()
    per_batch = back.drop_duplicates(["t_start", "t_end"])
    extra = {"startup_s": first - wall, "steady_s": last - first,
             "compute_s": float((per_batch["t_end"] - per_batch["t_start"]).sum()),
             "load_s": float(back["load_s"].max()),
             "steady_images_per_s": len(back) / (last - first),
             **{f"cpu:{role}": share for role, share in cpu.shares(first, last).items()}}  # fmt: skip
    note = (f"lote de {batch_size}; lê e grava Parquet; {extra['startup_s']:.1f} s até o 1º "
            f"lote; com os atores no ar: {extra['steady_images_per_s']:,.0f} imagens/s")  # fmt: skip
    name = f"Ray Data ({actors} atores)"
    return Rung(name, len(back), seconds, labels, confidence, note, extra)


# ---------------------------------------------------------------- para onde vai a CPU

#: os papéis da CPU no trecho do Ray Data com os atores no ar, na ordem do relatório
CPU_ROLES = ("atores (Predictor)", "leitura e gravação (tarefas do Ray Data)",
             "driver (executor do Ray Data, este processo)", "Ray (GCS, raylet, painel, agentes)",
             "outros processos do Ray", "fora do Ray", "ociosa")  # fmt: skip
#: pedaços da linha de comando dos processos de sistema do Ray
RAY_SYSTEM = ("ray/dashboard", "log_monitor", "autoscaler/_private/monitor", "runtime_env/agent",
              "ray::DashboardAgent", "ray::RuntimeEnvAgent")  # fmt: skip


def cpu_role(pid: int, name: str, cmdline: str) -> str:
    """O papel de um processo nesta máquina durante o Ray Data (um de :data:`CPU_ROLES`). Um
    processo de trabalho do Ray muda de nome (``ray::IDLE`` → ``ray::MapWorker(...)``): o papel
    é lido de novo a cada amostra."""
    if pid == os.getpid():
        return CPU_ROLES[2]
    if "Predictor" in cmdline or "MapWorker" in cmdline:
        return CPU_ROLES[0]
    if cmdline.startswith("ray::") and ("Read" in cmdline or "Write" in cmdline):
        return CPU_ROLES[1]
    if name in ("gcs_server", "raylet") or any(part in cmdline for part in RAY_SYSTEM):
        return CPU_ROLES[3]
    if cmdline.startswith("ray::") or "/ray/" in cmdline:
        return CPU_ROLES[4]
    return CPU_ROLES[5]


class CpuSampler:
    """Amostra, a cada ``every`` s numa thread, o tempo de CPU (usuário + sistema) de cada
    processo da máquina e o ocioso dos núcleos deste processo (``psutil``), para dizer depois,
    medido, para onde foram os núcleos num trecho (:meth:`shares`). Cada amostra custa ~6 ms de
    CPU com ~70 processos (~2% de um núcleo a cada 0,25 s), contados no driver. Use como
    ``with CpuSampler() as cpu:``."""

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self._cpus = sorted(os.sched_getaffinity(0))  # os núcleos deste processo
        self._stamps: list[float] = []
        self._idle: list[float] = []
        #: PID → (hora em que nasceu, [(hora, CPU acumulada, papel)])
        self._procs: dict[int, tuple[float, list[tuple[float, float, str]]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        import psutil

        now = time.time()
        per_cpu = psutil.cpu_times(percpu=True)
        self._stamps.append(now)
        self._idle.append(
            sum(per_cpu[i].idle + getattr(per_cpu[i], "iowait", 0.0) for i in self._cpus)
        )
        for proc in psutil.process_iter(["name", "cmdline", "cpu_times", "create_time"]):
            info = proc.info
            if info["cpu_times"] is None:
                continue  # sumiu ou não se pode ler
            cpu = info["cpu_times"].user + info["cpu_times"].system
            role = cpu_role(proc.pid, info["name"] or "", " ".join(info["cmdline"] or []))
            self._procs.setdefault(proc.pid, (info["create_time"] or 0.0, []))[1].append(
                (now, cpu, role)
            )

    def shares(self, start: float, end: float) -> dict[str, float]:
        """A fração de ``núcleos × (end − start)`` que cada papel de :data:`CPU_ROLES` usou
        entre ``start`` e ``end`` (relógio ``time.time``). Entre duas amostras, a CPU de um
        processo conta proporcionalmente à parte do intervalo dentro do trecho, para o papel
        que ele tinha na amostra seguinte — ou na anterior, se era ator ou leitura/gravação e voltou
        a ser um processo qualquer do Ray (``ray::IDLE``) no meio do intervalo)."""
        span = len(self._cpus) * (end - start)
        if span <= 0:
            raise ValueError(f"trecho vazio: de {start} a {end}.")
        used = dict.fromkeys(CPU_ROLES, 0.0)
        for created, samples in self._procs.values():
            if 0 < created < samples[0][0]:  # nasceu entre amostras: partiu de 0
                samples = [(created, 0.0, samples[0][2]), *samples]
            for (t0, c0, r0), (t1, c1, r1) in itertools.pairwise(samples):
                role = r0 if r1 == CPU_ROLES[4] and r0 in CPU_ROLES[:2] else r1
                used[role] += (c1 - c0) * _overlap(t0, t1, start, end)
        for (t0, c0), (t1, c1) in itertools.pairwise(zip(self._stamps, self._idle, strict=True)):
            used[CPU_ROLES[-1]] += (c1 - c0) * _overlap(t0, t1, start, end)
        return {role: value / span for role, value in used.items()}


def _overlap(t0: float, t1: float, start: float, end: float) -> float:
    """A fração do intervalo ``[t0, t1]`` que cai dentro de ``[start, end]``."""
    if t1 <= t0:
        return 0.0
    return max(0.0, min(t1, end) - max(t0, start)) / (t1 - t0)


def warm_up_ray_data() -> None:
    """O 1º uso do Ray Data num processo sobe os atores de sistema dele (estatísticas, autoscaling,
    localização dos atores: ~14 s de CPU somados, medidos aqui). Rode antes de medir, para que
    eles não disputem os núcleos com a 1ª medida."""
    import ray

    ray.data.DataContext.get_current().enable_progress_bars = False
    ray.data.range(1).materialize()


def read_images(images_dir: Path, blocks: int) -> Any:
    """``read_parquet`` das imagens em ``blocks`` blocos, com o leitor V1 (veja o início do
    módulo): cada bloco vai inteiro a um ator, então menos blocos que atores deixa ator parado."""
    import ray

    ctx = ray.data.DataContext.get_current()
    v2, ctx.use_datasource_v2 = ctx.use_datasource_v2, False
    try:
        return ray.data.read_parquet(str(images_dir), override_num_blocks=blocks)
    finally:
        ctx.use_datasource_v2 = v2


def read_predictions(out_dir: Path) -> Any:
    """As previsões gravadas em Parquet, em ordem de ``id`` (um ``pandas.DataFrame``)."""
    import pandas as pd

    return pd.read_parquet(out_dir).sort_values("id", ignore_index=True)
