"""Configuração do laboratório, o único módulo que lê o ambiente: a escala (``LABUTILS_SCALE``:
``full``, a da aula, ou ``smoke``, a do CI) e seus tamanhos, as pastas, os padrões do Ray e o
ensaio (``LABUTILS_SYNTHETIC_DATA=1``: dados sintéticos do tamanho real).
"""

from __future__ import annotations

import json
import os
import sys
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
#: o formato de máquina simulado: CPUs que o Ray declara e o tamanho do armazém de objetos
CPUS_ENV = "LABUTILS_CPUS"
OBJECT_STORE_ENV = "LABUTILS_OBJECT_STORE_MB"
#: o que o próprio Ray lê ao subir um nó (ray/_private/resource_and_label_spec.py): vale mais
#: que o num_cpus do ray.init, inclusive o de um ray.init() sem argumentos
RAY_RESOURCES_ENV = "RAY_OVERRIDE_RESOURCES"
SCALES = ("full", "smoke")


@dataclass(frozen=True)
class Sizes:
    """Tamanhos usados pelos notebooks numa escala (``None``: o conjunto inteiro)."""

    scale: str
    grid: tuple[tuple[int, int], ...]  # lição 02: (n_estimators, max_depth)
    housing_examples: int | None
    cifar_train_examples: int | None
    cifar_test_examples: int | None
    epochs: int  # lição 05
    batch_per_replica: int  # o lote global é este × o número de réplicas
    num_workers: int  # lição 07
    multiworker_epochs: int
    #: lição 03 (ASHA): profundidades, árvores no fim e árvores entre dois relatos ao Tune
    asha_depths: tuple[int, ...]
    asha_trees: int
    asha_step: int
    optuna_trials: int  # lição 03, seção opcional
    #: lição 06: imagens do fluxo, lote do modelo, lotes da varredura, atores (``None``: quantos
    #: couberem), épocas do treino rápido, lotes do degrau que recarrega o modelo e os fluxos
    #: menores da seção opcional
    inference_images: int
    inference_batch: int
    inference_batch_sweep: tuple[int, ...]
    inference_actors: int | None
    inference_train_epochs: int
    inference_task_batches: int
    inference_stream_sizes: tuple[int, ...]

    @property
    def is_smoke(self) -> bool:
        return self.scale == "smoke"


#: cada tamanho nas duas escalas, lado a lado: (full, smoke)
_SIZES = {
    "grid": (((100, 10), (200, 15), (300, 20), (400, 25), (500, 30)), ((10, 4), (20, 6), (30, 8))),
    "housing_examples": (None, 2_000),
    "cifar_train_examples": (None, 512),
    "cifar_test_examples": (None, 256),
    "epochs": (10, 3),
    "batch_per_replica": (64, 64),
    "num_workers": (2, 2),
    "multiworker_epochs": (5, 2),
    "asha_depths": ((30, 20, 16, 12, 8, 4), (8, 6, 4, 2)),
    "asha_trees": (300, 20),
    "asha_step": (50, 5),
    "optuna_trials": (12, 6),
    "inference_images": (100_000, 1_024),
    "inference_batch": (256, 128),
    "inference_batch_sweep": ((16, 64, 256, 1024), (16, 64, 256)),
    "inference_actors": (None, 2),
    "inference_train_epochs": (2, 1),
    "inference_task_batches": (16, 4),
    "inference_stream_sizes": ((10_000, 30_000), (256,)),
}
_BY_SCALE = {s: Sizes(s, **{k: v[i] for k, v in _SIZES.items()}) for i, s in enumerate(SCALES)}


def pick(*, full: T, smoke: T, scale: str | None = None) -> T:
    """O valor da escala: ``pick(full=200, smoke=10)``, para tamanhos que só uma lição usa."""
    return full if (scale or current_scale()) == "full" else smoke


def current_scale() -> str:
    """A escala em vigor (``full`` ou ``smoke``), lida de ``LABUTILS_SCALE``."""
    value = (env(SCALE_ENV) or "full").lower()
    if value not in SCALES:
        raise ValueError(
            f"{SCALE_ENV}={value!r} não é uma escala válida. "
            f"Use uma destas: {', '.join(SCALES)} (ex.: export {SCALE_ENV}=smoke)."
        )
    return value


