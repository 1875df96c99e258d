"""Autoverificação da função de treino de cada worker, em segundos e sem o Ray.

:func:`check_training_function` roda a função do aluno em 2 processos locais, cada um com o seu
``TF_CONFIG`` (o que o Ray Train faria), com um CIFAR-100 de mentira e pequeno, cujas imagens
trazem o número do exemplo nos pixels, e **um passo** em cada ``model.fit``. Em cada processo,
:func:`_observe` troca ``ray.train.report``/``get_context``/``get_checkpoint`` por versões que só
anotam, e o ``fit`` por um que anota o que recebeu (a estratégia do modelo, o tamanho do lote e
os exemplos que a estratégia entregaria a este worker numa época) antes de treinar o passo.
O driver compara o que os dois processos anotaram.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from labutils.multiworker.feedback import CheckFailed, TodoNotDone, ok, unfinished

#: exemplos do CIFAR de mentira (10% viram a validação) e limite de tempo da verificação
_EXAMPLES, _TIMEOUT_S = 300, 240.0
_STARTUP = "Collective ops must be configured at program startup"


def _tiny_cifar(scale: str | None = None, **_: Any) -> Any:
    """Um ``Cifar100`` pequeno: a imagem ``i`` guarda ``i`` nos pixels (0, 0, 0) e (0, 0, 1)."""
    import numpy as np
    import tensorflow as tf

    from labutils.data import Cifar100

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(_EXAMPLES, 32, 32, 3), dtype=np.uint8)
    ids = np.arange(_EXAMPLES)
    images[:, 0, 0, 0], images[:, 0, 0, 1] = ids % 256, ids // 256
    data = tf.data.Dataset.from_tensor_slices((images, (ids % 100).astype("int64")))
    return Cifar100(data, data, None, _EXAMPLES, _EXAMPLES, True, "numerado (verificação)")


def _ids(images: Any) -> list[int]:
    pixels = (images.numpy()[:, 0, 0, :2] * 255).round().astype(int)
    return [int(a + 256 * b) for a, b in pixels]


def _observe(fn: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Roda ``fn(config)`` NESTE processo (um worker), anotando o que ela fez."""
    from unittest import mock

    import ray.train
    import tensorflow as tf

    import labutils.data
    from labutils import config as lab_config
    from labutils.multiworker.worker_checks import _as_the_strategy_sees_it
    from labutils.multiworker.workers import strategy_name

    cluster = lab_config.tf_config()
    num_workers, rank = len(cluster["cluster"]["worker"]), cluster["task"]["index"]
    seen: dict[str, Any] = {"rank": rank, "fits": [], "reports": [], "weights": None}

    def report(metrics: dict, checkpoint: Any = None, **_: Any) -> None:
        files: list[str] = []
        if checkpoint is not None:
            with checkpoint.as_directory() as folder:
                files = sorted(os.listdir(folder))
        seen["reports"].append({"metrics": sorted(metrics), "files": files})

    real_fit = tf.keras.Model.fit

    def fit(model: Any, x: Any = None, *args: Any, **kwargs: Any) -> Any:
        strategy = model.distribute_strategy
        entry = {"strategy": strategy_name(strategy), "replicas": strategy.num_replicas_in_sync}
        if isinstance(x, tf.data.Dataset):
            entry["batch"] = int(next(iter(x.take(1)))[0].shape[0])
            view = _as_the_strategy_sees_it(x, num_workers, rank, entry["batch"])
            entry["ids"] = [i for images, _ in view for i in _ids(images)]
            x = x.take(1)  # um passo basta
            if isinstance(kwargs.get("validation_data"), tf.data.Dataset):
                kwargs["validation_data"] = kwargs["validation_data"].take(1)
        seen["fits"].append(entry)
        history = real_fit(model, x, *args, **kwargs)
        seen["weights"] = [float(abs(w).sum()) for w in model.get_weights()]
        return history

    context = SimpleNamespace(
        get_world_rank=lambda: rank,
        get_world_size=lambda: num_workers,
        get_local_rank=lambda: 0,
        get_local_world_size=lambda: 1,
        get_node_rank=lambda: rank,
    )
    for name, value in list(getattr(fn, "__globals__", {}).items()):
        if value is labutils.data.load_cifar100:  # o nome que o notebook usar
            fn.__globals__[name] = _tiny_cifar
    with (
        mock.patch.object(ray.train, "report", report),
        mock.patch.object(ray.train, "get_context", lambda: context),
        mock.patch.object(ray.train, "get_checkpoint", lambda: None),
        mock.patch.object(labutils.data, "load_cifar100", _tiny_cifar),
        mock.patch.object(tf.keras.Model, "fit", fit),
    ):
        fn(config)
    return seen


