"""As autoverificações da lição 07 contra respostas de outras mãos, trechos completos como um aluno
os escreveria: as certas (outros idiomas do Keras, TensorFlow e Ray) passam; as erradas, erros
plausíveis, são pegas pela verificação do seu TODO."""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import ray
import ray.train
import tensorflow as tf
from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from ray.train.tensorflow import TensorflowTrainer

from labutils import config as lab_config
from labutils import multiworker
from labutils.data import load_cifar100
from labutils.lesson05 import create_model, get_data
from labutils.multiworker import checks
from labutils.tf import split_validation
from tools.make_student_notebook import run_cell

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
PLAN = multiworker.WorkerPlan(2, False, {"CPU": 1.0})
CONFIG = {"batch_per_worker": 64, "epochs": 2}
SIZES = {"num_workers": 2, "use_gpu": False, **CONFIG}
#: o que as células anteriores do notebook deixam definido
NAMESPACE = {
    **{"json": json, "os": os, "tempfile": tempfile, "time": time, "tf": tf, "ray": ray},
    **{"checks": checks, "multiworker": multiworker, "lab_config": lab_config, "plan": PLAN},
    **{"get_data": get_data, "split_validation": split_validation, "create_model": create_model},
    **{"load_cifar100": load_cifar100, "config": CONFIG, "TensorflowTrainer": TensorflowTrainer},
    **{"ScalingConfig": ScalingConfig, "RunConfig": RunConfig, "FailureConfig": FailureConfig},
    "CheckpointConfig": CheckpointConfig,
}


def _cell(defines: str) -> str:
    cells = nbformat.read(SOLUTION, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "code" and defines in c.source)


def _answers(*snippets: str) -> dict:
    """As funções da solução com cada trecho de ``snippets`` (a resposta do aluno) por cima."""
    ns = {"__name__": "__main__", **NAMESPACE}
    for defines in ("def worker_datasets(", "def build_model(", "def save_checkpoint("):
        run_cell(_cell(defines), ns, "solucao")
    run_cell(_cell("def train_loop_per_worker("), ns, "solucao")
    for snippet in snippets:
        run_cell(textwrap.dedent(snippet), ns, "resposta")
    return ns


DATA_SAME_SEED = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    # sem fatiar à mão: a estratégia fatia "um de cada N", e a mesma semente dá a mesma ordem
    return get_data(train, val, global_batch=global_batch, seed=1234)
"""
DATA_OWN_PIPELINE = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    def scale(image, label):
        return tf.cast(image, tf.float32) / 255.0, label

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    train = train.shard(num_workers, worker_index).map(scale).shuffle(1000).batch(global_batch)
    val = val.shard(num_workers, worker_index).map(scale).batch(global_batch)
    return train.with_options(options), val.with_options(options)
"""
DATA_EXPLICIT_DATA_POLICY = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    train_ds, val_ds = get_data(train, val, global_batch=global_batch, seed=7)
    return train_ds.with_options(options), val_ds.with_options(options)
"""
DATA_NO_SHARD = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    return get_data(train, val, global_batch=global_batch)  # shuffle sem semente, fatia DATA
"""
DATA_SHARD_AFTER_SHUFFLE = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    train_ds, val_ds = get_data(train, val.shard(num_workers, worker_index), global_batch=global_batch)
    train_ds = train_ds.unbatch().shard(num_workers, worker_index).batch(global_batch)
    return train_ds.with_options(options), val_ds.with_options(options)
"""
DATA_DOUBLE_SHARD = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    train, val = train.shard(num_workers, worker_index), val.shard(num_workers, worker_index)
    return get_data(train, val, global_batch=global_batch)  # e a estratégia fatia de novo
"""
DATA_BATCH_PER_WORKER = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    train, val = train.shard(num_workers, worker_index), val.shard(num_workers, worker_index)
    train_ds, val_ds = get_data(train, val, global_batch=global_batch // num_workers)
    return train_ds.with_options(options), val_ds.with_options(options)
"""


MODEL_STRINGS = """
def build_model(strategy, num_classes):
    with strategy.scope():
        model = create_model(num_classes, compile=False)
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
"""
MODEL_DEFAULT_OBJECTS = """
def build_model(strategy, num_classes):
    with strategy.scope():
        model = create_model(num_classes, compile=False)
        model.compile(
            optimizer=tf.keras.optimizers.Adam(),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(),
            metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        )
    return model
"""
MODEL_LOGITS = """
def build_model(strategy, num_classes):
    with strategy.scope():  # saída linear (logits) com a perda que espera logits: coerente
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(32, 32, 3)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(num_classes),
        ])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    return model
