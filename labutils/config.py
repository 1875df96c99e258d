"""Configuração do laboratório, o único módulo que lê variáveis de ambiente: a escala
(``LABUTILS_SCALE``: ``full``, a da aula, ou ``smoke``, a do CI), com todos os tamanhos numa
tabela (:data:`_SIZES`); as pastas de dados, resultados e checkpoints; os padrões do Ray; e o
ensaio (``LABUTILS_SYNTHETIC_DATA=1``: dados sintéticos do tamanho real na escala ``full``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[1]

SCALE_ENV = "LABUTILS_SCALE"
DATA_DIR_ENV = "LABUTILS_DATA_DIR"
RESULTS_DIR_ENV = "LABUTILS_RESULTS_DIR"
TRAIN_STORAGE_ENV = "LABUTILS_TRAIN_STORAGE"
SYNTHETIC_ENV = "LABUTILS_SYNTHETIC_DATA"
SCALES = ("full", "smoke")


@dataclass(frozen=True)
class Sizes:
    """Tamanhos usados pelos notebooks numa escala."""

    scale: str
    #: grade de hiperparâmetros (n_estimators, max_depth) da lição 02
    grid: tuple[tuple[int, int], ...]
    #: exemplos do California Housing (``None`` = o conjunto inteiro, 20 640 linhas)
    housing_examples: int | None
    #: exemplos do CIFAR-100 usados no treino e no teste (``None`` = tudo)
    cifar_train_examples: int | None
    cifar_test_examples: int | None
    #: épocas de treino da lição 05 (MirroredStrategy)
    epochs: int
    #: lote por réplica (o lote global é este valor × número de réplicas)
    batch_per_replica: int
    #: workers e épocas do exercício multi-worker (lição 07)
    num_workers: int
    multiworker_epochs: int
    #: lição 03 (Ray Tune + ASHA): profundidades testadas, árvores de cada floresta no fim e
    #: árvores acrescentadas entre dois relatos ao Tune (o orçamento que o ASHA corta)
    asha_depths: tuple[int, ...]
    asha_trees: int
    asha_step: int
    #: lição 03, seção opcional: trials do Optuna (um algoritmo de busca) nas faixas da grade
    optuna_trials: int
    #: lição 06 (inferência em lote): imagens do fluxo classificado, lote de cada chamada ao
    #: modelo, lotes da varredura, atores (``None`` = quantos couberem nas CPUs livres) e épocas
    #: do treino rápido quando a lição 05 não deixou um modelo salvo
    inference_images: int
    inference_batch: int
    inference_batch_sweep: tuple[int, ...]
    inference_actors: int | None
    inference_train_epochs: int
    #: lotes que o degrau das tarefas que recarregam o modelo classifica (uma fatia do fluxo:
    #: cada lote custa uma recarga, e o fluxo inteiro levaria minutos)
    inference_task_batches: int
    #: lição 06, seção opcional: fluxos menores que ``inference_images``, medidos do início ao
    #: fim com o Ray Data e com um processo só (a partir de que tamanho o Ray Data compensa)
    inference_stream_sizes: tuple[int, ...]

    @property
    def is_smoke(self) -> bool:
        return self.scale == "smoke"


_SIZES = {
    "full": Sizes(
        scale="full",
        grid=((100, 10), (200, 15), (300, 20), (400, 25), (500, 30)),
        housing_examples=None,
        cifar_train_examples=None,
        cifar_test_examples=None,
        epochs=10,
        batch_per_replica=64,
        num_workers=2,
        multiworker_epochs=5,
        asha_depths=(30, 20, 16, 12, 8, 4),
        asha_trees=300,
        asha_step=50,
        optuna_trials=12,
        inference_images=100_000,
        inference_batch=256,
        inference_batch_sweep=(16, 64, 256, 1024),
        inference_actors=None,
        inference_train_epochs=2,
        inference_task_batches=16,
        inference_stream_sizes=(10_000, 30_000),
    ),
    "smoke": Sizes(
        scale="smoke",
        grid=((10, 4), (20, 6), (30, 8)),
        housing_examples=2_000,
        cifar_train_examples=512,
        cifar_test_examples=256,
        epochs=3,
        batch_per_replica=64,
        num_workers=2,
        multiworker_epochs=2,
        asha_depths=(8, 6, 4, 2),
        asha_trees=20,
        asha_step=5,
        optuna_trials=6,
        inference_images=1_024,
        inference_batch=128,
        inference_batch_sweep=(16, 64, 256),
        inference_actors=2,
        inference_train_epochs=1,
        inference_task_batches=4,
        inference_stream_sizes=(256,),
    ),
}


def pick(*, full: T, smoke: T, scale: str | None = None) -> T:
    """O valor da escala: ``pick(full=200, smoke=10)``, para tamanhos que só uma lição usa."""
    return full if sizes(scale).scale == "full" else smoke


def current_scale() -> str:
    """A escala em vigor (``full`` ou ``smoke``), lida de ``LABUTILS_SCALE``."""
    value = os.environ.get(SCALE_ENV, "").strip().lower() or "full"
    if value not in SCALES:
        raise ValueError(
            f"{SCALE_ENV}={value!r} não é uma escala válida. "
            f"Use uma destas: {', '.join(SCALES)} (ex.: export {SCALE_ENV}=smoke)."
        )
    return value


def sizes(scale: str | None = None) -> Sizes:
    """Os tamanhos da escala pedida (ou da escala em vigor)."""
    scale = current_scale() if scale is None else scale
    if scale not in _SIZES:
        raise ValueError(f"Escala desconhecida: {scale!r}. Use uma destas: {', '.join(SCALES)}.")
    return _SIZES[scale]


def synthetic_data() -> bool:
    """``True`` com ``LABUTILS_SYNTHETIC_DATA=1``: dados sintéticos do tamanho real (o ensaio)."""
    return os.environ.get(SYNTHETIC_ENV, "").strip() == "1"


# ---------------------------------------------------------------- pastas


def data_dir() -> Path:
    """Pasta dos dados: ``LABUTILS_DATA_DIR`` ou ``data/`` na raiz do repositório."""
    return Path(os.environ.get(DATA_DIR_ENV) or REPO_ROOT / "data").expanduser()


def results_dir() -> Path:
    """Pasta dos resultados (criada se faltar): ``LABUTILS_RESULTS_DIR`` ou ``results/``."""
    folder = Path(os.environ.get(RESULTS_DIR_ENV) or REPO_ROOT / "results").expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def train_storage() -> str:
    """Onde o Ray Train guarda checkpoints: ``LABUTILS_TRAIN_STORAGE`` ou ``results/ray_train``.
    Num cluster de várias máquinas, uma pasta que todos os nós veem (NFS) ou ``s3://...``."""
    value = os.environ.get(TRAIN_STORAGE_ENV)
    if value:
        return value
    path = results_dir() / "ray_train"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


