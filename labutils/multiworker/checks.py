"""Autoverificações do exercício da lição 07: ``✅ ...`` quando está certo; senão
:class:`CheckFailed` (o que está errado e como corrigir) ou, num TODO por fazer (``checks.todo``
ou ``...``), :class:`TodoNotDone`. O Jupyter mostra só a mensagem, sem traceback.

Uma seção por TODO do notebook, na ordem dele: 1. os dados de cada worker; 2. o modelo; 3. a
função de treino (2 processos locais, um passo, sem o Ray); 4. o trainer antes do ``fit``;
5 e 6. o resultado do treino e a acurácia.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from labutils import config as lab_config
from labutils import system
from labutils.multiworker import LEGACY_KERAS_ENV, read_workers, strategy_name

MWMS = "MultiWorkerMirroredStrategy"


# ---------------------------------------------------------------- as mensagens
class _FriendlyError(Exception):
    """Erro mostrado no Jupyter só com a mensagem (sem traceback)."""

    icon = "❌"

    def _render_traceback_(self) -> list[str]:  # usado pelo IPython no lugar do traceback
        lines = str(self).splitlines() or [type(self).__name__]
        return [f"{self.icon} {lines[0]}"] + [f"   {line}" for line in lines[1:]]

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
    """A mensagem do 1º ``checks.todo(...)`` ainda presente em ``fn`` ou nas funções do mesmo
    módulo que ela chama (lendo o código, sem executá-lo). Avisa ANTES de iniciar os workers:
    dentro deles, o erro se repetiria a cada nova tentativa do Ray Train."""
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
        names = list(code.co_names)  # na ordem em que aparecem no código
        for const in code.co_consts:
            names += getattr(const, "co_names", ())
        for name in dict.fromkeys(names):
            other = getattr(f, "__globals__", {}).get(name)
            if callable(other) and getattr(other, "__module__", None) == f.__module__:
                stack.append(other)
    return None


# ---------------------------------------------------------------- TODO 1: os dados de cada worker
#: tamanhos do teste dos dados: poucos exemplos numerados (o número vai no rótulo)
_TRAIN_IDS, _VAL_IDS, _BATCH = 96, 48, 4
_SHARD_FIX = (
    "Fatie com dataset.shard(num_workers, worker_index) ANTES do shuffle e desligue a fatia "
    "automática da estratégia (AutoShardPolicy.OFF); ou use a mesma semente de shuffle em todos "
    "os workers."
)


def _numbered(start: int, count: int) -> Any:
    """Dataset de pares (imagem uint8 2×2×3, rótulo = número do exemplo)."""
    import tensorflow as tf

    ids = tf.range(start, start + count, dtype=tf.int64)
    return tf.data.Dataset.from_tensor_slices((tf.zeros((count, 2, 2, 3), tf.uint8), ids))


def _as_the_strategy_sees_it(dataset: Any, num_workers: int, index: int, global_batch: int) -> Any:
    """O que a ``MultiWorkerMirroredStrategy`` faz com o dataset de um worker: com
    ``AutoShardPolicy.OFF``, nada; com outra política, nestes dados em memória, fatia por
    elementos (``DATA``): cada lote global em ``num_workers`` pedaços, um para cada worker."""
    import tensorflow as tf

    policy = dataset.options().experimental_distribute.auto_shard_policy
    if policy == tf.data.experimental.AutoShardPolicy.OFF or num_workers == 1:
        return dataset
    return dataset.rebatch(max(1, global_batch // num_workers)).shard(num_workers, index)


def _compare(seen: list[list[int]], expected: range, what: str, num_workers: int) -> None:
    """Os exemplos que cada worker viu numa época: sem repetir, sem sobrepor, cobrindo tudo."""
    where = f"{what}, {num_workers} workers"
    for worker, ids in enumerate(seen):
        if len(ids) != len(set(ids)):
            raise CheckFailed(
                f"{where}: o worker {worker} viu {len(ids) - len(set(ids))} exemplo(s) duas vezes "
                f"na mesma época. {_SHARD_FIX}"
            )
    for a in range(num_workers):
        for b in range(a + 1, num_workers):
            if common := set(seen[a]) & set(seen[b]):
                raise CheckFailed(
                    f"{where}: os workers {a} e {b} viram os mesmos {len(common)} exemplo(s) na "
                    f"mesma época (as fatias se sobrepõem). {_SHARD_FIX}"
                )
    if missing := set(expected) - {i for ids in seen for i in ids}:
        raise CheckFailed(
            f"{where}: {len(missing)} de {len(expected)} exemplos não foram vistos por nenhum "
            f"worker na época. {_SHARD_FIX}"
        )


def check_worker_datasets(worker_datasets: Any) -> None:
    """Confere ``worker_datasets(train, val, *, global_batch, num_workers, worker_index)`` com 2 e
    3 workers e exemplos numerados: como a estratégia os veria, numa época os workers veem fatias
    disjuntas que cobrem o treino (e a validação) uma vez, em lotes do tamanho GLOBAL."""
    unfinished(worker_datasets, "worker_datasets")
    if not callable(worker_datasets):
        raise CheckFailed(f"worker_datasets deve ser uma função, recebi {worker_datasets!r}.")
    for num_workers in (2, 3):
        global_batch = _BATCH * num_workers
        made = []
        for index in range(num_workers):
            pair = worker_datasets(
                _numbered(0, _TRAIN_IDS),
                _numbered(_TRAIN_IDS, _VAL_IDS),
                global_batch=global_batch,
                num_workers=num_workers,
                worker_index=index,
            )
            unfinished(pair, "worker_datasets")
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise CheckFailed(
                    "worker_datasets deve devolver (treino, validação), recebi "
                    f"{type(pair).__name__}."
                )
            made.append(pair)
        for split, what, expected in (
            (0, "treino", range(_TRAIN_IDS)),
            (1, "validação", range(_TRAIN_IDS, _TRAIN_IDS + _VAL_IDS)),
        ):
            datasets = [pair[split] for pair in made]
            batch_sizes = {int(x.shape[0]) for d in datasets for x, _ in d.take(1)}
            if batch_sizes != {global_batch}:
                raise CheckFailed(
                    f"{what}, {num_workers} workers: o 1º lote tem {sorted(batch_sizes)} "
                    f"exemplos, esperado o lote GLOBAL ({global_batch}). Passe "
                    "global_batch=global_batch ao get_data: a estratégia divide o lote global "
                    "entre os workers."
                )
            views = [
                _as_the_strategy_sees_it(d, num_workers, index, global_batch)
                for index, d in enumerate(datasets)
            ]
            seen = [[int(i) for _, ids in view for i in ids.numpy().ravel()] for view in views]
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
# A função do aluno roda em 2 processos locais, cada um com o seu ``TF_CONFIG`` (o que o Ray Train
# faria), com um CIFAR-100 pequeno cujas imagens trazem o número do exemplo nos pixels e **um
# passo** por ``fit``. Em cada processo, :func:`_observe` troca ``ray.train.report``/
# ``get_context``/``get_checkpoint`` e o ``fit`` por versões que anotam o que receberam; o driver
# compara as anotações dos dois (:func:`_verdict`).

#: exemplos do CIFAR de mentira (10% viram a validação) e limite de tempo da verificação
_EXAMPLES, _TIMEOUT_S = 300, 240.0
_STARTUP = "Collective ops must be configured at program startup"


def _tiny_cifar(scale: str | None = None, **_: Any) -> Any:
    """Um ``Cifar100`` pequeno: a imagem ``i`` guarda ``i`` nos pixels (0, 0, 0) e (0, 0, 1)."""
    import numpy as np
    import tensorflow as tf

    from labutils.data import Cifar100

    images = np.random.default_rng(0).integers(0, 256, (_EXAMPLES, 32, 32, 3), dtype=np.uint8)
    ids = np.arange(_EXAMPLES)
    images[:, 0, 0, 0], images[:, 0, 0, 1] = ids % 256, ids // 256
    data = tf.data.Dataset.from_tensor_slices((images, (ids % 100).astype("int64")))
    return Cifar100(data, data, None, _EXAMPLES, _EXAMPLES, True, "numerado (verificação)")


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
            pixels = [(im.numpy()[:, 0, 0, :2] * 255).round().astype(int) for im, _ in view]
            entry["ids"] = [int(a + 256 * b) for batch in pixels for a, b in batch]
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


# Os processos, como o Ray Train os abriria: a função vai por cloudpickle, cada processo recebe o
# seu ``TF_CONFIG`` e roda ``python -c _WORKER_MAIN PASTA ÍNDICE``. Sem GPU: a verificação confere
# a lógica num passo, e dois TensorFlow disputariam a memória da mesma GPU.
_WORKER_MAIN = (
    "import sys; from labutils.multiworker.checks import _run_job; "
    "sys.exit(_run_job(*sys.argv[1:3]))"
)


def _tf_configs(num_workers: int) -> list[dict[str, Any]]:
    """Um ``TF_CONFIG`` por worker: a mesma lista de endereços, um índice diferente em cada."""
    system.check_int(num_workers, "num_workers")
    workers = [f"{system.LOCALHOST}:{port}" for port in system.free_ports(num_workers)]
    return [
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
        for i in range(num_workers)
    ]


def _launch(fn: Any, config: dict[str, Any], num_workers: int, timeout_s: float) -> list[dict]:
    """``fn(config)`` em ``num_workers`` processos locais; por worker, ``tf_config``, ``value``
    (o retorno) e ``error`` (o traceback). Se um falha, os outros são encerrados na hora (o par
    esperaria para sempre); depois de ``timeout_s``, todos, e sobe ``TimeoutError``."""
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    configs = _tf_configs(num_workers)
    with tempfile.TemporaryDirectory(prefix="labutils-todo3-") as workdir:
        folder = Path(workdir)
        (folder / "job.pkl").write_bytes(cloudpickle.dumps((fn, config)))
        procs = []
        deadline = time.monotonic() + timeout_s
        try:  # o finally encerra também os já iniciados, se um não iniciar
            for i, cfg in enumerate(configs):
                extra = {"TF_CONFIG": json.dumps(cfg), "CUDA_VISIBLE_DEVICES": ""}
                env = lab_config.child_env({**LEGACY_KERAS_ENV, **extra})
                env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
                cmd = [sys.executable, "-c", _WORKER_MAIN, workdir, str(i)]
                with open(folder / f"worker_{i}.log", "wb") as log:
                    procs.append(system.spawn_group(cmd, env=env, stdout=log, stderr=log))
            while None in (codes := [proc.poll() for proc in procs]) and not any(codes):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Os processos passaram de {timeout_s:g} s.")
                time.sleep(0.05)
        finally:
            for proc in procs:  # um worker cujo par não sobe ignora o SIGTERM
                system.kill_group(proc, grace=0)
        runs = []
        for i, (cfg, code) in enumerate(zip(configs, codes, strict=True)):
            out, error = folder / f"result_{i}.pkl", folder / f"error_{i}.txt"
            run = {"tf_config": cfg, "value": None, "error": None}
            if out.exists():
                run["value"] = cloudpickle.loads(out.read_bytes())
            elif error.exists():
                run["error"] = error.read_text(errors="replace")
            elif code:  # caiu sozinho sem traceback (um sinal, um os._exit): o fim do log
                log = (folder / f"worker_{i}.log").read_text(errors="replace")
                run["error"] = f"{log[-2000:]}\n(o processo terminou com código {code})"
            runs.append(run)
    return runs


def _run_job(workdir: str, index: str) -> int:
    """Um worker: roda a função de ``PASTA/job.pkl`` e grava o retorno em
    ``PASTA/result_ÍNDICE.pkl`` (ou o traceback em ``PASTA/error_ÍNDICE.txt``, e sai com 1)."""
    from ray import cloudpickle

    fn, config = cloudpickle.loads((Path(workdir) / "job.pkl").read_bytes())
    try:
        value = fn(config)
    except Exception:
        import traceback

        (Path(workdir) / f"error_{index}.txt").write_text(traceback.format_exc())
        return 1
    (Path(workdir) / f"result_{index}.pkl").write_bytes(cloudpickle.dumps(value))
    return 0


def _run(fn: Any, config: dict[str, Any], num_workers: int) -> list[dict[str, Any]]:
    """:func:`_observe` em ``num_workers`` processos; os erros deles viram mensagens."""

    def observed(cfg: dict[str, Any]) -> dict[str, Any]:
        return _observe(fn, cfg)

    try:
        runs = _launch(observed, config, num_workers, _TIMEOUT_S)
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


def _check_worker(rank, strategy, replicas, batch, num_workers: int, global_batch: int) -> None:
    """A estratégia do MODELO de um worker, as réplicas em sincronia e o lote (TODOs 3 e 5)."""
    if str(strategy).startswith("padrão"):
        raise CheckFailed(
            f"O modelo do worker {rank} foi criado FORA de strategy.scope() (a estratégia padrão):"
            " cada worker treina sozinho, sem somar gradientes. Crie e compile o modelo dentro de "
            "`with strategy.scope():` (o build_model do TODO 2)."
        )
    if strategy != MWMS or replicas != num_workers:
        raise CheckFailed(
            f"O modelo do worker {rank} usa {strategy} com {replicas} réplica(s) em sincronia; "
            f"esperado {MWMS} com {num_workers} (uma por worker), criada no início da função de "
            "treino: só ela soma os gradientes entre processos (com menos réplicas, ela não viu "
            "o cluster todo: TF_CONFIG?)."
        )
    if batch != global_batch:
        raise CheckFailed(
            f"O worker {rank} usou lote global {batch}, esperado o lote GLOBAL, {global_batch} "
            f"(lote por worker × {num_workers} workers): a estratégia divide cada lote global "
            "entre os workers."
        )


def _verdict(seen: list[dict[str, Any]], num_workers: int, global_batch: int) -> None:
    """Compara o que os workers anotaram (:func:`_observe`)."""
    sizes = (num_workers, global_batch)
    for worker in seen:
        if not worker["fits"]:
            raise CheckFailed(
                f"O worker {worker['rank']} não chamou model.fit: treine a cada época."
            )
        used = worker["fits"][0]
        batch = used.get("batch")
        _check_worker(worker["rank"], used["strategy"], used["replicas"], batch, *sizes)
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
                " prepare a pasta com save_checkpoint(pasta, model, epoch=..., global_batch=...)"
                " antes do report."
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
    """Roda ``fn(config)`` em ``num_workers`` processos, uma época de um passo com
    ``config["batch_per_worker"]`` por worker, e falha no primeiro erro encontrado."""
    unfinished(fn, "train_loop_per_worker")
    if not callable(fn):
        raise CheckFailed(f"Esperava a função de treino de cada worker, recebi {fn!r}.")
    system.check_int(num_workers, "num_workers")
    if pending := pending_todo(fn):  # nem inicia os processos
        raise TodoNotDone(pending)
    global_batch = int(config["batch_per_worker"]) * num_workers
    _verdict(_run(fn, {**config, "epochs": 1}, num_workers), num_workers, global_batch)
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
    if pending := pending_todo(train_loop_per_worker):
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
    if not failures or (failures < 1 and failures != -1):  # -1: recomeça sem limite
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
        + (
            "recomeça sempre que um worker cair"
            if failures == -1
            else f"recomeça até {failures} vez(es) se um worker cair"
        )
    )


# ---------------------------------------------------------------- TODOs 5 e 6: o resultado
def check_result(
    result: Any, workers: list[dict] | None = None, *, num_workers: int, batch_per_worker: int
) -> None:
    """Confere o que o treino devolveu: checkpoint, métricas e o que cada worker usou
    (``workers``: as descrições gravadas no checkpoint; padrão: lidas de ``result.checkpoint``)."""
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
    workers = read_workers(result.checkpoint) if workers is None else workers
    if len(workers) != num_workers:
        raise CheckFailed(
            f"O checkpoint tem a descrição de {len(workers)} worker(s), esperado {num_workers}: "
            "cada worker grava worker_<rank>.json na pasta do checkpoint antes do report."
        )
    expected = batch_per_worker * num_workers
    for info in workers:
        used = [info.get(key) for key in ("rank", "strategy", "replicas", "global_batch")]
        _check_worker(*used, num_workers, expected)
    ok(f"{num_workers} workers com {MWMS}, lote global {expected}")


def check_accuracy(accuracy: Any, *, num_classes: int = 100, is_mock: bool = False) -> None:
    """Confere se a acurácia de teste supera o acaso (1/num_classes)."""
    unfinished(accuracy, "test_accuracy (TODO 6)")
    system.check_int(num_classes, "num_classes", 2)
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