"""
MODEL_CREATED_COMPILED = """
def build_model(strategy, num_classes):
    with strategy.scope():
        return create_model(num_classes)  # compile=True: compilada como na lição 05
"""
MODEL_OUTSIDE_SCOPE = """
def build_model(strategy, num_classes):
    model = create_model(num_classes, compile=False)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
"""
MODEL_LOGITS_AFTER_SOFTMAX = """
def build_model(strategy, num_classes):
    with strategy.scope():
        model = create_model(num_classes, compile=False)
        model.compile(
            optimizer="adam",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    return model
"""
MODEL_PROBABILITIES_FROM_LINEAR = """
def build_model(strategy, num_classes):
    with strategy.scope():  # saída linear (logits) com a perda que espera probabilidades
        model = tf.keras.Sequential([tf.keras.Input(shape=(32, 32, 3)), tf.keras.layers.Flatten(),
                                     tf.keras.layers.Dense(num_classes)])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
"""
MODEL_NO_COMPILE = """
def build_model(strategy, num_classes):
    with strategy.scope():
        return create_model(num_classes, compile=False)
"""
MODEL_NO_ACCURACY = """
def build_model(strategy, num_classes):
    with strategy.scope():
        model = create_model(num_classes, compile=False)
        model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy())
    return model
"""
MODEL_ONE_HOT_LOSS = """
def build_model(strategy, num_classes):
    with strategy.scope():
        model = create_model(num_classes, compile=False)
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model
"""


RIGHT = {
    "dados: mesma semente, fatia da estratégia": DATA_SAME_SEED,
    "dados: pipeline próprio": DATA_OWN_PIPELINE,
    "dados: política DATA explícita": DATA_EXPLICIT_DATA_POLICY,
    "modelo: textos": MODEL_STRINGS,
    "modelo: objetos com os padrões": MODEL_DEFAULT_OBJECTS,
    "modelo: logits e from_logits=True": MODEL_LOGITS,
    "modelo: create_model compilado": MODEL_CREATED_COMPILED,
}
WRONG = {
    "dados sem fatiar": (DATA_NO_SHARD, "se sobrepõem"),
    "fatia depois do shuffle": (DATA_SHARD_AFTER_SHUFFLE, "Fatie com dataset.shard"),
    "fatia dupla": (DATA_DOUBLE_SHARD, "não foram vistos.*fatiados duas vezes"),
    "lote por worker": (DATA_BATCH_PER_WORKER, "lote GLOBAL"),
    "modelo fora do escopo": (MODEL_OUTSIDE_SCOPE, "FORA do escopo"),
    "from_logits=True depois da softmax": (MODEL_LOGITS_AFTER_SOFTMAX, "from_logits=True"),
    "from_logits=False com saída linear": (MODEL_PROBABILITIES_FROM_LINEAR, "devolve logits"),
    "sem compilar": (MODEL_NO_COMPILE, "não foi compilado"),
    "sem a acurácia": (MODEL_NO_ACCURACY, "'accuracy'"),
    "perda para rótulos one-hot": (MODEL_ONE_HOT_LOSS, "rótulos inteiros"),
}


def _check(snippet: str) -> None:
    """A verificação do TODO (1 ou 2) que o trecho responde, com a resposta dele."""
    name = next(n for n in ("worker_datasets", "build_model") if f"def {n}(" in snippet)
    getattr(checks, f"check_{name}")(_answers(snippet)[name])


@pytest.mark.parametrize("snippet", RIGHT.values(), ids=RIGHT.keys())
def test_right_answers_pass(snippet, capsys):
    _check(snippet)
    assert "✅" in capsys.readouterr().out


@pytest.mark.parametrize(("snippet", "message"), WRONG.values(), ids=WRONG.keys())
def test_wrong_answers_are_caught(snippet, message):
    with pytest.raises(checks.CheckFailed, match=message) as info:
        _check(snippet)
    assert info.value._render_traceback_()[0].startswith("❌")  # sem traceback no Jupyter


#: uma função de treino certa, diferente da solução: o rank pelo TF_CONFIG, a pasta com mkdtemp,
#: uma retomada que carrega os pesos num modelo novo, e um laço só de fit com initial_epoch
LOOP_OTHER_IDIOMS = """
import shutil