def _run(fn: Any, config: dict[str, Any], num_workers: int) -> list[dict[str, Any]]:
    from labutils.multiworker.by_hand import launch_by_hand

    def observed(cfg: dict[str, Any]) -> dict[str, Any]:
        return _observe(fn, cfg)

    try:
        runs = launch_by_hand(
            observed, config, num_workers=num_workers, timeout_s=_TIMEOUT_S, raise_on_error=False
        )
    except TimeoutError:
        raise CheckFailed(
            f"Os {num_workers} workers travaram (mais de {_TIMEOUT_S:g} s num passo): um deles "
            "espera o outro numa operação coletiva. Todos os workers devem fazer a mesma "
            "sequência: criar a estratégia, model.fit, model.save, ray.train.report."
        ) from None
    for run in runs:
        error = run["error"]
        if error and _STARTUP in error:
            raise CheckFailed(
                "A MultiWorkerMirroredStrategy não foi a primeira operação do TensorFlow do "
                'worker ("Collective ops must be configured at program startup"): crie-a na '
                "1ª linha da função, antes de carregar os dados ou criar qualquer tensor."
            )
        if error:
            lines = error.strip().splitlines()
            if "TodoNotDone" in lines[-1]:
                raise TodoNotDone(lines[-1].split("TodoNotDone: ")[-1])
            tail = "\n".join(lines[-8:])
            raise CheckFailed(
                f"A função de treino falhou no worker {run['tf_config']['task']['index']} "
                f"(o fim do traceback dele):\n{tail}"
            )
    return [run["value"] for run in runs]


def _verdict(seen: list[dict[str, Any]], num_workers: int, global_batch: int) -> None:
    from labutils.multiworker.worker_checks import _compare

    for worker in seen:
        rank, fits = worker["rank"], worker["fits"]
        if not fits:
            raise CheckFailed(f"O worker {rank} não chamou model.fit: treine a cada época.")
        used = fits[0]
        if used["strategy"].startswith("padrão"):
            raise CheckFailed(
                f"O modelo do worker {rank} foi criado FORA de strategy.scope(): cada worker "
                "treinaria sozinho, sem somar gradientes. Crie e compile o modelo dentro de "
                "`with strategy.scope():` (o build_model do TODO 2)."
            )
        if used["strategy"] != "MultiWorkerMirroredStrategy" or used["replicas"] != num_workers:
            raise CheckFailed(
                f"O modelo do worker {rank} usa {used['strategy']} com {used['replicas']} "
                f"réplica(s); esperado MultiWorkerMirroredStrategy com {num_workers} (uma por "
                "worker): só ela soma os gradientes entre processos."
            )
        if used.get("batch") != global_batch:
            raise CheckFailed(
                f"O worker {rank} treinou com lotes de {used.get('batch')} exemplos; esperado o "
                f"lote GLOBAL, {global_batch} (lote por worker × {num_workers} workers): a "
                "estratégia divide cada lote global entre os workers."
            )
    ids = [worker["fits"][0]["ids"] for worker in seen]
    _compare(ids, range(_EXAMPLES // 10, _EXAMPLES), "treino", num_workers)
    for worker in seen:
        rank, reports = worker["rank"], worker["reports"]
        if len(reports) != len(worker["fits"]):
            raise CheckFailed(
                f"O worker {rank} chamou ray.train.report {len(reports)} vez(es) em "
                f"{len(worker['fits'])} época(s); esperado 1 por época em TODOS os workers. O "
                "report é uma barreira: se só o rank 0 o chama, ele espera os outros para sempre."
            )
        files = reports[0]["files"]
        if not files:
            raise CheckFailed(
                f"O worker {rank} reportou sem checkpoint (ou com a pasta vazia): passe "
                "checkpoint=ray.train.Checkpoint.from_directory(pasta) em todos os workers."
            )
        if not {"loss", "accuracy", "epoch"} <= set(reports[0]["metrics"]):
            raise CheckFailed(
                f"O worker {rank} reportou {reports[0]['metrics']}: inclua 'loss', 'accuracy' "
                "(as métricas do fit) e 'epoch'."
            )
        wanted = {f"worker_{rank}.json"} | ({"model.keras"} if rank == 0 else set())
        if not wanted <= set(files):
            raise CheckFailed(
                f"O checkpoint do worker {rank} tem {files}, faltam {sorted(wanted - set(files))}:"
                " prepare a pasta com multiworker.save_checkpoint(pasta, model, epoch=..., "
                "global_batch=...) antes do report."
            )
    first = seen[0]["weights"]
    for worker in seen[1:]:
        diff = max(abs(a - b) for a, b in zip(first, worker["weights"], strict=True))
        if diff > 1e-3 * max(1.0, max(first)):
            raise CheckFailed(
                f"Depois de um passo, os pesos do worker {worker['rank']} diferem dos do worker 0 "
                f"(até {diff:.3g}): os gradientes não foram somados entre os workers."
            )


def check_training_function(fn: Any, config: dict[str, Any], num_workers: int = 2) -> None:
    """Roda ``fn(config)`` em ``num_workers`` processos, um passo por época, e confere o que fez.

    Uma época (``config["epochs"]`` vira 1), ``config["batch_per_worker"]`` por worker. Falha
    com a mensagem do primeiro erro encontrado: estratégia criada tarde, modelo fora do escopo,
    outra estratégia, lote por worker no lugar do global, dados sem fatiar, report só no rank 0,
    report sem checkpoint.
    """
    from labutils.multiworker.launch import pending_todo

    unfinished(fn, "train_loop_per_worker")
    if not callable(fn):
        raise CheckFailed(f"Esperava a função de treino de cada worker, recebi {fn!r}.")
    pending = pending_todo(fn)
    if pending:  # nem inicia os processos
        raise TodoNotDone(pending)
    global_batch = int(config["batch_per_worker"]) * num_workers
    seen = _run(fn, {**config, "epochs": 1}, num_workers)
    _verdict(seen, num_workers, global_batch)
    ok(
        f"{num_workers} processos, 1 passo: estratégia criada antes de tudo, modelo no escopo, "
        f"lote global {global_batch}, fatias disjuntas, report com checkpoint em todos, "
        "pesos iguais depois do passo"
    )
