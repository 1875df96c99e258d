"""Autoverificações do exercício da lição 07, com retorno imediato em português.

Cada ``check_*`` imprime ``✅ ...`` quando está tudo certo e, quando não está, levanta
:class:`CheckFailed` dizendo o que está errado e como corrigir. Um TODO ainda não feito
(``checks.todo(...)`` ou o marcador ``...``) gera :class:`TodoNotDone`: "ainda não terminado",
sem um traceback enorme (o Jupyter mostra só a mensagem).

Aqui ficam as conferências feitas no driver (lote global, ``ScalingConfig``, o trainer, o
resultado do treino, a acurácia); as das peças que rodam em cada worker (dados, modelo, report)
ficam em :mod:`~labutils.multiworker.worker_checks`, e a da função de treino inteira, rodada em
2 processos por um passo, em :mod:`~labutils.multiworker.loop_check`. Todas são reexportadas aqui.
"""

from __future__ import annotations

from typing import Any

from labutils.multiworker.feedback import CheckFailed, TodoNotDone, ok, todo, unfinished
from labutils.multiworker.loop_check import check_training_function
from labutils.multiworker.worker_checks import (
    check_build_model,
    check_reporting,
    check_worker_datasets,
)

__all__ = [
    "CheckFailed",
    "TodoNotDone",
    "check_accuracy",
    "check_build_model",
    "check_global_batch",
    "check_no_todo",
    "check_reporting",
    "check_result",
    "check_scaling_config",
    "check_trainer",
    "check_training_function",
    "check_worker_datasets",
    "todo",
]


def check_no_todo(fn: Any) -> None:
    """Confere que ``fn`` (e as funções do notebook que ela chama) não tem TODO pendente.

    Olha o código sem executá-lo: o laço dos workers só roda de verdade dentro do Ray Train.
    """
    from labutils.multiworker.launch import pending_todo

    unfinished(fn, getattr(fn, "__name__", "a função"))
    if not callable(fn):
        raise CheckFailed(f"Esperava a função do laço dos workers, recebi {fn!r}.")
    pending = pending_todo(fn)
    if pending:
        raise TodoNotDone(pending)
    ok(f"{fn.__name__} sem TODOs pendentes (o que cada worker usou é conferido após o treino)")


def check_global_batch(global_batch_size: Any) -> None:
    """Confere a função ``global_batch_size(batch_per_worker, num_workers)``."""
    unfinished(global_batch_size, "global_batch_size")
    if not callable(global_batch_size):
        raise CheckFailed(
            "global_batch_size deve ser uma função (batch_per_worker, num_workers), "
            f"recebi {global_batch_size!r}."
        )
    for per_worker, workers in ((64, 2), (32, 3), (16, 1)):
        got = global_batch_size(per_worker, workers)
        unfinished(got, "global_batch_size")
        if got != per_worker * workers:
            raise CheckFailed(
                f"global_batch_size({per_worker}, {workers}) devolveu {got!r}, esperado "
                f"{per_worker * workers}.\nCada passo de treino consome um lote por worker; o "
                "lote GLOBAL (o que o tf.data recebe) é a soma deles."
            )
    ok("lote global = lote por worker × número de workers")


def check_scaling_config(scaling_config: Any, plan: Any) -> None:
    """Confere o ``ScalingConfig`` contra o plano (``multiworker.plan_workers``)."""
    from ray.train import ScalingConfig

    unfinished(scaling_config, "scaling_config")
    if not isinstance(scaling_config, ScalingConfig):
        raise CheckFailed(
            f"scaling_config deve ser um ray.train.ScalingConfig, recebi {type(scaling_config).__name__}."
        )
    if scaling_config.num_workers != plan.num_workers:
        raise CheckFailed(
            f"num_workers={scaling_config.num_workers!r}, mas o plano pede {plan.num_workers} "
            "(use plan.num_workers)."
        )
    if bool(scaling_config.use_gpu) != plan.use_gpu:
        raise CheckFailed(
            f"use_gpu={scaling_config.use_gpu!r}, mas o plano diz {plan.use_gpu} "
            "(use plan.use_gpu: GPU só quando o cluster tem uma por worker)."
        )
    if (scaling_config.resources_per_worker or None) != plan.resources_per_worker:
        raise CheckFailed(
            f"resources_per_worker={scaling_config.resources_per_worker!r}, mas o plano (que "
            f"cabe no cluster) é {plan.resources_per_worker!r}: use plan.resources_per_worker."
        )
    ok(f"ScalingConfig: {plan.num_workers} workers, use_gpu={plan.use_gpu}")


