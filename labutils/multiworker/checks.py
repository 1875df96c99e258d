"""Autoverificações do exercício da lição 07, com retorno imediato em português.

Cada ``check_*`` imprime ``✅ ...`` quando está tudo certo e, quando não está, levanta
:class:`CheckFailed` dizendo o que está errado e como corrigir. Um TODO ainda não feito
(``checks.todo(...)`` ou o marcador ``...``) gera :class:`TodoNotDone`: "ainda não terminado",
sem um traceback enorme (o Jupyter mostra só a mensagem).

Uma seção por TODO do notebook, na ordem dele, depois das mensagens e de :func:`pending_todo`:

1. os dados de cada worker (:func:`check_worker_datasets`): com 2 e 3 workers e exemplos
   numerados, as fatias são disjuntas, cobrem treino e validação uma vez e vêm em lotes globais;
2. o modelo (:func:`check_build_model`): criado dentro de ``strategy.scope()``, perda coerente;
3. a função de treino (:func:`check_training_function`): rodada em 2 processos locais, um passo,
   sem o Ray (com :func:`labutils.multiworker.launch_by_hand`);
4. o trainer antes do ``fit`` (:func:`check_trainer`, :func:`check_scaling_config`);
5. e 6. o resultado do treino (:func:`check_result`) e a acurácia (:func:`check_accuracy`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from labutils import config as lab_config
from labutils.multiworker import launch_by_hand, read_workers, strategy_name

# ---------------------------------------------------------------- as mensagens


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


def unfinished(value: Any, what: str) -> None:
    if value is Ellipsis:
        raise TodoNotDone(f"{what} ainda não terminado: troque o `...` pelo seu código.")


def ok(message: str) -> None:
    print(f"✅ {message}")


# ---------------------------------------------------------------- um TODO pendente


def _todo_calls(code: Any) -> list[tuple[Any, ...]]:
    """Os argumentos constantes de cada chamada ``todo(...)`` no código (e nos aninhados)."""
    import dis

    calls: list[tuple[Any, ...]] = []
    args: list[Any] | None = None
    for ins in dis.get_instructions(code):
        if ins.argval == "todo" and ins.opname.startswith("LOAD_"):
            args = []
        elif args is not None and ins.opname == "LOAD_CONST":
            args.append(ins.argval)
        elif args is not None and ins.opname.startswith(("PRECALL", "CALL")):
            calls.append(tuple(args))
            args = None
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            calls += _todo_calls(const)
    return calls


def pending_todo(fn: Any) -> str | None:
    """A mensagem do 1º ``checks.todo(...)`` ainda presente em ``fn`` ou nas funções que ela usa.

    Olha o código (sem executá-lo) da função e das funções do mesmo módulo que ela chama, como
    ``train_loop_per_worker`` → ``train_epochs``. Serve para avisar de um TODO por fazer ANTES de
    iniciar os workers: dentro deles, o erro seria repetido a cada nova tentativa do Ray Train.
    """
    seen: set[int] = set()
    stack = [fn]
    while stack:
        f = stack.pop(0)
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            continue
        seen.add(id(f))
        for args in _todo_calls(code):
            if len(args) >= 2:
                return f"TODO {args[0]} ainda não terminado: {args[1]}."
        module = getattr(f, "__module__", None)
        names = list(code.co_names)  # na ordem em que aparecem no código
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                names += const.co_names
        for name in dict.fromkeys(names):
            other = getattr(f, "__globals__", {}).get(name)
            if callable(other) and getattr(other, "__module__", None) == module:
                stack.append(other)
    return None


# ---------------------------------------------------------------- TODO 1: os dados de cada worker

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


# ---------------------------------------------------------------- TODO 2: o modelo


def check_build_model(build_model: Any, num_classes: int = 100) -> None:
    """Confere ``build_model(strategy, num_classes)``: escopo e par saída/perda."""
    import tensorflow as tf

    from labutils.tf import check_loss_activation

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


# ---------------------------------------------------------------- TODO 3: a função de treino
#
# :func:`check_training_function` roda a função do aluno em 2 processos locais, cada um com o seu
# ``TF_CONFIG`` (o que o Ray Train faria), com um CIFAR-100 de mentira e pequeno, cujas imagens
# trazem o número do exemplo nos pixels, e **um passo** em cada ``model.fit``. Em cada processo,
# :func:`_observe` troca ``ray.train.report``/``get_context``/``get_checkpoint`` por versões que só
# anotam, e o ``fit`` por um que anota o que recebeu (a estratégia do modelo, o tamanho do lote e
# os exemplos que a estratégia entregaria a este worker numa época) antes de treinar o passo.
# O driver compara o que os dois processos anotaram.

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


# ---------------------------------------------------------------- TODO 4: o trainer


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


# ---------------------------------------------------------------- TODOs 5 e 6: o resultado


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
