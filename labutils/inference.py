"""Inferência em lote em paralelo (lição 06): a CNN do CIFAR-100 classificando muitas imagens.

A escada: um processo (``model.predict``) → tarefas Ray que recarregam o modelo a cada chamada →
atores que carregam o modelo uma vez → Ray Data (``read_parquet`` → ``map_batches`` → Parquet).
Cada processo de trabalho calcula com ``threads`` threads (``configure_threads``), o número de CPUs
que reserva no Ray. Os workers nunca chamam o tfds (o mock só vale no processo que o ativa):
recebem o modelo em bytes e as imagens em arrays ou arquivos Parquet.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labutils.scale import sizes

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = Path(__file__).resolve().parents[1]
IMAGE_SHAPE = (32, 32, 3)
#: CPUs deixadas livres para as tarefas de leitura e gravação do Ray Data
IO_CPUS = 1.0


# ---------------------------------------------------------------- o modelo salvo


def model_path(scale: str | None = None) -> Path:
    """Onde a lição 05 grava o modelo treinado (um arquivo por escala) e a lição 06 o procura."""
    return ROOT / "results" / "models" / f"cifar100_cnn_{sizes(scale).scale}.keras"


def save_model(model: Any, scale: str | None = None, *, path: Path | None = None) -> Path:
    """Grava o modelo em :func:`model_path` (ou ``path``); nunca deixa um arquivo pela metade."""
    path = Path(path) if path else model_path(scale)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}-{os.getpid()}-parcial.keras")
    model.save(partial)
    os.replace(partial, path)
    return path


def load_or_train(scale: str | None = None, *, path: Path | None = None) -> tuple[Any, str]:
    """``(modelo, de onde veio)``: o da lição 05 se existir; senão um treino rápido, salvo à parte."""
    import tensorflow as tf

    path = Path(path) if path else model_path(scale)
    quick = path.with_name(path.stem + "_rapido.keras")
    for candidate, origin in ((path, "salvo pela lição 05"), (quick, "do treino rápido anterior")):
        if candidate.exists():
            try:
                return tf.keras.models.load_model(
                    candidate, compile=False
                ), f"modelo {origin}: {candidate}"
            except Exception as err:  # arquivo truncado ou de outra versão: treina de novo
                print(f"Não consegui ler {candidate} ({type(err).__name__}); treino rápido.")
    from labutils.data import load_cifar100
    from labutils.tfdata import get_data
    from labutils.tfmodel import create_model

    size = sizes(scale)
    cifar = load_cifar100(size.scale)
    tf.keras.utils.set_random_seed(0)
    train, _ = get_data(cifar.train, cifar.test, batch_per_replica=size.batch_per_replica, seed=0)
    model = create_model(cifar.num_classes)
    with warnings.catch_warnings():  # o get_data já embaralha; o aviso do fit não se aplica
        warnings.filterwarnings("ignore", message=".*`shuffle=True` was passed.*")
        model.fit(train, epochs=size.inference_train_epochs, verbose=0)
    save_model(model, path=quick)
    return model, (
        f"{path} não existe (rode a lição 05 antes para usar o modelo dela): treinei "
        f"{size.inference_train_epochs} época(s) rápida(s) em {cifar.num_train} imagens "
        f"e salvei em {quick}"
    )


def model_bytes(model: Any) -> bytes:
    """O modelo como bytes (arquivo ``.keras``): vai pelo object store a qualquer nó do cluster."""
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "modelo.keras"
        model.save(file)
        return file.read_bytes()


def model_from_bytes(blob: bytes) -> Any:
    """Recria o modelo a partir de :func:`model_bytes` (é isto que custa caro a cada carga)."""
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "modelo.keras"
        file.write_bytes(blob)
        return tf.keras.models.load_model(file, compile=False)  # só inferência: sem otimizador


# ---------------------------------------------------------------- imagens


@dataclass
class Images:
    """Imagens ``uint8`` N×32×32×3 do conjunto de teste, e o fluxo (o teste repetido)."""

    test: np.ndarray
    test_labels: np.ndarray
    stream: np.ndarray
    stream_labels: np.ndarray
    source: str


def load_images(scale: str | None = None) -> Images:
    """Teste do CIFAR-100 como arrays (``load_cifar100``) e um fluxo de ``inference_images``."""
    import tensorflow_datasets as tfds

    from labutils.data import load_cifar100

    size = sizes(scale)
    cifar = load_cifar100(size.scale, download=False)
    parts = list(tfds.as_numpy(cifar.test.batch(1024)))
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts]).astype(np.int64)
    index = np.arange(size.inference_images) % len(x)
    return Images(x, y, x[index], y[index], cifar.source)


def write_image_files(images: np.ndarray, folder: Path, files: int) -> Path:
    """Grava as imagens em ``files`` arquivos Parquet (colunas ``id`` e ``image`` em bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    ids = np.arange(len(images))
    for k, part in enumerate(np.array_split(ids, files)):
        column = pa.array([images[i].tobytes() for i in part], type=pa.binary())
        pq.write_table(pa.table({"id": part, "image": column}), folder / f"imagens-{k:04d}.parquet")
    return folder


def decode(column: Any) -> np.ndarray:
    """Bytes de cada imagem (coluna ``image`` do Parquet) → array ``uint8`` N×32×32×3."""
    return np.frombuffer(b"".join(column), dtype=np.uint8).reshape(-1, *IMAGE_SHAPE)


# ---------------------------------------------------------------- o que roda em cada processo


def batches(images: np.ndarray, batch_size: int) -> list[np.ndarray]:
    return [images[i : i + batch_size] for i in range(0, len(images), batch_size)]


def configure_threads(threads: int) -> int:
    """Limita o TF deste processo a ``threads`` threads (0 = padrão) e devolve o número em vigor.

    Só vale antes da 1ª operação do TF; depois, nada muda e o número devolvido diz a verdade."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass
    return tf.config.threading.get_intra_op_parallelism_threads() or len(os.sched_getaffinity(0))


def predict_labels(model: Any, images: np.ndarray, batch_size: int) -> np.ndarray:
    """Classe mais provável de cada imagem ``uint8`` (normalizada como em ``tfdata.scale``)."""
    probs = model.predict(images.astype(np.float32) / 255.0, batch_size=batch_size, verbose=0)
    return probs.argmax(axis=1).astype(np.int64)


def predict_reloading(blob: bytes, images: np.ndarray, threads: int) -> tuple[np.ndarray, float]:
    """Corpo da tarefa ingênua: recarrega o modelo a cada chamada. ``(rótulos, s carregando)``."""
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

    def predict(self, images: np.ndarray) -> np.ndarray:
        probs = self.model.predict_on_batch(images.astype(np.float32) / 255.0)
        return np.asarray(probs).argmax(axis=1).astype(np.int64)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"id": batch["id"], "label": self.predict(decode(batch["image"]))}

    def info(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "threads": self.threads, "load_s": self.load_s}


# ---------------------------------------------------------------- a escada, do lado do driver


@dataclass
class Rung:
    """Um degrau medido: quantas imagens, em quantos segundos, e os rótulos previstos."""

    name: str
    images: int
    seconds: float
    labels: np.ndarray
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds


def run_single(model: Any, images: np.ndarray, batch_size: int, name: str = "") -> Rung:
    """Degrau 1: ``model.predict`` neste processo (depois de um lote de aquecimento)."""
    predict_labels(model, images[:batch_size], batch_size)  # 1ª chamada compila o grafo
    start = time.perf_counter()
    labels = predict_labels(model, images, batch_size)
    seconds = time.perf_counter() - start
    return Rung(name or "1 processo (model.predict)", len(images), seconds, labels)


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

    cores = len(os.sched_getaffinity(0))
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
    labels = np.concatenate([labels for labels, _ in out])
    extra = {"tasks": len(out), "reload_s": loading}
    return Rung("tarefas Ray (recarregam o modelo)", len(images), seconds, labels, note, extra)


def plan_pool(wanted: int | None, cpus_per_actor: float = 1.0, *, reserve: float = 0.0) -> int:
    """Quantos atores de ``cpus_per_actor`` CPUs cabem nas CPUs livres, deixando ``reserve``.

    ``wanted=None``: todos os que cabem. Se cabem menos que ``wanted`` (ou nenhum), levanta
    ``RuntimeError`` na hora, em vez de esperar para sempre. Espera até 10 s por CPUs que atores
    recém-encerrados ainda estejam devolvendo."""
    import ray

    if wanted is not None and (type(wanted) is not int or wanted < 1):
        raise ValueError(f"O número de atores deve ser um inteiro >= 1, recebi {wanted!r}.")
    if not (isinstance(cpus_per_actor, int | float) and cpus_per_actor > 0):
        raise ValueError(f"cpus_per_actor deve ser positivo, recebi {cpus_per_actor!r}.")
    need = wanted or 1
    total = float(ray.cluster_resources().get("CPU", 0.0))
    deadline = time.monotonic() + 10
    while True:
        free = float(ray.available_resources().get("CPU", 0.0))
        fits = math.floor((free - reserve) / cpus_per_actor + 1e-9)
        if fits >= need or need * cpus_per_actor + reserve > total or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if fits < need:
        extra = f" (mais {reserve:g} para ler e gravar)" if reserve else ""
        raise RuntimeError(
            f"O pool pede {need} ator(es) × {cpus_per_actor:g} CPU{extra}, mas há {free:g} CPU(s) "
            f"livre(s) de {total:g} no cluster: os atores esperariam para sempre. Peça menos "
            "atores ou menos CPUs por ator, encerre atores anteriores (ray.kill) ou junte mais nós."
        )
    return wanted or fits


def data_actor_cpus(actors: int, reserve: float = IO_CPUS) -> float:
    """CPUs de cada ator do Ray Data: até 1, deixando ``reserve`` para as tarefas de leitura e
    gravação (1 CPU cada, por padrão; sem elas, a listagem dos arquivos nunca começa)."""
    import ray

    total = float(ray.cluster_resources().get("CPU", 0.0))
    return max(0.05, min(1.0, round((total - reserve) / actors, 2)))


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
    return Rung(f"pool de {len(actors)} atores (modelo carregado 1 vez)", len(images), seconds,
                np.concatenate(out), f"lote de {batch_size}")  # fmt: skip


def run_ray_data(
    blob: bytes, images_dir: Path, out_dir: Path, *, actors: int, batch_size: int,
    threads: int = 1, cpus: float = 1,
) -> Rung:  # fmt: skip
    """Degrau 4: ``read_parquet`` → ``map_batches(Predictor)`` → ``write_parquet``, e a leitura."""
    import logging

    import ray

    ray.data.DataContext.get_current().enable_progress_bars = False  # notebook sem barras
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    start = time.perf_counter()
    ds = ray.data.read_parquet(str(images_dir), override_num_blocks=4 * actors)  # lotes p/ todos
    predictions = ds.map_batches(
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
    return Rung(f"Ray Data ({actors} atores)", len(back), seconds, back["label"].to_numpy(),
                f"lote de {batch_size}; lê e grava Parquet")  # fmt: skip


def read_predictions(out_dir: Path) -> Any:
    """As previsões gravadas em Parquet, em ordem de ``id`` (um ``pandas.DataFrame``)."""
    import pandas as pd

    return pd.read_parquet(out_dir).sort_values("id", ignore_index=True)


# ---------------------------------------------------------------- conferências


def check_same_labels(reference: np.ndarray, labels: np.ndarray, what: str) -> None:
    """Levanta ``AssertionError`` se ``labels`` não são exatamente os rótulos de referência."""
    reference, labels = np.asarray(reference), np.asarray(labels)
    if reference.shape != labels.shape:
        raise AssertionError(f"{what}: {labels.size} previsões, esperava {reference.size}.")
    wrong = np.flatnonzero(reference != labels)
    if wrong.size:
        raise AssertionError(
            f"{what}: {wrong.size} de {reference.size} rótulos diferem do processo único "
            f"(primeiros índices: {wrong[:5].tolist()})."
        )


def speedup_bound(workers: int, threads_per_worker: int, baseline_threads: int = 1) -> float:
    """Maior speedup possível sobre a linha de base: núcleos ocupáveis / núcleos da linha de base."""
    cores = len(os.sched_getaffinity(0))
    return min(cores, workers * threads_per_worker) / min(cores, baseline_threads)