# ---------------------------------------------------------------- Ray

#: o modo de autenticação do Ray em todos os processos (nó principal, workers, driver): o mesmo
#: em todos, senão um recusa o outro
RAY_AUTH_MODE_DEFAULT = "token"
#: No Ray 2.60 (ray-project/ray#62492), uma tarefa ou ator sem ``num_gpus`` vê todas as GPUs da
#: máquina: o TensorFlow dele tomaria a memória da GPU que o escalonador deu a outro. Com ``1``,
#: o Ray volta a lhe dar ``CUDA_VISIBLE_DEVICES=""``: só usa GPU quem a pediu.
HIDE_GPUS_ENV = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"
#: variáveis repassadas aos processos de trabalho do Ray (tarefas, atores, workers do Ray Train)
WORKER_ENV_VARS = (SCALE_ENV, DATA_DIR_ENV, SYNTHETIC_ENV, "TF_CPP_MIN_LOG_LEVEL", HIDE_GPUS_ENV)


def ray_address() -> str | None:
    """O endereço de cluster em ``RAY_ADDRESS`` (``None`` se vazio ou ausente)."""
    return os.environ.get("RAY_ADDRESS") or None


def ray_auth_mode() -> str | None:
    """O ``RAY_AUTH_MODE`` deste processo (``None`` se não definido)."""
    return os.environ.get("RAY_AUTH_MODE") or None