def machine_shape() -> dict[str, int]:
    """O formato de máquina pedido: ``{"cpus": N}`` (``LABUTILS_CPUS``) e ``{"object_store_mb":
    M}`` (``LABUTILS_OBJECT_STORE_MB``; 2048 é o teto do macOS); vazio se nenhum."""
    shape = {}
    for key, name, low, example in (
        ("cpus", CPUS_ENV, 1, "8"),
        ("object_store_mb", OBJECT_STORE_ENV, 100, "2048"),
    ):
        if (value := env(name)) is None:
            continue
        if not value.isdigit() or int(value) < low:
            raise ValueError(
                f"{name}={value!r}: esperava um inteiro ≥ {low} (ex.: export {name}={example}); "
                f"para a máquina de verdade, `unset {name}`."
            )
        shape[key] = int(value)
    return shape


def ray_resources_override(shape: dict[str, int]) -> str | None:
    """O ``RAY_OVERRIDE_RESOURCES`` que faz o Ray declarar o formato ``shape``."""
    resources = {}
    if "cpus" in shape:
        resources["CPU"] = shape["cpus"]
    if "object_store_mb" in shape:
        resources["object_store_memory"] = shape["object_store_mb"] * 2**20
    return json.dumps(resources) if resources else None


def sizes(scale: str | None = None) -> Sizes:
    """Os tamanhos da escala pedida (ou da escala em vigor)."""
    return _BY_SCALE[scale or current_scale()]


def env(name: str) -> str | None:
    """A variável de ambiente ``name`` (``None`` se vazia ou ausente): ``env("RAY_ADDRESS")``."""
    return os.environ.get(name, "").strip() or None


def synthetic_data() -> bool:
    """``True`` com ``LABUTILS_SYNTHETIC_DATA=1``: dados sintéticos do tamanho real (o ensaio)."""
    return env(SYNTHETIC_ENV) == "1"


# ---------------------------------------------------------------- pastas


def data_dir() -> Path:
    """Pasta dos dados: ``LABUTILS_DATA_DIR`` ou ``data/`` na raiz do repositório."""
    return Path(env(DATA_DIR_ENV) or REPO_ROOT / "data").expanduser()


def results_dir() -> Path:
    """Pasta dos resultados (criada se faltar): ``LABUTILS_RESULTS_DIR`` ou ``results/``."""
    folder = Path(env(RESULTS_DIR_ENV) or REPO_ROOT / "results").expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def train_storage() -> str:
    """Onde o Ray Train grava: ``LABUTILS_TRAIN_STORAGE`` (num cluster, NFS ou s3) ou results/."""
    if value := env(TRAIN_STORAGE_ENV):
        return value
    path = results_dir() / "ray_train"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


# ---------------------------------------------------------------- Ray