def resume(checkpoint, strategy):
    with checkpoint.as_directory() as folder:
        with strategy.scope():
            model = tf.keras.models.load_model(os.path.join(folder, "model.keras"))
        info = json.load(open(os.path.join(folder, "worker_0.json")))
    return model, info["epoch"] + 1


def train_loop_per_worker(config):
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    cluster = json.loads(os.environ["TF_CONFIG"])
    workers, index = len(cluster["cluster"]["worker"]), cluster["task"]["index"]
    batch = config["batch_per_worker"] * workers
    data = load_cifar100()
    train, val = split_validation(data.train, data.num_train)
    train, val = worker_datasets(train, val, global_batch=batch, num_workers=workers,
                                 worker_index=index)
    start = 1
    if ray.train.get_checkpoint():
        model, start = resume(ray.train.get_checkpoint(), strategy)
    else:
        model = build_model(strategy, data.num_classes)
    for epoch in range(start, config["epochs"] + 1):
        logs = model.fit(train, validation_data=val, epochs=epoch, initial_epoch=epoch - 1,
                         verbose=0).history
        folder = tempfile.mkdtemp()
        save_checkpoint(folder, model, epoch=epoch, global_batch=batch)
        metrics = {"loss": logs["loss"][-1], "accuracy": logs["accuracy"][-1], "epoch": epoch,
                   "val_loss": logs["val_loss"][-1], "val_accuracy": logs["val_accuracy"][-1]}
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))
        shutil.rmtree(folder, ignore_errors=True)
"""
LOOP_STRATEGY_AFTER_DATA = """
def train_loop_per_worker(config):
    context = ray.train.get_context()
    workers, rank = context.get_world_size(), context.get_world_rank()
    batch = config["batch_per_worker"] * workers
    cifar = load_cifar100()
    train, val = split_validation(cifar.train, cifar.num_train)
    train, val = worker_datasets(train, val, global_batch=batch, num_workers=workers,
                                 worker_index=rank)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # depois dos dados
    model = build_model(strategy, cifar.num_classes)
    for epoch in range(1, config["epochs"] + 1):
        logs = model.fit(train, validation_data=val, verbose=0).history
        with tempfile.TemporaryDirectory() as folder:
            save_checkpoint(folder, model, epoch=epoch, global_batch=batch)
            ray.train.report({"loss": logs["loss"][-1], "accuracy": logs["accuracy"][-1],
                              "epoch": epoch}, checkpoint=ray.train.Checkpoint.from_directory(folder))
"""


def _after_training(metrics: list[str], folder: Path) -> dict:
    """Roda as seções 5 e 6 da solução (as células entre a verificação do treino e o TODO 5)
    sobre um treino de 2 épocas cujos reports trouxeram as ``metrics`` e cujo checkpoint tem os
    ``worker_<rank>.json`` do ``save_checkpoint``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    cells = nbformat.read(SOLUTION, as_version=4).cells
    start = next(i for i, c in enumerate(cells) if "check-4-treino" in c.metadata.get("tags", []))
    end = next(i for i, c in enumerate(cells) if c.source.startswith("### TODO 5"))
    rows = [{**dict.fromkeys(metrics, 0.5), "epoch": epoch} for epoch in (2, 1)]
    for rank in range(2):
        multiworker.write_worker(folder, {"rank": rank, "epoch": 2})
    result = SimpleNamespace(metrics_dataframe=pd.DataFrame(rows), checkpoint=str(folder))
    ns = {**NAMESPACE, "result": result, "plt": plt, "config": {**CONFIG, "epochs": 2}}
    for cell in cells[start + 1 : end]:
        if cell.cell_type == "code":
            run_cell(cell.source, ns, "solucao")
    plt.close("all")
    return ns


