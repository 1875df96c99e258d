"""O que cada worker recebeu e usou, gravado no checkpoint; retomar o treino de um checkpoint.

- :func:`describe_worker`: o ``TF_CONFIG``, o nó e a estratégia **que o modelo usa**
  (``model.distribute_strategy``, não um objeto de estratégia qualquer);
- :func:`write_worker` / :func:`read_workers` / :func:`workers_table`: ``worker_<rank>.json`` na
  pasta do checkpoint (o Ray Train junta os arquivos de todos os workers numa pasta só);
- :func:`save_checkpoint`: o que vai na pasta do checkpoint de uma época (modelo e worker);
- :func:`checkpoint_epoch` / :func:`resume`: recomeçar da época seguinte à gravada.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from labutils import config

WORKER_FILE = "worker_{rank}.json"


def strategy_name(strategy: Any) -> str:
    """Nome público da estratégia (``tf.distribute.X``): a classe da MultiWorkerMirroredStrategy
    chama-se internamente ``CollectiveAllReduceStrategy``."""
    tf = sys.modules.get("tensorflow")
    for public in ("MultiWorkerMirroredStrategy", "MirroredStrategy", "OneDeviceStrategy"):
        cls = getattr(getattr(tf, "distribute", None), public, None)
        if cls is not None and type(strategy) is cls:
            return public
    name = type(strategy).__name__
    return "padrão (fora de strategy.scope())" if name == "_DefaultDistributionStrategy" else name


def describe_worker(model: Any, global_batch: int) -> dict[str, Any]:
    """O que ESTE worker recebeu e usou: TF_CONFIG, nó, processo e a estratégia do MODELO.

    A estratégia vem de ``model.distribute_strategy``, a que o modelo realmente usa: um modelo
    criado fora de ``strategy.scope()`` aparece com a estratégia padrão (sem réplicas
    sincronizadas), mesmo que uma ``MultiWorkerMirroredStrategy`` exista no processo.
    """
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None:
        raise TypeError(
            f"describe_worker recebe o modelo Keras treinado (com .distribute_strategy), "
            f"recebi {type(model).__name__}."
        )
    tf_config = config.tf_config()
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
    except Exception:  # fora do Ray (treino "à mão"): fica o que o TF_CONFIG diz
        pass
    return info


def write_worker(directory: str | os.PathLike, info: dict[str, Any]) -> Path:
    """Grava ``info`` como ``worker_<rank>.json`` em ``directory`` (a pasta do checkpoint)."""
    path = Path(directory) / WORKER_FILE.format(rank=info["rank"])
    path.write_text(json.dumps(info, indent=1), encoding="utf-8")
    return path


def save_checkpoint(
    directory: str | os.PathLike, model: Any, *, epoch: int, global_batch: int
) -> dict[str, Any]:
    """Prepara a pasta do checkpoint de uma época, em QUALQUER worker: o modelo e o worker.

    Salvar sob a ``MultiWorkerMirroredStrategy`` é uma operação coletiva: todos os workers chamam
    ``model.save``; só o rank 0 salva em ``directory`` (``model.keras``), os outros numa pasta
    descartável. Cada worker grava ali o seu ``worker_<rank>.json`` (:func:`describe_worker`,
    com a época). Devolve essa descrição. O ``ray.train.report`` continua com quem chama.
    """
    import tempfile

    info = {**describe_worker(model, global_batch), "epoch": int(epoch)}
    with tempfile.TemporaryDirectory() as scratch:
        target = directory if info["rank"] in (0, None) else scratch
        model.save(os.path.join(target, "model.keras"))
    write_worker(directory, info if info["rank"] is not None else {**info, "rank": 0})
    return info


def checkpoint_epoch(directory: str | os.PathLike) -> int:
    """A última época completa gravada num checkpoint (o ``epoch`` do ``worker_0.json``).

    Ao retomar depois de uma falha, o treino continua na época seguinte a esta.
    """
    path = Path(directory) / WORKER_FILE.format(rank=0)
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["epoch"])
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ValueError(
            f"O checkpoint em {directory} não diz a época ({path.name} sem 'epoch'): grave "
            "{**info, 'epoch': ...} com multiworker.write_worker antes do ray.train.report."
        ) from err


def resume(checkpoint: Any, strategy: Any) -> tuple[Any, int]:
    """Retoma o treino de um ``ray.train.Checkpoint`` deste exercício: ``(modelo, próxima época)``.

    Carrega o ``model.keras`` com ``tf.keras.models.load_model`` (pesos **e** estado do
    otimizador; ``load_weights`` perderia o otimizador) dentro de ``strategy.scope()``, para que
    as variáveis nasçam espelhadas, e lê a época gravada (:func:`checkpoint_epoch`).
    """
    import tensorflow as tf

    if not hasattr(checkpoint, "as_directory"):
        raise TypeError(f"checkpoint deve ser um ray.train.Checkpoint, recebi {checkpoint!r}.")
    with checkpoint.as_directory() as directory, strategy.scope():
        path = Path(directory) / "model.keras"
        if not path.exists():
            raise ValueError(
                f"O checkpoint em {directory} não tem model.keras (só o rank 0 o grava)."
            )
        model = tf.keras.models.load_model(path)
        return model, checkpoint_epoch(directory) + 1


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
