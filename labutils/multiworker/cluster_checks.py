"""Autoverificações dos TODOs 4 e 5 da lição 07: o treino no cluster (o ``TensorflowTrainer``
antes e depois do ``fit``) e a acurácia; as ``judge_*`` julgam pelo que ficou no disco
(``tools/grade.py``). O notebook as chama por :mod:`labutils.multiworker.checks`, que as reexporta."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from labutils import config as lab_config
from labutils.multiworker import checkpoint_epoch, read_workers
from labutils.multiworker.base import (
    FIT_METRICS,
    MWMS,
    CheckFailed,
    TodoNotDone,
    _check_worker,
    ok,
    pending_todo,
    unfinished,
)


# ---------------------------------------------------------------- TODO 4: o treino no cluster
def trainer_facts(trainer: Any) -> dict[str, Any]:
    """A configuração do ``trainer`` que :func:`judge_trainer` julga (um dicionário em JSON)."""
    from ray.train.tensorflow import TensorflowTrainer

    unfinished(trainer, "trainer (TODO 4)")
    if not isinstance(trainer, TensorflowTrainer):
        raise CheckFailed(
            f"trainer deve ser um ray.train.tensorflow.TensorflowTrainer, recebi "
            f"{type(trainer).__name__}."
        )
    fn = getattr(trainer, "train_loop_per_worker", None)
    if fn is not None and (pending := pending_todo(fn)):
        raise TodoNotDone(f"Termine o TODO 3 primeiro. {pending}")
    run, scaling = trainer.run_config, trainer.scaling_config
    loop_config = getattr(trainer, "train_loop_config", None) or {}
    return {
        "num_workers": getattr(scaling, "num_workers", None),
        "use_gpu": bool(getattr(scaling, "use_gpu", False)),
        "max_failures": getattr(getattr(run, "failure_config", None), "max_failures", 0),
        "num_to_keep": getattr(getattr(run, "checkpoint_config", None), "num_to_keep", None),
        "storage_path": str(getattr(run, "storage_path", None)),
        "name": getattr(run, "name", None),
        "loop_config": {k: loop_config.get(k) for k in ("batch_per_worker", "epochs")},
    }


def _same_storage(path: str, storage: str) -> bool:
    """``path`` é a pasta ``storage`` (ou fica dentro dela)?"""
    if "://" in path or "://" in storage:
        return path.rstrip("/") == storage.rstrip("/")
    path_, root = Path(path).expanduser().resolve(), Path(storage).expanduser().resolve()
    return path_ == root or root in path_.parents


def judge_trainer(
    facts: dict[str, Any],
    *,
    storage: str,
    num_workers: int,
    use_gpu: bool,
    batch_per_worker: int,
    epochs: int,
) -> None:
    """Julga a configuração do trainer (:func:`trainer_facts`), antes ou depois do treino."""
    if facts.get("num_workers") != num_workers or facts.get("use_gpu") != use_gpu:
        raise CheckFailed(
            f"ScalingConfig com num_workers={facts.get('num_workers')!r}, "
            f"use_gpu={facts.get('use_gpu')!r}; o plano pede {num_workers} e {use_gpu} (use "
            "plan.num_workers, plan.use_gpu e plan.resources_per_worker)."
        )
    wanted = {"batch_per_worker": batch_per_worker, "epochs": epochs}
    if facts.get("loop_config") != wanted:
        raise CheckFailed(
            f"train_loop_config com {facts.get('loop_config')}, esperado {wanted}: passe "
            "train_loop_config=config."
        )
    failures = facts.get("max_failures") or 0
    if failures < 1 and failures != -1:  # -1: recomeça sem limite
        raise CheckFailed(
            f"RunConfig sem recomeço após falha (max_failures={failures!r}): passe "
            "failure_config=FailureConfig(max_failures=2) (qualquer valor > 0), senão um worker "
            "que cai perde o treino."
        )
    keep = facts.get("num_to_keep")
    if keep is not None and keep < epochs:
        raise CheckFailed(
            f"CheckpointConfig(num_to_keep={keep}) apaga checkpoints de um treino de {epochs} "
            "épocas, e com eles as métricas das curvas (o Ray Train guarda as métricas no "
            f"checkpoint): guarde todos, num_to_keep=None (o padrão) ou ≥ {epochs}."
        )
    if not _same_storage(facts.get("storage_path") or "", storage):
        raise CheckFailed(
            f"O RunConfig grava em {facts.get('storage_path')}, fora de {storage}: passe "
            "storage_path=lab_config.train_storage()."
        )


def _judge_config(trainer: Any, plan: Any, config: dict[str, Any]) -> dict[str, Any]:
    facts = trainer_facts(trainer)
    judge_trainer(
        facts,
        storage=lab_config.train_storage(),
        num_workers=plan.num_workers,
        use_gpu=plan.use_gpu,
        batch_per_worker=int(config["batch_per_worker"]),
        epochs=int(config["epochs"]),
    )
    return facts


def check_trainer(trainer: Any, plan: Any, config: dict[str, Any]) -> None:
    """Confere o trainer do TODO 4 ANTES do ``fit``, em segundos: a configuração e um nome de
    execução ainda livre (um nome já usado faria o Ray Train retomar aquela execução)."""
    facts = _judge_config(trainer, plan, config)
    storage, name = facts["storage_path"], facts["name"]
    if name and "://" not in storage and (Path(storage).expanduser() / name).exists():
        raise CheckFailed(
            f"Já existe uma execução {name!r} em {storage}: com esse nome o Ray Train retomaria "
            "aquela execução em vez de treinar do zero. Use um nome novo a cada execução (ou "
            "nenhum) e rode de novo a célula que cria o trainer."
        )
    ok(
        f"trainer com {plan.num_workers} workers, o seu config, "
        + _restarts(facts["max_failures"])
        + f", todos os checkpoints em {storage}, execução {name!r} nova: pode treinar"
    )


def _restarts(failures: int) -> str:
    if failures == -1:
        return "recomeça sempre que um worker cair"
    return f"recomeça até {failures} vez(es) se um worker cair"


def run_facts(trainer: Any, result: Any) -> dict[str, Any]:
    """O que :func:`judge_run` precisa do ``trainer`` e do ``result`` (um dicionário em JSON)."""
    facts = trainer_facts(trainer)
    unfinished(result, "result (TODO 4)")
    if not hasattr(result, "checkpoint") or not hasattr(result, "path"):
        raise CheckFailed(
            f"result deve ser o que trainer.fit() devolve (um Result), recebi {type(result).__name__}."
        )
    metrics = getattr(result, "metrics", None)
    return {
        **facts,
        "path": str(result.path),
        "has_checkpoint": result.checkpoint is not None,
        "metrics": sorted(metrics) if isinstance(metrics, dict) else None,
    }


def _checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """``(época, pasta)`` de cada checkpoint guardado da execução, em ordem de época."""
    found = []
    for folder in run_dir.glob("checkpoint_*"):
        with contextlib.suppress(ValueError):  # sem worker_0.json ou sem a época
            found.append((checkpoint_epoch(folder), folder))
    return sorted(found)


def judge_run(
    facts: dict[str, Any],
    *,
    storage: str,
    num_workers: int,
    use_gpu: bool,
    batch_per_worker: int,
    epochs: int,
) -> Path:
    """Julga o treino por ``facts`` e pela pasta em ``storage``; devolve o último checkpoint."""
    if not facts.get("has_checkpoint") or facts.get("metrics") is None:
        raise CheckFailed(
            "O treino não devolveu checkpoint nem métricas: chame ray.train.report(métricas, "
            "checkpoint=ray.train.Checkpoint.from_directory(pasta)) em TODOS os workers, a cada "
            "época (sem checkpoint, o Ray Train V2 não guarda as métricas)."
        )
    if missing := sorted(set(FIT_METRICS) - set(facts["metrics"])):
        raise CheckFailed(
            f"As métricas voltaram incompletas ({facts['metrics']}), faltam {missing}: reporte "
            f"as do fit com validation_data ({', '.join(FIT_METRICS)})."
        )
    sizes = {"num_workers": num_workers, "use_gpu": use_gpu, "epochs": epochs}
    judge_trainer(facts, storage=storage, batch_per_worker=batch_per_worker, **sizes)
    run_dir, root = Path(facts["path"]).resolve(), Path(storage).resolve()
    if root not in run_dir.parents:
        raise CheckFailed(
            f"Os checkpoints foram para {facts['path']}, fora de {storage}: passe "
            "storage_path=lab_config.train_storage() no RunConfig."
        )
    kept = _checkpoints(run_dir)
    got = [epoch for epoch, _ in kept]
    if sorted(set(got)) != list(range(1, epochs + 1)):
        raise CheckFailed(
            f"A execução {run_dir.name} guardou checkpoints das épocas {got}, esperado um por "
            f"época, 1 a {epochs}: guarde todos (num_to_keep=None, o padrão) e dê a cada "
            "execução um nome novo (ou nenhum), senão o Ray Train retoma a anterior."
        )
    last = kept[-1][1]
    workers = read_workers(last)
    if len(workers) != num_workers:
        raise CheckFailed(
            f"O checkpoint tem a descrição de {len(workers)} worker(s), esperado {num_workers}: "
            "cada worker grava worker_<rank>.json na pasta do checkpoint antes do report."
        )
    expected = batch_per_worker * num_workers
    for info in workers:
        used = [info.get(key) for key in ("rank", "strategy", "replicas", "global_batch")]
        _check_worker(*used, num_workers, expected)
    if not (last / "model.keras").exists():
        raise CheckFailed(
            f"O checkpoint da época {epochs} não tem o model.keras: o rank 0 grava o modelo na "
            "pasta do checkpoint (save_checkpoint)."
        )
    return last


def check_training_run(trainer: Any, result: Any, plan: Any, config: dict[str, Any]) -> None:
    """Confere o treino do TODO 4: o trainer, o resultado e os checkpoints de cada época."""
    facts = run_facts(trainer, result)
    judge_run(
        facts,
        storage=lab_config.train_storage(),
        num_workers=plan.num_workers,
        use_gpu=plan.use_gpu,
        batch_per_worker=int(config["batch_per_worker"]),
        epochs=int(config["epochs"]),
    )
    ok(
        f"{plan.num_workers} workers com {MWMS}, lote global "
        f"{int(config['batch_per_worker']) * plan.num_workers}, um checkpoint por época "
        f"({config['epochs']}) em {lab_config.train_storage()}, " + _restarts(facts["max_failures"])
    )


# ---------------------------------------------------------------- TODO 5: a acurácia
def check_accuracy(accuracy: Any, *, num_classes: int = 100, is_mock: bool = False) -> None:
    """Confere se a acurácia de teste supera o acaso (1/num_classes)."""
    unfinished(accuracy, "test_accuracy (TODO 5)")
    accuracy = _as_accuracy(accuracy)
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
            "normalização, a perda (from_logits) e se o modelo é o do último checkpoint."
        )
    ok(f"acurácia de teste {accuracy:.3f} > acaso ({chance:.3f})")


def _as_accuracy(accuracy: Any) -> float:
    try:
        value = float(accuracy)
    except (TypeError, ValueError):
        raise CheckFailed(
            f"A acurácia deve ser um número entre 0 e 1, recebi {accuracy!r}: use o 2º valor de "
            "model.evaluate(...), que devolve [perda, acurácia]."
        ) from None
    if not 0.0 <= value <= 1.0:
        raise CheckFailed(
            f"A acurácia deve estar entre 0 e 1, recebi {accuracy!r}: é a perda no lugar dela? "
            "model.evaluate(...) devolve [perda, acurácia]."
        )
    return value


#: diferença aceita entre a acurácia que o aluno mediu e a que a correção mede no mesmo modelo
ACCURACY_TOLERANCE = 0.02


def judge_accuracy(reported: Any, checkpoint_dir: str | os.PathLike, batch: int) -> float:
    """Mede a acurácia no teste do ``model.keras`` de ``checkpoint_dir``; a informada
    (``reported``) tem de ser ela (é o modelo do último checkpoint?)."""
    import tensorflow as tf

    from labutils.data import load_cifar100
    from labutils.lesson05 import get_data

    reported = _as_accuracy(reported)
    cifar = load_cifar100()
    _, test = get_data(cifar.train, cifar.test, global_batch=batch)
    model = tf.keras.models.load_model(Path(checkpoint_dir) / "model.keras")
    measured = float(model.evaluate(test, verbose=0, return_dict=True)["accuracy"])
    if abs(measured - reported) > ACCURACY_TOLERANCE:
        raise CheckFailed(
            f"A acurácia informada ({reported:.3f}) não é a do modelo do último checkpoint no "
            f"teste ({measured:.3f}): restaure o model.keras de result.checkpoint e avalie-o em "
            "test_ds."
        )
    return measured