def check_trainer(trainer: Any, plan: Any, train_loop_per_worker: Any) -> None:
    """Confere o ``TensorflowTrainer`` antes do ``fit``: função, workers, pasta, nome, falhas."""
    from pathlib import Path

    from ray.train.tensorflow import TensorflowTrainer

    unfinished(trainer, "trainer (TODO 4)")
    if not isinstance(trainer, TensorflowTrainer):
        raise CheckFailed(
            f"trainer deve ser um ray.train.tensorflow.TensorflowTrainer, recebi "
            f"{type(trainer).__name__}."
        )
    if trainer.train_loop_per_worker is not train_loop_per_worker:
        raise CheckFailed(
            "O trainer não recebeu a sua train_loop_per_worker (o 1º argumento do "
            "TensorflowTrainer é a função que cada worker roda)."
        )
    from labutils.multiworker.launch import pending_todo

    pending = pending_todo(train_loop_per_worker)
    if pending:  # dentro dos workers, o erro se repetiria a cada nova tentativa
        raise TodoNotDone(pending)
    config = trainer.train_loop_config or {}
    if not {"batch_per_worker", "epochs"} <= set(config):
        raise CheckFailed(
            f"train_loop_config={trainer.train_loop_config!r}: passe train_loop_config=config "
            "(o dicionário com batch_per_worker e epochs que a função recebe)."
        )
    check_scaling_config(trainer.scaling_config, plan)
    run = trainer.run_config
    if not run.storage_path:
        raise CheckFailed(
            "RunConfig sem storage_path: os checkpoints iriam para ~/ray_results. Use "
            "storage_path=lab_config.train_storage() (num cluster, uma pasta que todos os nós veem)."
        )
    if not run.name or (Path(str(run.storage_path)) / run.name).exists():
        raise CheckFailed(
            f"RunConfig(name={run.name!r}): dê um nome NOVO a cada execução (ex.: com a hora); "
            "com um nome repetido, o Ray Train V2 retomaria o estado da execução anterior."
        )
    failures = getattr(run.failure_config, "max_failures", 0)
    if not failures or failures < 1:
        raise CheckFailed(
            f"RunConfig sem recomeço após falha (max_failures={failures!r}): passe "
            "failure_config=FailureConfig(max_failures=2), senão um worker que cai perde o treino."
        )
    kept = getattr(run.checkpoint_config, "num_to_keep", None)
    if kept is not None and kept < config["epochs"]:
        raise CheckFailed(
            f"CheckpointConfig(num_to_keep={kept}) com {config['epochs']} épocas: o "
            "result.metrics_dataframe do Ray Train é montado dos checkpoints guardados, e as "
            "curvas por época perderiam as primeiras. Guarde um por época "
            "(CheckpointConfig(num_to_keep=None))."
        )
    ok(
        f"TensorflowTrainer: {plan.num_workers} workers, checkpoints em {run.storage_path}, "
        f"recomeça até {failures} vez(es) se um worker cair"
    )