def auth_disabled_warning() -> str | None:
    """Aviso em português se a autenticação do Ray foi desligada neste ambiente."""
    if (ray_auth_mode() or "").lower() != "disabled":
        return None
    return (
        "RAY_AUTH_MODE=disabled: a autenticação por token do Ray está DESLIGADA. Qualquer "
        "máquina que alcance as portas do cluster pode rodar código nele. Use só numa máquina "
        "isolada; para ligar de novo: `unset RAY_AUTH_MODE` ou `export RAY_AUTH_MODE=token`."
    )


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Ambiente para um subprocesso: uma cópia do atual, com ``extra`` por cima."""
    return {**os.environ, **(extra or {})}


def tf_config() -> dict:
    """O ``TF_CONFIG`` deste processo (os workers e o índice deste), ou ``{}`` se ausente."""
    import json

    return json.loads(os.environ.get("TF_CONFIG") or "{}")


def ray_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Ambiente para um processo do Ray (``ray start``...): o atual, com o modo de autenticação
    padrão e sem estatísticas de uso."""
    env = {"RAY_USAGE_STATS_ENABLED": "0", **os.environ}
    env["RAY_AUTH_MODE"] = ray_auth_mode() or RAY_AUTH_MODE_DEFAULT
    return {**env, **(extra or {})}


def token_source() -> tuple[str, Path | None]:
    """De onde o Ray lê o token, na ordem dele: ``("env", None)`` para ``RAY_AUTH_TOKEN``;
    senão ``("path", arquivo)`` de ``RAY_AUTH_TOKEN_PATH`` ou ``~/.ray/auth_token``."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "env", None
    path_env = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path_env:
        return "path_env", Path(path_env).expanduser()
    return "path", Path.home() / ".ray" / "auth_token"


def token_from_env() -> str | None:
    """O token em ``RAY_AUTH_TOKEN``, se houver. É um segredo: nunca o imprima."""
    value = os.environ.get("RAY_AUTH_TOKEN")
    return value.strip() if value else None


def forwarded_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Variáveis que os workers do Ray precisam para ver a mesma escala e os mesmos dados."""
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(f"extra deve ser um dict {{nome: valor}}, recebi {extra!r}.")
    env = {name: os.environ[name] for name in WORKER_ENV_VARS if name in os.environ}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(extra or {})
    return env


def set_default_env() -> None:
    """Padrões do processo: token ligado, GPU só para quem a pede no Ray (:data:`HIDE_GPUS_ENV`)
    e TF quieto (um valor já definido é respeitado).

    O Ray lê ``RAY_AUTH_MODE`` ao ser importado; por isso ``import labutils``, antes do ``ray``,
    chama esta função. Com o ``ray`` já importado sem a variável, defini-la agora deixaria o
    driver sem token e seus processos com token (um recusaria o outro): nada muda, e um aviso
    diz como ligar o token.
    """
    import sys
    import warnings

    if "RAY_AUTH_MODE" not in os.environ and "ray" in sys.modules:
        warnings.warn(
            "O `ray` foi importado antes do `labutils`: a autenticação por token do Ray fica "
            "DESLIGADA neste processo. Para ligá-la, reinicie o kernel e importe `labutils` "
            "antes do `ray` (ou exporte RAY_AUTH_MODE=token antes de abrir o Jupyter).",
            stacklevel=2,
        )
    else:
        os.environ.setdefault("RAY_AUTH_MODE", RAY_AUTH_MODE_DEFAULT)
    os.environ.setdefault(HIDE_GPUS_ENV, "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
