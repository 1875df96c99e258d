"""Autoverificações do exercício da lição 07, uma seção por TODO: ``✅ ...`` se está certo; senão
:class:`CheckFailed` (o que está errado e como corrigir) ou, num TODO por fazer,
:class:`TodoNotDone`. Julgam o que o código **faz**, não como foi escrito; as ``judge_*``, pelo
que ficou no disco (``tools/grade.py``).
"""

from __future__ import annotations

import functools
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
from labutils.multiworker import (
    LEGACY_KERAS_ENV,
    strategy_name,
)
from labutils.multiworker.base import (  # noqa: F401 (o notebook os usa por aqui)
    FIT_METRICS,
    MWMS,
    CheckFailed,
    TodoNotDone,
    _call,
    _check_worker,
    _devices_quietly,
    _first,
    ok,
    pending_todo,
    todo,
    unfinished,
)
from labutils.multiworker.cluster_checks import (  # noqa: F401 (o notebook os usa por aqui)
    ACCURACY_TOLERANCE,
    check_accuracy,
    check_trainer,
    check_training_run,
    judge_accuracy,
    judge_run,
    judge_trainer,
    run_facts,
    trainer_facts,
)

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
    """O dataset de um worker como a estratégia o fatia (``OFF``: inteiro; senão, ``DATA``)."""
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
        twice = len(expected) - len(missing) == len(expected) // num_workers
        why = (
            f"Só 1/{num_workers} dos exemplos foi visto: os dados foram fatiados duas vezes, à "
            "mão (shard) e de novo pela estratégia. Com o shard à mão, desligue a fatia "
            "automática: AutoShardPolicy.OFF."
            if twice
            else _SHARD_FIX
        )
        raise CheckFailed(
            f"{where}: {len(missing)} de {len(expected)} exemplos não foram vistos por nenhum "
            f"worker na época. {why}"
        )


