"""Autoverificações das peças que rodam em cada worker, conferidas no driver em segundos.

Cada uma chama a função do aluno com dados ou objetos pequenos, sem iniciar workers:

- :func:`check_worker_datasets`: os dados de cada worker (2 e 3 workers, exemplos numerados)
  são disjuntos, cobrem o treino (e a validação) uma vez só e vêm em lotes globais;
- :func:`check_build_model`: o modelo nasce dentro de ``strategy.scope()`` (olhando
  ``model.distribute_strategy``) e a perda combina com a saída;
- :func:`check_reporting`: todos os workers chamam ``ray.train.report`` com checkpoint (é uma
  barreira), simulando cada rank.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

from labutils.multiworker.feedback import CheckFailed, ok, unfinished

#: tamanhos do teste dos dados: poucos exemplos numerados (o número vai no rótulo)
_TRAIN_IDS, _VAL_IDS, _BATCH = 96, 48, 4


def _numbered(start: int, count: int) -> Any:
    """Dataset de pares (imagem uint8 2×2×3, rótulo = número do exemplo)."""
    import tensorflow as tf

    ids = tf.range(start, start + count, dtype=tf.int64)
    images = tf.zeros((count, 2, 2, 3), tf.uint8)
    return tf.data.Dataset.from_tensor_slices((images, ids))


def _as_the_strategy_sees_it(dataset: Any, num_workers: int, index: int, global_batch: int) -> Any:
    """O que a ``MultiWorkerMirroredStrategy`` faz com o dataset de um worker.

    Com ``AutoShardPolicy.OFF`` ela não mexe nos exemplos. Com qualquer outra política, nestes
    dados em memória ela fatia por elementos (``DATA``): reparte cada lote global em
    ``num_workers`` pedaços e o worker ``index`` fica com um de cada ``num_workers``.
    """
    import tensorflow as tf

    policy = dataset.options().experimental_distribute.auto_shard_policy
    if policy == tf.data.experimental.AutoShardPolicy.OFF or num_workers == 1:
        return dataset
    return dataset.rebatch(max(1, global_batch // num_workers)).shard(num_workers, index)


def _seen_ids(
    fn: Callable, split: int, num_workers: int, global_batch: int
) -> tuple[list[list[int]], set[int]]:
    """Os números que cada worker vê numa época (``split`` 0 = treino, 1 = validação)."""
    seen, batch_sizes = [], set()
    for index in range(num_workers):
        made = fn(
            _numbered(0, _TRAIN_IDS),
            _numbered(_TRAIN_IDS, _VAL_IDS),
            global_batch=global_batch,
            num_workers=num_workers,
            worker_index=index,
        )
        unfinished(made, "worker_datasets")
        if not isinstance(made, tuple | list) or len(made) != 2:
            raise CheckFailed(
                f"worker_datasets deve devolver (treino, validação), recebi {type(made).__name__}."
            )
        dataset = made[split]
        batch_sizes |= {int(x.shape[0]) for x, _ in dataset.take(1)}
        dataset = _as_the_strategy_sees_it(dataset, num_workers, index, global_batch)
        seen.append([int(i) for _, ids in dataset for i in ids.numpy().ravel()])
    return seen, batch_sizes


def _compare(seen: list[list[int]], expected: range, what: str, num_workers: int) -> None:
    fix = (
        "Fatie com dataset.shard(num_workers, worker_index) ANTES do shuffle e desligue a "
        "fatia automática da estratégia (AutoShardPolicy.OFF); ou use a mesma semente de "
        "shuffle em todos os workers."
    )
    for worker, ids in enumerate(seen):
        repeated = len(ids) - len(set(ids))
        if repeated:
            raise CheckFailed(
                f"{what}, {num_workers} workers: o worker {worker} viu {repeated} exemplo(s) duas "
                f"vezes na mesma época. {fix}"
            )
    for a in range(num_workers):
        for b in range(a + 1, num_workers):
            common = set(seen[a]) & set(seen[b])
            if common:
                raise CheckFailed(
                    f"{what}, {num_workers} workers: os workers {a} e {b} viram os mesmos "
                    f"{len(common)} exemplo(s) na mesma época (as fatias se sobrepõem). {fix}"
                )
    missing = set(expected) - {i for ids in seen for i in ids}
    if missing:
        raise CheckFailed(
            f"{what}, {num_workers} workers: {len(missing)} de {len(expected)} exemplos não foram "
            f"vistos por nenhum worker na época. {fix}"
        )


def check_worker_datasets(worker_datasets: Any) -> None:
    """Confere ``worker_datasets(train, val, *, global_batch, num_workers, worker_index)``.

    Com 2 e 3 workers e exemplos numerados: numa época, os workers veem conjuntos disjuntos que
    juntos cobrem o treino exatamente uma vez (e a validação também), como a estratégia os veria,
    em lotes do tamanho do lote GLOBAL.
    """
    unfinished(worker_datasets, "worker_datasets")
    if not callable(worker_datasets):
        raise CheckFailed(f"worker_datasets deve ser uma função, recebi {worker_datasets!r}.")
    for num_workers in (2, 3):
        global_batch = _BATCH * num_workers
        for split, what, expected in (
            (0, "treino", range(_TRAIN_IDS)),
            (1, "validação", range(_TRAIN_IDS, _TRAIN_IDS + _VAL_IDS)),
        ):
            seen, batch_sizes = _seen_ids(worker_datasets, split, num_workers, global_batch)
            if batch_sizes != {global_batch}:
                raise CheckFailed(
                    f"{what}, {num_workers} workers: o 1º lote tem {sorted(batch_sizes)} "
                    f"exemplos, esperado o lote GLOBAL ({global_batch}). Passe "
                    "global_batch=global_batch ao get_data: a estratégia divide o lote global "
                    "entre os workers."
                )
            _compare(seen, expected, what, num_workers)
    ok("cada worker lê a sua fatia: disjuntas, cobrindo treino e validação uma vez por época")


def check_build_model(build_model: Any, num_classes: int = 100) -> None:
    """Confere ``build_model(strategy, num_classes)``: escopo e par saída/perda."""
    import tensorflow as tf

    from labutils.tf.model import check_loss_activation

    unfinished(build_model, "build_model")
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    model = build_model(strategy, num_classes)
    unfinished(model, "build_model")
    if model.distribute_strategy is not strategy:
        raise CheckFailed(
            "O modelo foi criado FORA do escopo da estratégia recebida "
            "(model.distribute_strategy não é ela): as variáveis não seriam espelhadas e cada "
            "worker treinaria sozinho. Crie e compile o modelo dentro de `with strategy.scope():`."
        )
    if getattr(model, "optimizer", None) is None or getattr(model, "loss", None) is None:
        raise CheckFailed(
            "O modelo não foi compilado: chame model.compile(...) dentro de strategy.scope() "
            "(o otimizador também cria variáveis que precisam ser espelhadas)."
        )
    try:
        check_loss_activation(model)
    except ValueError as err:
        raise CheckFailed(str(err)) from None
    ok("modelo criado e compilado dentro de strategy.scope(), com saída e perda coerentes")


class _Saved:
    """Um modelo de mentira: ``save`` só cria o arquivo."""

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_bytes(b"modelo")


def _calls_of_rank(report_to_ray: Callable, rank: int, num_workers: int) -> list[dict[str, Any]]:
    import ray.train

    calls: list[dict[str, Any]] = []

    def report(metrics: dict, checkpoint: Any = None, **_: Any) -> None:
        files = []
        if checkpoint is not None:
            with checkpoint.as_directory() as directory:
                files = sorted(os.listdir(directory))
        calls.append({"metrics": dict(metrics), "files": files})

    context = SimpleNamespace(
        get_world_rank=lambda: rank,
        get_world_size=lambda: num_workers,
        get_local_rank=lambda: rank,
    )
    metrics = {"loss": 4.6, "accuracy": 0.01, "val_loss": 4.6, "val_accuracy": 0.01, "epoch": 1}
    info = {"rank": rank, "strategy": "MultiWorkerMirroredStrategy", "replicas": num_workers}
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(ray.train, "report", report))
        stack.enter_context(mock.patch.object(ray.train, "get_context", lambda: context))
        done = report_to_ray(_Saved(), metrics, info)
    unfinished(done, "report_to_ray")
    return calls


def check_reporting(report_to_ray: Any, num_workers: int = 2) -> None:
    """Confere ``report_to_ray(model, metrics, info)`` simulando cada rank (sem Ray)."""
    unfinished(report_to_ray, "report_to_ray")
    for rank in range(num_workers):
        calls = _calls_of_rank(report_to_ray, rank, num_workers)
        if len(calls) != 1:
            raise CheckFailed(
                f"No worker de rank {rank}, ray.train.report foi chamado {len(calls)} vez(es) por "
                "época; esperado 1 em TODOS os workers. O report é uma barreira: se só o rank 0 "
                "o chama, ele espera os outros para sempre. Chame-o fora de qualquer "
                "`if rank == 0`."
            )
        call = calls[0]
        if not call["files"]:
            raise CheckFailed(
                f"O rank {rank} reportou sem checkpoint (ou com a pasta vazia): passe "
                "checkpoint=ray.train.Checkpoint.from_directory(checkpoint_dir). No Ray Train V2 "
                "as métricas só ficam guardadas quando vêm com um checkpoint."
            )
        if not {"loss", "accuracy"} <= set(call["metrics"]):
            raise CheckFailed(
                f"O rank {rank} reportou {sorted(call['metrics'])}: inclua ao menos 'loss' e "
                "'accuracy' (passe o dicionário `metrics` que a função recebeu)."
            )
        if rank == 0 and "model.keras" not in call["files"]:
            raise CheckFailed(
                f"O checkpoint do rank 0 não tem model.keras ({call['files']}): é dele que o "
                "modelo final é restaurado."
            )
    ok(f"os {num_workers} workers chamam ray.train.report com métricas e checkpoint")