#: o modo de autenticação do Ray, o mesmo em todos os processos (senão um recusa o outro)
RAY_AUTH_MODE_DEFAULT = "token"
#: No Ray 2.60 (ray-project/ray#62492), uma tarefa sem ``num_gpus`` vê todas as GPUs e o seu
#: TensorFlow tomaria a memória da de outro; com ``1``, só usa GPU quem a pediu.
HIDE_GPUS_ENV = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"
#: variáveis repassadas aos processos de trabalho do Ray (tarefas, atores, workers do Ray Train)
WORKER_ENV_VARS = (SCALE_ENV, DATA_DIR_ENV, SYNTHETIC_ENV, "TF_CPP_MIN_LOG_LEVEL", HIDE_GPUS_ENV)
#: Até onde o Python de quem entra no cluster precisa ser o do nó principal. O Ray exige o patch
#: (3.12.3 ≠ 3.12.8) e recusa; a sala exige o X.Y: o Ray então só avisa do patch diferente. Entre
#: patches do mesmo X.Y o bytecode e o pickle são os mesmos (`make classroom-check` confere).
PYTHON_MATCH_ENV = "RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL"
PYTHON_MATCH_DEFAULT = "minor"
#: No macOS (e no Windows) o `ray start --address` se recusa sem esta variável, e o Ray usa o
#: 127.0.0.1 como IP do nó: ninguém de fora o alcança (ray/_private/ray_constants.py).
MACOS_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def auth_disabled_warning() -> str | None:
    """O aviso, se a autenticação do Ray foi desligada neste ambiente."""
    if (env("RAY_AUTH_MODE") or "").lower() == "disabled":
        return (
            "RAY_AUTH_MODE=disabled: a autenticação por token do Ray está DESLIGADA e qualquer "
            "máquina que alcance as portas do cluster pode rodar código nele. Use só numa "
            "máquina isolada; para ligar: `export RAY_AUTH_MODE=token`."
        )
    return None


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Ambiente para um subprocesso: uma cópia do atual, com ``extra`` por cima."""
    return {**os.environ, **(extra or {})}


def tf_config() -> dict:
    """O ``TF_CONFIG`` deste processo (os workers e o índice deste), ou ``{}`` se ausente."""
    import json

    return json.loads(env("TF_CONFIG") or "{}")


def ray_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Ambiente de um ``ray start``: o atual, com a autenticação padrão e sem estatísticas."""
    auth = env("RAY_AUTH_MODE") or RAY_AUTH_MODE_DEFAULT
    defaults = {"RAY_USAGE_STATS_ENABLED": "0", PYTHON_MATCH_ENV: PYTHON_MATCH_DEFAULT}
    if is_macos():  # um nó de um cluster de várias máquinas (veja MACOS_CLUSTER_ENV)
        defaults[MACOS_CLUSTER_ENV] = "1"
    # o formato simulado vale para o Ray de um processo só; os nós de um `ray start` (o cluster
    # da sala, o LocalCluster) declaram o que as suas opções dizem
    here = {k: v for k, v in os.environ.items() if k != RAY_RESOURCES_ENV}
    return {**defaults, **here, "RAY_AUTH_MODE": auth, **(extra or {})}


def is_macos() -> bool:
    return sys.platform == "darwin"


def python_match_level() -> str:
    """``"minor"`` (o da sala) ou ``"patch"``: o que o Ray deste processo exige de quem entra."""
    return env(PYTHON_MATCH_ENV) or PYTHON_MATCH_DEFAULT


def allow_macos_cluster() -> None:
    """No macOS, antes do ``import ray``: este processo pode ser um nó ou driver de um cluster."""
    if is_macos():
        os.environ.setdefault(MACOS_CLUSTER_ENV, "1")


def token_source() -> tuple[str, Path | None]:
    """De onde o Ray lê o token, na ordem dele: ``("env", None)``, ``("path_env", arquivo de
    RAY_AUTH_TOKEN_PATH)`` ou ``("path", ~/.ray/auth_token)``."""
    if env("RAY_AUTH_TOKEN"):
        return "env", None
    if path_env := env("RAY_AUTH_TOKEN_PATH"):
        return "path_env", Path(path_env).expanduser()
    return "path", Path.home() / ".ray" / "auth_token"


def forwarded_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Variáveis que os workers do Ray precisam para ver a mesma escala e os mesmos dados."""
    forwarded = {name: os.environ[name] for name in WORKER_ENV_VARS if name in os.environ}
    return {"TF_CPP_MIN_LOG_LEVEL": "2", **forwarded, **(extra or {})}


def set_default_env() -> None:
    """Padrões do processo, sem mudar o já definido: token ligado, GPU só para quem a pede, TF
    quieto. Com o ``ray`` já importado sem ``RAY_AUTH_MODE``, defini-la agora faria o driver e
    seus processos se recusarem: só avisa."""
    import warnings

    if "RAY_AUTH_MODE" not in os.environ and "ray" in sys.modules:
        warnings.warn(
            "O `ray` foi importado antes do `labutils`: a autenticação por token fica DESLIGADA "
            "neste processo. Reinicie o kernel e importe `labutils` antes do `ray`.",
            stacklevel=2,
        )
    else:
        os.environ.setdefault("RAY_AUTH_MODE", RAY_AUTH_MODE_DEFAULT)
    os.environ.setdefault(HIDE_GPUS_ENV, "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault(PYTHON_MATCH_ENV, PYTHON_MATCH_DEFAULT)
    if override := ray_resources_override(machine_shape()):
        os.environ.setdefault(RAY_RESOURCES_ENV, override)