def check_worker_datasets(worker_datasets: Any) -> None:
    """Confere ``worker_datasets`` com 2 e 3 workers e exemplos numerados: como a estratégia os
    veria, fatias disjuntas que cobrem treino e validação uma vez por época, em lotes GLOBAIS."""
    unfinished(worker_datasets, "worker_datasets", function=True)
    _devices_quietly()
    for num_workers in (2, 3):
        global_batch = _BATCH * num_workers
        made = []
        for index in range(num_workers):
            train, val = _numbered(0, _TRAIN_IDS), _numbered(_TRAIN_IDS, _VAL_IDS)
            sizes = {"global_batch": global_batch, "num_workers": num_workers}
            pair = _call(
                "worker_datasets", worker_datasets, train, val, **sizes, worker_index=index
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
            batch_sizes = _call(
                "Ler o 1º lote",
                lambda d=datasets: {int(x.shape[0]) for ds in d for x, _ in ds.take(1)},
            )
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
            seen = _call(
                "Percorrer uma época",
                lambda v=views: [[int(i) for _, ids in w for i in ids.numpy().ravel()] for w in v],
            )
            _compare(seen, expected, what, num_workers)
    ok("cada worker lê a sua fatia: disjuntas, cobrindo treino e validação uma vez por época")


# ---------------------------------------------------------------- TODO 2: o modelo
#: a probabilidade da classe certa no lote de referência: a perda certa é -log(0,9)


def check_build_model(build_model: Any, num_classes: int = 100) -> None:
    """Confere ``build_model`` pelo que o modelo faz: escopo, compilação, perda e acurácia."""
    import numpy as np
    import tensorflow as tf

    from labutils.tf import loss_mismatch

    unfinished(build_model, "build_model", function=True)
    _devices_quietly()
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    model = _call("build_model(strategy, num_classes)", build_model, strategy, num_classes)
    unfinished(model, "build_model")
    if not hasattr(model, "distribute_strategy"):
        raise CheckFailed(
            f"build_model deve devolver o modelo Keras, recebi {type(model).__name__}."
        )
    if model.distribute_strategy is not strategy:
        raise CheckFailed(
            "O modelo foi criado FORA do escopo da estratégia recebida: cada worker treinaria "
            "sozinho. Crie e compile o modelo dentro de `with strategy.scope():`."
        )
    if getattr(model, "optimizer", None) is None or getattr(model, "loss", None) is None:
        raise CheckFailed(
            "O modelo não foi compilado: chame model.compile(...) dentro de strategy.scope()."
        )
    rows = 8
    x = np.random.default_rng(0).random((rows, 32, 32, 3), dtype=np.float32)
    y = np.arange(rows) % num_classes
    out = np.asarray(_call("O modelo (num lote de 8 imagens)", model, x, training=False))
    if out.shape != (rows, num_classes):
        raise CheckFailed(
            f"A saída do modelo tem forma {out.shape}, esperado {(rows, num_classes)}: uma "
            "probabilidade (ou logit) por classe."
        )
    problem = _call(
        "A perda compilada (rótulos inteiros, como os do CIFAR-100)", loss_mismatch, model, x, y
    )
    if problem:
        raise CheckFailed(problem)
    scores = _call(
        "model.evaluate num lote",
        lambda: model.evaluate(x, y, batch_size=rows, verbose=0, return_dict=True),
    )
    right = float(np.mean(out.argmax(axis=1) == y))
    if "accuracy" not in scores or abs(float(scores["accuracy"]) - right) > 1e-6:
        raise CheckFailed(f"O modelo compilado mede {sorted(scores)}: inclua metrics=['accuracy'].")
    ok(
        "modelo criado e compilado dentro de strategy.scope(), perda e acurácia com os valores certos"
    )


# ---------------------------------------------------------------- TODO 3: a função de treino
# A função do aluno roda em 2 processos locais com o seu ``TF_CONFIG`` (como no Ray Train), num
# CIFAR-100 pequeno numerado nos pixels, um passo por ``fit``; :func:`_observe` anota o que ela
# passa ao ``ray.train`` e ao ``fit``, e :func:`_verdict` compara as anotações.

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


def _weights_digest(model: Any) -> list[float]:
    return [float(abs(w).sum()) for w in model.get_weights()]


def _observe(fn: Any, config: dict[str, Any], shared_root: Path) -> dict[str, Any]:
    """Roda ``fn(config)`` NESTE processo (um worker), anotando o que ela fez."""
    from unittest import mock

    import ray.train
    import tensorflow as tf

    import labutils.data

    cluster = lab_config.tf_config()
    num_workers, rank = len(cluster["cluster"]["worker"]), cluster["task"]["index"]
    phase = config.pop("_phase", 1)
    shared = shared_root / f"phase{phase}"
    shared.mkdir(exist_ok=True)
    resume_from = config.pop("_resume_from", None)
    seen: dict[str, Any] = {"rank": rank, "fits": [], "reports": [], "weights": None}

    def report(metrics: dict, checkpoint: Any = None, **_: Any) -> None:
        files: list[str] = []
        name = f"phase{phase}_report{len(seen['reports']) + 1}"
        if checkpoint is not None:
            import shutil

            with checkpoint.as_directory() as folder:
                files = sorted(os.listdir(folder))
                # o Ray Train junta os arquivos de todos os workers numa pasta só
                shutil.copytree(folder, shared / name, dirs_exist_ok=True)
        metrics = metrics if isinstance(metrics, dict) else {}
        report = {"metrics": sorted(metrics), "epoch": metrics.get("epoch"), "files": files}
        seen["reports"].append({**report, "dir": name})

    real_fit = tf.keras.Model.fit

    def fit(model: Any, x: Any = None, *args: Any, **kwargs: Any) -> Any:
        strategy = model.distribute_strategy
        entry = {"strategy": strategy_name(strategy), "replicas": strategy.num_replicas_in_sync}
        entry["start_weights"] = _weights_digest(model)
        entry["epochs"] = int(kwargs.get("epochs", 1)) - int(kwargs.get("initial_epoch", 0))
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
        seen["weights"] = _weights_digest(model)
        return history

    context = SimpleNamespace(
        get_world_rank=lambda: rank,
        get_world_size=lambda: num_workers,
        get_local_rank=lambda: 0,
        get_local_world_size=lambda: 1,
        get_node_rank=lambda: rank,
    )
    checkpoint = None if resume_from is None else ray.train.Checkpoint.from_directory(resume_from)
    for name, value in list(getattr(fn, "__globals__", {}).items()):
        if value is labutils.data.load_cifar100:  # o nome que o notebook usar
            fn.__globals__[name] = _tiny_cifar
    with (
        mock.patch.object(ray.train, "report", report),
        mock.patch.object(ray.train, "get_context", lambda: context),
        mock.patch.object(ray.train, "get_checkpoint", lambda: checkpoint),
        mock.patch.object(labutils.data, "load_cifar100", _tiny_cifar),
        mock.patch.object(tf.keras.Model, "fit", fit),
    ):
        fn(config)
    return seen


# Os processos, como o Ray Train os abriria: a função por cloudpickle e um ``TF_CONFIG`` em cada.
# Sem GPU: a verificação confere a lógica, e dois TensorFlow disputariam a mesma GPU.
_WORKER_MAIN = (
    "import sys; from labutils.multiworker.checks import _run_job; "
    "sys.exit(_run_job(*sys.argv[1:3]))"
)


def _launch(fn: Any, config: dict[str, Any], num_workers: int, timeout_s: float) -> list[dict]:
    """``fn(config)`` em ``num_workers`` processos; por worker, ``tf_config``, ``value`` e
    ``error`` (o traceback). Um que falha encerra os outros (o par esperaria para sempre);
    passado ``timeout_s``, ``TimeoutError``."""
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    # um TF_CONFIG por worker: a mesma lista de endereços, um índice diferente em cada
    workers = [f"{system.LOCALHOST}:{port}" for port in system.free_ports(num_workers)]
    configs = [{"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
               for i in range(num_workers)]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="labutils-todo3-") as workdir:
        folder = Path(workdir)
        (folder / "job.pkl").write_bytes(cloudpickle.dumps((fn, config)))
        procs = []
        deadline = time.monotonic() + timeout_s
        try:  # o finally encerra também os já iniciados, se um não iniciar
            for i, cfg in enumerate(configs):
                # sem GPU visível, o TF escreve no log um "failed call to cuInit" que não é
                # erro (e que apareceria no fim do log mostrado quando um worker cai)
                extra = {"TF_CONFIG": json.dumps(cfg), "CUDA_VISIBLE_DEVICES": ""}
                extra["TF_CPP_MIN_LOG_LEVEL"] = "3"
                env = lab_config.child_env({**LEGACY_KERAS_ENV, **extra})
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
    """Um worker: o retorno em ``result_<i>.pkl`` ou o traceback em ``error_<i>.txt``."""
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


def _run(fn: Any, config: dict[str, Any], num_workers: int, shared: Path) -> list[dict[str, Any]]:
    """:func:`_observe` em ``num_workers`` processos; os erros deles viram mensagens."""
    try:
        runs = _launch(
            functools.partial(_observe, fn, shared_root=shared), config, num_workers, _TIMEOUT_S
        )
    except TimeoutError:
        raise CheckFailed(
            f"Os {num_workers} workers travaram (mais de {_TIMEOUT_S:g} s num passo): todos devem "
            "fazer a mesma sequência (estratégia, model.fit, model.save, ray.train.report)."
        ) from None
    for run in runs:
        error = run["error"]
        if error and _STARTUP in error:
            raise CheckFailed(
                "A MultiWorkerMirroredStrategy não foi a primeira operação do TensorFlow do "
                "worker: crie-a na 1ª linha da função, antes dos dados e de qualquer tensor."
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


def _same(a: list[float], b: list[float]) -> bool:
    if a is None or b is None or len(a) != len(b):
        return False
    return max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 1e-4 * max(1.0, *a)


def _check_reports(
    worker: dict[str, Any], epochs: list[int], resumed_from: int | None = None
) -> None:
    """Um report com checkpoint por época treinada, com as métricas, a época e os arquivos
    (``resumed_from``: a época do checkpoint de que o worker retomou)."""
    rank, reports = worker["rank"], worker["reports"]
    trained = sum(fit.get("epochs", 1) for fit in worker["fits"])
    if len(reports) != trained:
        raise CheckFailed(
            f"O worker {rank} chamou ray.train.report {len(reports)} vez(es) em {trained} "
            "época(s); esperado 1 por época em TODOS os workers (o report é uma barreira)."
        )
    for report in reports:
        if not report["files"]:
            raise CheckFailed(
                f"O worker {rank} reportou sem checkpoint (ou com a pasta vazia): passe "
                "checkpoint=ray.train.Checkpoint.from_directory(pasta) em todos os workers."
            )
        if missing := sorted({*FIT_METRICS, "epoch"} - set(report["metrics"])):
            raise CheckFailed(
                f"O worker {rank} reportou {report['metrics']}, faltam {missing}: inclua as "
                f"métricas do fit com validation_data ({', '.join(FIT_METRICS)}) e 'epoch'."
            )
        wanted = {f"worker_{rank}.json"} | ({"model.keras"} if rank == 0 else set())
        if not wanted <= set(report["files"]):
            raise CheckFailed(
                f"O checkpoint do worker {rank} tem {report['files']}, faltam "
                f"{sorted(wanted - set(report['files']))}: prepare a pasta com "
                "save_checkpoint(pasta, model, epoch=..., global_batch=...) antes do report."
            )
    reported = [report["epoch"] for report in reports]
    if reported != epochs and resumed_from is not None:
        raise CheckFailed(
            f"Ao retomar do checkpoint da época {resumed_from}, o worker {rank} reportou as "
            f"épocas {reported}, esperado {epochs}: a próxima época é {resumed_from + 1}. "
            "Confira a época que resume devolve (a do checkpoint + 1) e se o laço começa nela."
        )
    if reported != epochs:
        raise CheckFailed(
            f"O worker {rank} reportou as épocas {reported}, esperado {epochs}: 'epoch' nas "
            "métricas é o número da época que acabou (1, 2, ...)."
        )


def _verdict(seen: list[dict[str, Any]], num_workers: int, global_batch: int) -> None:
    """Compara o que os workers anotaram (:func:`_observe`) no treino do zero, de 1 época."""
    sizes = (num_workers, global_batch)
    for worker in seen:
        if not worker["fits"]:
            raise CheckFailed(
                f"O worker {worker['rank']} não chamou model.fit: treine a cada época."
            )
        used = worker["fits"][0]
        _check_worker(worker["rank"], used["strategy"], used["replicas"], used.get("batch"), *sizes)
    ids = [worker["fits"][0]["ids"] for worker in seen]
    _compare(ids, range(_EXAMPLES // 10, _EXAMPLES), "treino", num_workers)
    for worker in seen:
        _check_reports(worker, [1])
    first = seen[0]["weights"]
    for worker in seen[1:]:
        if not _same(first, worker["weights"]):
            raise CheckFailed(
                f"Depois de um passo, os pesos do worker {worker['rank']} diferem dos do worker 0: "
                "os gradientes não foram somados entre os workers."
            )


def _resume_verdict(before: list[dict[str, Any]], seen: list[dict[str, Any]], epochs: int) -> None:
    """A retomada: cada worker parte dos pesos gravados e treina só as épocas que faltam."""
    saved = before[0]["weights"]
    for worker in seen:
        rank = worker["rank"]
        if not worker["fits"]:
            raise CheckFailed(
                f"Na retomada (checkpoint da época 1 de {epochs}), o worker {rank} não chamou "
                "model.fit: treine as épocas que faltam."
            )
        if not _same(worker["fits"][0]["start_weights"], saved):
            raise CheckFailed(
                f"Na retomada, o worker {rank} começou o fit com pesos que não são os do "
                "checkpoint: quando ray.train.get_checkpoint() não é None, carregue o model.keras "
                "dele dentro de strategy.scope() (resume) e treine esse modelo."
            )
        _check_reports(worker, list(range(2, epochs + 1)), resumed_from=1)


def check_training_function(fn: Any, config: dict[str, Any], num_workers: int = 2) -> None:
    """``fn(config)`` em ``num_workers`` processos: uma época de um passo, do zero; depois a
    retomada do checkpoint dela. Antes, os TODOs 1 e 2, se a função os usa."""
    unfinished(fn, "train_loop_per_worker", function=True)
    names = getattr(fn, "__globals__", {})
    for number, name, check in ((1, "worker_datasets", check_worker_datasets),
                                (2, "build_model", check_build_model)):  # fmt: skip
        if callable(names.get(name)):
            _first(number, check, names[name])
    if pending := pending_todo(fn):  # nem inicia os processos
        raise TodoNotDone(pending)
    global_batch = int(config["batch_per_worker"]) * num_workers
    with tempfile.TemporaryDirectory(prefix="labutils-todo3-shared-") as shared:
        first = _run(fn, {**config, "epochs": 1}, num_workers, Path(shared))
        _verdict(first, num_workers, global_batch)
        merged = Path(shared) / "phase1" / first[0]["reports"][0]["dir"]
        again = {**config, "epochs": 2, "_phase": 2, "_resume_from": str(merged)}
        _resume_verdict(first, _run(fn, again, num_workers, Path(shared)), 2)
    ok(
        f"{num_workers} processos, 1 passo: estratégia criada antes de tudo, modelo no escopo, "
        f"lote global {global_batch}, fatias disjuntas, report com checkpoint em todos, "
        "pesos iguais depois do passo; retomada do checkpoint na época seguinte"
    )