def check_result(
    result: Any,
    workers: list[dict] | None = None,
    *,
    num_workers: int,
    batch_per_worker: int,
) -> None:
    """Confere o que o treino devolveu: checkpoint, métricas e o que cada worker viu.

    ``workers``: as descrições gravadas no checkpoint (padrão: lidas de ``result.checkpoint``).
    """
    unfinished(result, "result (TODO 5)")
    if getattr(result, "checkpoint", None) is None:
        raise CheckFailed(
            "O treino não devolveu checkpoint: chame ray.train.report(métricas, "
            "checkpoint=ray.train.Checkpoint.from_directory(pasta)) em TODOS os workers, a "
            "cada época."
        )
    metrics = getattr(result, "metrics", None)
    if not metrics or "loss" not in metrics or "accuracy" not in metrics:
        raise CheckFailed(
            f"As métricas voltaram incompletas ({metrics!r}): reporte ao menos 'loss' e 'accuracy'. "
            "No Ray Train V2 as métricas só são guardadas quando vêm junto com um checkpoint."
        )
    ok(f"checkpoint e métricas recebidos (última época: loss={metrics['loss']:.3f})")
    if workers is None:
        from labutils.multiworker.workers import read_workers

        workers = read_workers(result.checkpoint)
    if len(workers) != num_workers:
        raise CheckFailed(
            f"O checkpoint tem a descrição de {len(workers)} worker(s), esperado {num_workers}: "
            "cada worker grava worker_<rank>.json na pasta do checkpoint antes do report."
        )
    for info in workers:
        rank = info.get("rank")
        used = str(info.get("strategy"))
        if used.startswith("padrão"):
            raise CheckFailed(
                f"O modelo do worker {rank} foi criado FORA de strategy.scope() "
                "(model.distribute_strategy é a estratégia padrão): cada worker treinou sozinho, "
                "sem somar gradientes. Crie e compile o modelo dentro de `with strategy.scope():`."
            )
        if used != "MultiWorkerMirroredStrategy":
            raise CheckFailed(
                f"O modelo do worker {rank} usou {used!r}: crie "
                "tf.distribute.MultiWorkerMirroredStrategy() no início do laço de cada worker "
                "e o modelo dentro do escopo dela."
            )
        if info.get("replicas") != num_workers:
            raise CheckFailed(
                f"O worker {rank} viu {info.get('replicas')} réplica(s) em sincronia, esperado "
                f"{num_workers}: a estratégia não enxergou o cluster todo (TF_CONFIG?)."
            )
        expected = batch_per_worker * num_workers
        if info.get("global_batch") != expected:
            raise CheckFailed(
                f"O worker {rank} usou lote global {info.get('global_batch')}, esperado {expected} "
                f"({batch_per_worker} por worker × {num_workers} workers)."
            )
    ok(f"{num_workers} workers com MultiWorkerMirroredStrategy, lote global {expected}")


def check_accuracy(accuracy: Any, *, num_classes: int = 100, is_mock: bool = False) -> None:
    """Confere se a acurácia de teste supera o acaso (1/num_classes)."""
    unfinished(accuracy, "test_accuracy (TODO 6)")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes deve ser um inteiro >= 2, recebi {num_classes!r}.")
    try:
        accuracy = float(accuracy)
    except (TypeError, ValueError):
        raise CheckFailed(
            f"A acurácia deve ser um número entre 0 e 1, recebi {accuracy!r}: use o 2º valor de "
            "model.evaluate(...), que devolve [perda, acurácia]."
        ) from None
    if not 0.0 <= accuracy <= 1.0:
        raise CheckFailed(
            f"A acurácia deve estar entre 0 e 1, recebi {accuracy!r}: é a perda no lugar dela? "
            "model.evaluate(...) devolve [perda, acurácia]."
        )
    chance = 1.0 / num_classes
    if is_mock:
        print(
            f"ℹ️ acurácia {accuracy:.3f}: dados SIMULADOS (imagens aleatórias), não há o que "
            f"aprender; a comparação com o acaso ({chance:.2f}) só vale com o CIFAR-100 real."
        )
        return
    if not accuracy > chance:
        raise CheckFailed(
            f"Acurácia de teste {accuracy:.3f} não supera o acaso ({chance:.3f}): confira a "
            "normalização das imagens, a função de perda (from_logits coerente com a saída) e se o "
            "modelo restaurado é o do último checkpoint."
        )
    ok(f"acurácia de teste {accuracy:.3f} > acaso ({chance:.3f})")