def test_sections_5_and_6_read_only_what_the_checks_require(tmp_path):
    """A regra do exercício: uma resposta que passa nas verificações roda todas as células. As
    seções 5 e 6 rodam com um treino que reportou SÓ o que as verificações exigem."""
    ns = _after_training([*checks.FIT_METRICS, "epoch"], tmp_path)
    assert list(ns["history"]["epoch"]) == [1, 2]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_right_training_function_in_other_idioms_passes(capsys, monkeypatch, tmp_path):
    """Os dois passos (do zero e a retomada) de uma função certa que não é a da solução; e as
    seções 5 e 6 rodam com as métricas que ela reportou."""
    reported, verdict = [], checks._verdict

    def keep(seen, *args):
        verdict(seen, *args)
        reported.extend(seen[0]["reports"][0]["metrics"])

    monkeypatch.setattr(checks, "_verdict", keep)
    ns = _answers(LOOP_OTHER_IDIOMS)
    checks.check_training_function(ns["train_loop_per_worker"], CONFIG)
    assert "retomada do checkpoint" in capsys.readouterr().out
    _after_training(reported, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_strategy_created_after_the_data_is_caught():
    ns = _answers(LOOP_STRATEGY_AFTER_DATA)
    with pytest.raises(checks.CheckFailed, match="não foi a primeira operação"):
        checks.check_training_function(ns["train_loop_per_worker"], CONFIG)


@pytest.mark.timeout(60)
def test_a_wrong_earlier_todo_is_named_by_the_training_function_check():
    """Com o TODO 1 errado ou por fazer, a do TODO 3 o aponta antes de iniciar processos."""
    ns = _answers(DATA_SHARD_AFTER_SHUFFLE)
    start = time.monotonic()
    with pytest.raises(checks.CheckFailed, match="^Conserte o TODO 1 primeiro: .*Fatie com"):
        checks.check_training_function(ns["train_loop_per_worker"], CONFIG)
    ns = _answers('def build_model(strategy, num_classes):\n    return checks.todo(2, "o modelo")')
    with pytest.raises(checks.TodoNotDone, match="^Termine o TODO 2 primeiro"):
        checks.check_training_function(ns["train_loop_per_worker"], CONFIG)
    assert time.monotonic() - start < 30  # nenhum processo iniciado


def test_the_training_function_verdict_also_refuses_no_fit_and_diverging_weights():
    """Casos da verificação do TODO 3 sem iniciar processos, com o que os workers anotariam."""
    from labutils.multiworker.checks import _EXAMPLES, _resume_verdict, _verdict

    ids = list(range(_EXAMPLES // 10, _EXAMPLES))
    fit = {"strategy": "MultiWorkerMirroredStrategy", "replicas": 2, "batch": 128, "epochs": 1}
    report = {"metrics": sorted({*checks.FIT_METRICS, "epoch"}), "epoch": 1}
    seen = [
        {"rank": r, "fits": [{**fit, "ids": ids[r::2]}], "weights": [1.0, 2.0]} for r in range(2)
    ]
    for r, worker in enumerate(seen):
        files = ["model.keras", f"worker_{r}.json"]
        worker["reports"] = [{**report, "files": files}]
    _verdict(seen, 2, 128)  # tudo certo
    # a estratégia e o lote que o modelo usou (os mesmos processos dos erros acima os anotam)
    for change, message in (
        ({"strategy": "MirroredStrategy", "replicas": 1}, "usa MirroredStrategy com 1 réplica"),
        ({"batch": 64}, "lote GLOBAL, 128"),
        ({"strategy": "padrão (fora de strategy.scope())"}, "FORA de strategy.scope"),
        ({"_reports": []}, "barreira"),  # o report só no rank 0
    ):
        change = dict(change)
        reports = change.pop("_reports", seen[1]["reports"])
        other = {**seen[1], "fits": [{**seen[1]["fits"][0], **change}], "reports": reports}
        with pytest.raises(checks.CheckFailed, match=message):
            _verdict([seen[0], other], 2, 128)
    with pytest.raises(checks.CheckFailed, match="não chamou model.fit"):
        _verdict([{**seen[0], "fits": []}, seen[1]], 2, 128)
    with pytest.raises(checks.CheckFailed, match="os gradientes não foram somados"):
        _verdict([seen[0], {**seen[1], "weights": [1.0, 2.5]}], 2, 128)
    broken = {
        "sem checkpoint": {"files": []},
        r"faltam \['accuracy', 'val_accuracy', 'val_loss'\]": {"metrics": ["epoch", "loss"]},
        r"faltam \['model.keras'\]": {"files": ["worker_0.json"]},
        r"reportou as épocas \[0\]": {"epoch": 0},
    }
    for message, change in broken.items():
        first = {**seen[0], "reports": [{**seen[0]["reports"][0], **change}]}
        with pytest.raises(checks.CheckFailed, match=message):
            _verdict([first, seen[1]], 2, 128)
    # a retomada (a função certa em outros idiomas, acima, passa pelos mesmos processos): quem
    # não carrega o checkpoint começa o fit com outros pesos
    resumed = [
        {**w, "fits": [{**w["fits"][0], "start_weights": [1.0, 2.0]}],
         "reports": [{**w["reports"][0], "epoch": 2}]}
        for w in seen
    ]  # fmt: skip
    _resume_verdict(seen, resumed, 2)
    fresh = {**resumed[1], "fits": [{**resumed[1]["fits"][0], "start_weights": [0.1, 0.2]}]}
    with pytest.raises(checks.CheckFailed, match="pesos que não são os do checkpoint"):
        _resume_verdict(seen, [resumed[0], fresh], 2)
    # resume devolveu a época do checkpoint (1), não a seguinte: o worker treina de novo a 1
    again = {**resumed[1], "fits": resumed[1]["fits"] * 2}
    again["reports"] = [{**resumed[1]["reports"][0], "epoch": e} for e in (1, 2)]
    with pytest.raises(checks.CheckFailed, match=r"retomar do checkpoint da época 1.*\bresume\b"):
        _resume_verdict(seen, [resumed[0], again], 2)


def _trainers() -> dict[str, TensorflowTrainer]:
    """Formas certas de montar o trainer, nenhuma igual à da solução."""
    loop = _answers()["train_loop_per_worker"]
    return {
        "dicionário e sem nome": TensorflowTrainer(
            train_loop_per_worker=loop,
            train_loop_config=dict(CONFIG),
            scaling_config=ScalingConfig(**{"num_workers": 2, "resources_per_worker": {"CPU": 1}}),
            run_config=RunConfig(
                storage_path=lab_config.train_storage(),
                failure_config=FailureConfig(max_failures=-1),
            ),
        ),
        "do plano, por atributos": TensorflowTrainer(
            loop,
            train_loop_config=CONFIG,
            scaling_config=ScalingConfig(
                num_workers=PLAN.num_workers, use_gpu=PLAN.use_gpu, resources_per_worker={"CPU": 1}
            ),
            run_config=RunConfig(
                name=f"outro-{time.time_ns()}",
                storage_path=lab_config.train_storage(),
                checkpoint_config=CheckpointConfig(),
                failure_config=FailureConfig(3),
            ),
        ),
    }


def _fake_run(root: Path, epochs: list[int], *, model: bool = True, workers: int = 2) -> Path:
    """A pasta de uma execução como o Ray Train a deixa: um ``checkpoint_*`` por época."""
    run = root / f"execucao-{time.time_ns()}"
    for epoch in epochs:
        folder = run / f"checkpoint_2026-01-01_00-00-0{epoch}.000000"
        folder.mkdir(parents=True)
        for rank in range(workers):
            info = {"rank": rank, "strategy": checks.MWMS, "replicas": workers}
            info.update(global_batch=128, epoch=epoch)
            (folder / f"worker_{rank}.json").write_text(json.dumps(info))
        if model:
            (folder / "model.keras").write_bytes(b"")
    return run


METRICS = dict.fromkeys([*checks.FIT_METRICS, "epoch"], 0.5)


def _judge(facts: dict, storage: Path) -> Path:
    return checks.judge_run(facts, storage=str(storage), **SIZES)


def test_right_trainers_and_runs_pass_the_training_check(tmp_path, monkeypatch):
    monkeypatch.setenv(lab_config.TRAIN_STORAGE_ENV, str(tmp_path))
    for name, trainer in _trainers().items():
        run = _fake_run(tmp_path, [1, 2])
        result = SimpleNamespace(path=str(run), checkpoint="c", metrics=METRICS)
        last = _judge(checks.run_facts(trainer, result), tmp_path)
        assert last.name.endswith("02.000000"), name


def test_wrong_trainers_and_runs_are_caught(tmp_path, monkeypatch):
    monkeypatch.setenv(lab_config.TRAIN_STORAGE_ENV, str(tmp_path))
    trainer = _trainers()["do plano, por atributos"]
    facts = checks.trainer_facts(trainer)
    facts.update(has_checkpoint=True, metrics=sorted(METRICS))
    good = {**facts, "path": str(_fake_run(tmp_path, [1, 2]))}
    _judge(good, tmp_path)
    cases = {
        "não devolveu checkpoint": {"has_checkpoint": False, "metrics": None},
        r"incompletas.*faltam \['val_accuracy'": {"metrics": ["accuracy", "loss", "val_loss"]},
        "num_workers=4": {"num_workers": 4},
        "FailureConfig": {"max_failures": 0},
        "num_to_keep=1": {"num_to_keep": 1},
        "train_loop_config=config": {"loop_config": {"batch_per_worker": 64, "epochs": 5}},
        "fora de": {"path": str(_fake_run(tmp_path.parent / f"fora-{time.time_ns()}", [1, 2]))},
        r"épocas \[2\]": {"path": str(_fake_run(tmp_path, [2]))},  # num_to_keep=1
        "esperado 2": {"path": str(_fake_run(tmp_path, [1, 2], workers=1))},
        "model.keras": {"path": str(_fake_run(tmp_path, [1, 2], model=False))},
    }
    for message, change in cases.items():
        with pytest.raises(checks.CheckFailed, match=message):
            _judge({**good, **change}, tmp_path)
    with pytest.raises(checks.TodoNotDone, match="TODO 4"):
        checks.run_facts(trainer, ...)
    with pytest.raises(checks.CheckFailed, match="TensorflowTrainer"):
        checks.run_facts({"num_workers": 2}, SimpleNamespace(path="x", checkpoint=None))


def test_the_training_check_names_an_unfinished_training_function():
    """O trainer montado com a função ainda no TODO 3: a verificação do TODO 4 diz para terminá-la."""
    ns = _answers('def train_loop_per_worker(config):\n    checks.todo(3, "a função")')
    trainer = TensorflowTrainer(ns["train_loop_per_worker"], train_loop_config=CONFIG)
    with pytest.raises(checks.TodoNotDone, match="^Termine o TODO 3 primeiro"):
        checks.check_training_run(trainer, None, PLAN, CONFIG)


def test_the_trainer_is_checked_before_it_trains(tmp_path, monkeypatch, capsys):
    """A verificação de antes do ``fit``, em segundos: os trainers certos passam; os que perderiam
    o treino (sem recomeço, checkpoints apagados, fora da pasta, um nome já usado) são recusados."""
    monkeypatch.setenv(lab_config.TRAIN_STORAGE_ENV, str(tmp_path))
    start = time.monotonic()
    for trainer in _trainers().values():
        checks.check_trainer(trainer, PLAN, CONFIG)
    assert capsys.readouterr().out.count("✅") == len(_trainers())
    loop, storage = _answers()["train_loop_per_worker"], str(tmp_path)
    (tmp_path / "repetido").mkdir()
    wrong = {
        "max_failures=0": RunConfig(storage_path=storage, failure_config=FailureConfig(0)),
        "max_failures=0 ": RunConfig(storage_path=storage),  # o padrão do FailureConfig
        "num_to_keep=1": RunConfig(
            storage_path=storage,
            failure_config=FailureConfig(2),
            checkpoint_config=CheckpointConfig(num_to_keep=1),
        ),
        "fora de": RunConfig(failure_config=FailureConfig(2)),  # ~/ray_results
        "Já existe": RunConfig(
            name="repetido", storage_path=storage, failure_config=FailureConfig(2)
        ),
    }
    for message, run_config in wrong.items():
        trainer = TensorflowTrainer(
            loop,
            train_loop_config=CONFIG,
            scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
            run_config=run_config,
        )
        with pytest.raises(checks.CheckFailed, match=message.strip()):
            checks.check_trainer(trainer, PLAN, CONFIG)
    assert time.monotonic() - start < 30  # nenhum treino iniciado


def test_check_accuracy(capsys):
    checks.check_accuracy(0.2)
    with pytest.raises(checks.CheckFailed, match="acaso"):
        checks.check_accuracy(0.005)
    with pytest.raises(checks.CheckFailed, match="a perda no lugar"):
        checks.check_accuracy(4.6)
    with pytest.raises(checks.TodoNotDone):
        checks.check_accuracy(...)
    checks.check_accuracy(0.005, is_mock=True)  # dados aleatórios: só informa
    assert "SIMULADOS" in capsys.readouterr().out
