"""Autoverificações do exercício da lição 07, com retorno imediato em português.

Cada ``check_*`` imprime ``✅ ...`` quando está tudo certo e, quando não está, levanta
:class:`CheckFailed` com uma explicação curta do que conferir. Um TODO ainda não feito
(``checks.todo(...)`` ou o marcador ``...``) gera :class:`TodoNotDone`: "ainda não terminado",
sem um traceback enorme (o Jupyter mostra só a mensagem).
"""

from __future__ import annotations

from typing import Any


class _FriendlyError(Exception):
    """Erro mostrado no Jupyter só com a mensagem (sem traceback)."""

    icon = "❌"

    def _render_traceback_(self) -> list[str]:  # usado pelo IPython no lugar do traceback
        return [
            f"{self.icon} {line}" if i == 0 else f"   {line}" for i, line in enumerate(self.lines())
        ]

    def lines(self) -> list[str]:
        return str(self).splitlines() or [type(self).__name__]

    def __reduce__(self):  # atravessa o pickle (ex.: vindo de um worker do Ray)
        return (type(self), tuple(str(a) for a in self.args))


class TodoNotDone(_FriendlyError, NotImplementedError):
    """Um TODO do exercício ainda não foi feito."""

    icon = "🚧"


class CheckFailed(_FriendlyError, AssertionError):
    """Uma autoverificação falhou: a mensagem diz o que conferir."""


def todo(number: int | str, what: str) -> Any:
    """Marca um TODO do aluno: levanta :class:`TodoNotDone` explicando o que falta fazer."""
    raise TodoNotDone(f"TODO {number} ainda não terminado: {what}.")


def _unfinished(value: Any, what: str) -> None:
    if value is Ellipsis:
        raise TodoNotDone(f"{what} ainda não terminado: troque o `...` pelo seu código.")


def _ok(message: str) -> None:
    print(f"✅ {message}")


def check_global_batch(global_batch_size: Any) -> None:
    """Confere a função ``global_batch_size(batch_per_worker, num_workers)``."""
    _unfinished(global_batch_size, "global_batch_size")
    if not callable(global_batch_size):
        raise CheckFailed(
            "global_batch_size deve ser uma função (batch_per_worker, num_workers), "
            f"recebi {global_batch_size!r}."
        )
    for per_worker, workers in ((64, 2), (32, 3), (16, 1)):
        got = global_batch_size(per_worker, workers)
        _unfinished(got, "global_batch_size")
        if got != per_worker * workers:
            raise CheckFailed(
                f"global_batch_size({per_worker}, {workers}) devolveu {got!r}, esperado "
                f"{per_worker * workers}.\nCada passo de treino consome um lote por worker; o "
                "lote GLOBAL (o que o tf.data recebe) é a soma deles."
            )
    _ok("lote global = lote por worker × número de workers")


def check_scaling_config(scaling_config: Any, plan: Any) -> None:
    """Confere o ``ScalingConfig`` contra o plano (``multiworker.plan_workers``)."""
    from ray.train import ScalingConfig

    _unfinished(scaling_config, "scaling_config")
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
    _ok(f"ScalingConfig: {plan.num_workers} workers, use_gpu={plan.use_gpu}")


def check_result(
    result: Any, workers: list[dict], *, num_workers: int, batch_per_worker: int
) -> None:
    """Confere o que o treino devolveu: checkpoint, métricas e o que cada worker viu."""
    _unfinished(result, "result")
    if getattr(result, "checkpoint", None) is None:
        raise CheckFailed(
            "O treino não devolveu checkpoint: chame ray.train.report(métricas, "
            "checkpoint=ray.train.Checkpoint.from_directory(pasta)) em TODOS os workers, a cada época."
        )
    metrics = getattr(result, "metrics", None)
    if not metrics or "loss" not in metrics or "accuracy" not in metrics:
        raise CheckFailed(
            f"As métricas voltaram incompletas ({metrics!r}): reporte ao menos 'loss' e 'accuracy'. "
            "No Ray Train V2 as métricas só são guardadas quando vêm junto com um checkpoint."
        )
    _ok(f"checkpoint e métricas recebidos (última época: loss={metrics['loss']:.3f})")
    if len(workers) != num_workers:
        raise CheckFailed(
            f"O checkpoint tem a descrição de {len(workers)} worker(s), esperado {num_workers}: "
            "cada worker grava worker_<rank>.json na pasta do checkpoint antes do report."
        )
    for info in workers:
        rank = info.get("rank")
        if info.get("strategy") != "MultiWorkerMirroredStrategy":
            raise CheckFailed(
                f"O worker {rank} usou {info.get('strategy')!r}: crie "
                "tf.distribute.MultiWorkerMirroredStrategy() no início do laço de cada worker."
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
    _ok(f"{num_workers} workers com MultiWorkerMirroredStrategy, lote global {expected}")


def check_accuracy(accuracy: Any, *, num_classes: int = 100, is_mock: bool = False) -> None:
    """Confere se a acurácia de teste supera o acaso (1/num_classes)."""
    _unfinished(accuracy, "a avaliação")
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
    _ok(f"acurácia de teste {accuracy:.3f} > acaso ({chance:.3f})")
