"""O exercício multi-worker (lição 07), o que não é o assunto dela (as autoverificações estão em
:mod:`labutils.multiworker.checks`). Não importa o TensorFlow: ``use_legacy_keras()`` roda antes.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labutils import config as lab_config
from labutils import system
from labutils.raytools import alive_nodes, wait_for_free

# ---------------------------------------------------------------- tf-keras
# O Keras 3 falha no ``model.fit`` sob a ``MultiWorkerMirroredStrategy`` (keras-team/keras#20585);
# ``TF_USE_LEGACY_KERAS=1`` no ambiente ANTES do import faz o ``tf.keras`` ser o tf-keras.

LEGACY_KERAS_ENV = {"TF_USE_LEGACY_KERAS": "1"}


def use_legacy_keras() -> None:
    """Faz ``tf.keras`` ser o tf-keras (Keras 2) neste processo. Chame antes de importar o TF."""
    import importlib.util

    if importlib.util.find_spec("tf_keras") is None:
        raise RuntimeError(
            "O pacote tf-keras não está instalado: `pip install tf-keras==2.21.0` "
            "(ou `make setup`). Sem ele o MultiWorkerMirroredStrategy não funciona no model.fit."
        )
    os.environ.update(LEGACY_KERAS_ENV)
    tf = sys.modules.get("tensorflow")
    if tf is not None and not getattr(tf.keras, "__name__", "").startswith("tf_keras"):
        raise RuntimeError(
            "O TensorFlow já foi importado neste kernel com o Keras 3 (TF_USE_LEGACY_KERAS só "
            "vale antes do import). Reinicie o kernel e rode as células do início."
        )


def runtime_env() -> dict[str, Any]:
    """``runtime_env`` do Ray para os workers: a variável chega antes do import do TF."""
    return {"env_vars": dict(LEGACY_KERAS_ENV)}


# ---------------------------------------------------------------- planejar os workers
@dataclass(frozen=True)
class WorkerPlan:
    """Quantos workers, com quais recursos, e em quais nós eles cabem."""

    num_workers: int
    use_gpu: bool
    resources_per_worker: dict[str, float]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    capacity: int = 0  # quantos workers desses o cluster comporta
    survives_node_loss: bool = False  # os workers cabem sem o nó mais forte?


def _fits(nodes: list[dict[str, Any]], need: dict[str, float]) -> int:
    """Quantos workers com os recursos ``need`` cabem, somando nó a nó."""
    total = 0
    for node in nodes:
        per_node = [int(node.get(k, 0.0) // v) for k, v in need.items() if v > 0]
        total += min(per_node) if per_node else 0
    return total


def plan_workers(
    num_workers: int,
    *,
    use_gpu: bool | None = None,
    cpus_per_worker: float = 1.0,
    wait_s: float = 15.0,
) -> WorkerPlan:
    """O plano de ``num_workers`` workers no cluster conectado (``use_gpu=None``: GPU se há uma
    por worker). ``RuntimeError`` se não cabem (o Ray Train esperaria para sempre) ou se os
    recursos seguem ocupados depois de ``wait_s`` s."""
    import ray

    system.check_int(num_workers, "num_workers")
    if not ray.is_initialized():
        raise RuntimeError("O Ray não está iniciado: rode antes a célula com init_ray(...).")
    nodes = alive_nodes()
    gpus = sum(n["GPU"] for n in nodes)
    if use_gpu is None:
        use_gpu = gpus >= num_workers
    need = {"CPU": float(cpus_per_worker), **({"GPU": 1.0} if use_gpu else {})}
    fits = _fits(nodes, need)
    listing = ", ".join(f"{n['ip']} ({n['CPU']:g} CPU, {n['GPU']:g} GPU)" for n in nodes)
    if fits < num_workers:
        raise RuntimeError(
            f"Pedido: {num_workers} workers com {need} cada, mas o cluster só comporta {fits} "
            f"({len(nodes)} nó(s): {listing}). Diminua num_workers ou cpus_per_worker, "
            + ("use use_gpu=False, " if use_gpu else "")
            + "ou junte mais nós ao cluster (`ray start --address=...`)."
        )
    # cabe no cluster; os recursos estão livres agora?
    free_now, free = wait_for_free({k: v * num_workers for k, v in need.items()}, wait_s)
    if not free_now:
        raise RuntimeError(
            f"O cluster comporta {num_workers} workers, mas os recursos estão ocupados "
            f"(livres: CPU={free.get('CPU', 0):g}, GPU={free.get('GPU', 0):g}): espere os "
            "outros trabalhos terminarem (veja o painel) e tente de novo."
        )
    # para recomeçar depois da queda de um nó, os workers têm de caber sem o nó mais forte
    without_biggest = sorted(nodes, key=lambda n: _fits([n], need))[:-1]
    survives = _fits(without_biggest, need) >= num_workers
    return WorkerPlan(num_workers, bool(use_gpu), need, nodes, fits, survives)


# ---------------------------------------------------------------- o checkpoint
# ``worker_<rank>.json`` na pasta do checkpoint: o ``TF_CONFIG``, o nó, a estratégia **que o
# modelo usa** e a época, de onde o treino recomeça.

WORKER_FILE = "worker_{rank}.json"


def strategy_name(strategy: Any) -> str:
    """Nome público da estratégia (a MultiWorkerMirroredStrategy é ``CollectiveAllReduceStrategy``)."""
    tf = sys.modules.get("tensorflow")
    for public in ("MultiWorkerMirroredStrategy", "MirroredStrategy", "OneDeviceStrategy"):
        cls = getattr(getattr(tf, "distribute", None), public, None)
        if cls is not None and type(strategy) is cls:
            return public
    name = type(strategy).__name__
    return "padrão (fora de strategy.scope())" if name == "_DefaultDistributionStrategy" else name


def describe_worker(model: Any, global_batch: int) -> dict[str, Any]:
    """O que ESTE worker recebeu e usou: TF_CONFIG, nó, processo, a estratégia do MODELO."""
    strategy = model.distribute_strategy
    tf_config = lab_config.tf_config()
    info: dict[str, Any] = {
        "rank": tf_config.get("task", {}).get("index"),
        "tf_config": tf_config,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "node_id": None,
        "strategy": strategy_name(strategy),
        "replicas": int(strategy.num_replicas_in_sync),
        "global_batch": int(global_batch),
    }
    try:
        import ray

        if ray.is_initialized():
            info["node_id"] = ray.get_runtime_context().get_node_id()
            info["rank"] = ray.train.get_context().get_world_rank()
    except Exception:  # fora do Ray (a verificação do TODO 3): fica o que o TF_CONFIG diz
        pass
    return info


def write_worker(directory: str | os.PathLike, info: dict[str, Any]) -> Path:
    """Grava ``info`` como ``worker_<rank>.json`` em ``directory`` (a pasta do checkpoint)."""
    path = Path(directory) / WORKER_FILE.format(rank=info["rank"])
    path.write_text(json.dumps(info, indent=1), encoding="utf-8")
    return path


def checkpoint_epoch(directory: str | os.PathLike) -> int:
    """A última época completa gravada num checkpoint (o ``epoch`` do ``worker_0.json``)."""
    path = Path(directory) / WORKER_FILE.format(rank=0)
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["epoch"])
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ValueError(
            f"O checkpoint em {directory} não diz a época ({path.name} sem 'epoch'): grave-a "
            "com write_worker antes do ray.train.report."
        ) from err


def read_workers(checkpoint: Any) -> list[dict[str, Any]]:
    """Lê os ``worker_<rank>.json`` de um ``ray.train.Checkpoint`` (ou de uma pasta)."""
    if hasattr(checkpoint, "as_directory"):
        with checkpoint.as_directory() as directory:
            return read_workers(directory)
    files = sorted(Path(checkpoint).glob(WORKER_FILE.format(rank="*")))
    infos = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    return sorted(infos, key=lambda i: i["rank"])


def workers_table(infos: list[dict[str, Any]]) -> Any:
    """Tabela (pandas): um worker por linha, com o TF_CONFIG que recebeu e o nó onde rodou."""
    import pandas as pd

    rows = []
    for info in infos:
        cfg = info.get("tf_config", {})
        rows.append(
            {
                "rank": info["rank"],
                "nó": (info.get("node_id") or "-")[:12],
                "host/pid": f"{info.get('host')}/{info.get('pid')}",
                "TF_CONFIG task": json.dumps(cfg.get("task")),
                "TF_CONFIG cluster.worker": ", ".join(cfg.get("cluster", {}).get("worker", [])),
                "estratégia": info.get("strategy"),
                "réplicas": info.get("replicas"),
                "lote global": info.get("global_batch"),
            }
        )
    return pd.DataFrame(rows)
