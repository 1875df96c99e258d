"""As autoverificações da lição 07 contra respostas erradas, e a prova de que as fatias são disjuntas.

Cada erro plausível de aluno é aplicado ao código da SOLUÇÃO (uma troca de texto numa célula);
a verificação logo abaixo daquele TODO (a rápida, que roda antes do treino de verdade) tem de
falhar com a sua mensagem, e a solução intacta passa em todas. Os TODOs 1, 2 e 4 são conferidos
no próprio processo (frações de segundo); a função de treino (TODO 3), em 2 processos por um
passo (~7–12 s cada), sem iniciar o Ray.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
import pytest  # noqa: E402
import ray  # noqa: E402
import ray.train  # noqa: E402
import tensorflow as tf  # noqa: E402
from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig  # noqa: E402
from ray.train.tensorflow import TensorflowTrainer  # noqa: E402

from labutils import config as lab_config  # noqa: E402
from labutils import multiworker  # noqa: E402
from labutils.data import load_cifar100  # noqa: E402
from labutils.lesson05 import create_model, get_data
from labutils.multiworker import checks  # noqa: E402
from labutils.multiworker.checks import _numbered  # noqa: E402
from labutils.tf import split_validation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
PLAN = multiworker.WorkerPlan(2, False, {"CPU": 1.0})
CONFIG = {"batch_per_worker": 64, "epochs": 2}
NAMESPACE = {
    **{"json": json, "os": os, "tempfile": tempfile, "time": time, "tf": tf, "ray": ray},
    **{"checks": checks, "multiworker": multiworker, "lab_config": lab_config, "plan": PLAN},
    **{"get_data": get_data, "split_validation": split_validation, "create_model": create_model},
    **{"load_cifar100": load_cifar100, "config": CONFIG, "TensorflowTrainer": TensorflowTrainer},
    **{"ScalingConfig": ScalingConfig, "RunConfig": RunConfig, "FailureConfig": FailureConfig},
    "CheckpointConfig": CheckpointConfig,
}
#: as células que definem as peças do aluno, na ordem do notebook
PIECES = (
    "def worker_datasets(",
    "def build_model(",
    "def save_checkpoint(",
    "def train_loop_per_worker(",
    "trainer = TensorflowTrainer(\n    train_loop_per_worker,",
)


def _cell(defines: str) -> str:
    cells = nbformat.read(SOLUTION, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "code" and defines in c.source)


def _solution(*swaps: tuple[str, str], plan: multiworker.WorkerPlan = PLAN) -> dict:
    """Executa as células das peças do aluno da solução, com cada ``(trecho, troca)`` aplicada
    e o plano ``plan`` (o de :func:`multiworker.plan_workers`)."""
    sources = [_cell(piece) for piece in PIECES]
    for old, new in swaps:
        hits = [i for i, source in enumerate(sources) if old in source]
        assert hits, f"o erro {old!r} não se aplica mais à solução: atualize o teste"
        sources[hits[0]] = sources[hits[0]].replace(old, new)
    ns = {"__name__": "__main__", **NAMESPACE, "plan": plan}
    for source in sources:
        exec(compile(source, str(SOLUTION), "exec"), ns)
    ns["_touched"] = {PIECES[i] for i, source in enumerate(sources) if source != _cell(PIECES[i])}
    return ns


def _check_data(ns):
    checks.check_worker_datasets(ns["worker_datasets"])


def _check_model(ns):
    checks.check_build_model(ns["build_model"])


def _check_loop(ns):
    checks.check_training_function(ns["train_loop_per_worker"], CONFIG)


def _check_trainer(ns):
    checks.check_trainer(ns["trainer"], PLAN, ns["train_loop_per_worker"])


#: a verificação de cada TODO, na ordem do notebook (a 1ª que falhar é a que o aluno vê)
FAST_CHECKS = {"TODO 1": _check_data, "TODO 2": _check_model, "TODO 3": _check_loop}
FAST_CHECKS["TODO 4"] = _check_trainer

SHARD_LINES = (
    "    train = train.shard(num_workers, worker_index)  # ANTES do shuffle (que está no get_data)\n"
    "    val = val.shard(num_workers, worker_index)\n"
)
NO_SHARD = (SHARD_LINES, "")
DATA_POLICY = ("AutoShardPolicy.OFF", "AutoShardPolicy.DATA")
STRATEGY = (
    "    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # 1º, antes de qualquer op do TF\n"
)
MODEL = "    model = build_model(strategy, cifar.num_classes)\n"
REPORT = (
    "            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))"
)

# (nome do erro, trocas, onde deve ser pego, mensagem esperada)
MISTAKES = [
    (
        "modelo fora do escopo",
        [("    with strategy.scope():\n", "    if True:  # sem escopo\n")],
        "TODO 2",
        "FORA do escopo",
    ),
    (
        "from_logits=True depois da softmax",
        [("from_logits=False", "from_logits=True")],
        "TODO 2",
        "from_logits=True",
    ),
    (
        "lote por worker usado como global (dados)",
        [("global_batch=global_batch)", "global_batch=global_batch // num_workers)")],
        "TODO 1",
        "lote GLOBAL",
    ),
    ("sem fatiar: cada worker lê tudo", [NO_SHARD], "TODO 1", "se sobrepõem"),
    (
        "fatia automática DATA com shuffle sem semente (o código antigo)",
        [NO_SHARD, DATA_POLICY],
        "TODO 1",
        "Fatie com dataset.shard",
    ),
    (
        "fatia dupla: shard à mão e a fatia automática DATA",
        [DATA_POLICY],
        "TODO 1",
        "não foram vistos",
    ),
    (
        "fatia depois do shuffle",
        [
            NO_SHARD,
            (
                "    return train_ds.with_options",
                "    train_ds = train_ds.shard(num_workers, worker_index)\n"
                "    return train_ds.with_options",
            ),
        ],
        "TODO 1",
        "Fatie com dataset.shard",
    ),
    (
        "estratégia criada depois de carregar os dados",
        [(STRATEGY, ""), (MODEL, STRATEGY.replace("  # 1º", "  # tarde") + MODEL)],
        "TODO 3",
        "não foi a primeira operação",
    ),
    (
        "MirroredStrategy no lugar da MultiWorkerMirroredStrategy",
        [
            (
                "tf.distribute.MultiWorkerMirroredStrategy()  # 1º",
                "tf.distribute.MirroredStrategy()  # 1º",
            )
        ],
        "TODO 3",
        "usa MirroredStrategy com 1 réplica",
    ),
    (
        "lote por worker usado como global (função de treino)",
        [
            (
                'global_batch = config["batch_per_worker"] * num_workers',
                'global_batch = config["batch_per_worker"]',
            )
        ],
        "TODO 3",
        "lote GLOBAL, 128",
    ),
    (
        "report só no rank 0, sem a barreira",
        [(REPORT, "            if rank == 0:\n    " + REPORT)],
        "TODO 3",
        "barreira",
    ),
    (
        "número errado de workers",
        [("num_workers=plan.num_workers", "num_workers=4")],
        "TODO 4",
        "num_workers=4",
    ),
    (
        "sem recomeço após falha",
        [("        failure_config=FailureConfig(max_failures=2),", "")],
        "TODO 4",
        "FailureConfig",
    ),
    (
        "menos checkpoints que épocas: as curvas perderiam as primeiras",
        [("CheckpointConfig(num_to_keep=None)", "CheckpointConfig(num_to_keep=1)")],
        "TODO 4",
        "num_to_keep=1",
    ),
    (
        "nome repetido: retomaria a execução anterior",
        [("name=f\"licao07-{time.strftime('%Y%m%d-%H%M%S')}\"", 'name="."')],
        "TODO 4",
        "nome NOVO",
    ),
]


def _first_failure(ns: dict) -> tuple[str, checks.CheckFailed]:
    """Roda as verificações na ordem do notebook; devolve a 1ª que falhou e o erro.

    A do TODO 3 (2 processos, segundos) só roda se o erro mexeu na função de treino: intacta, ela
    é a da solução, que passa (teste acima)."""
    for todo, check in FAST_CHECKS.items():
        if check is _check_loop and "def train_loop_per_worker(" not in ns["_touched"]:
            continue
        try:
            check(ns)
        except checks.CheckFailed as err:
            return todo, err
    raise AssertionError("nenhuma verificação rápida falhou")


@pytest.mark.timeout(120)
def test_the_untouched_solution_passes_every_check_that_runs_in_this_process(capsys):
    """O controle dos erros abaixo. A verificação da função de treino (TODO 3, 2 processos) da
    solução roda na correção da cópia com um erro só no modelo (``tests/test_grade.py``), que
    confere que todas as outras verificações passam: repeti-la aqui custava ~20 s do
    ``make test``."""
    ns = _solution()
    for check in FAST_CHECKS.values():
        if check is not _check_loop:
            check(ns)
    assert capsys.readouterr().out.count("✅") == 4  # TODOs 1, 2 e 4; o do trainer: 2 linhas


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("swaps", "where", "message"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_each_student_mistake_is_caught_by_the_fast_check_of_its_todo(swaps, where, message):
    """O erro é pego pela verificação rápida do TODO onde ele está, com a sua mensagem, antes
    do treino de verdade (nenhuma verificação anterior reclama)."""
    todo, err = _first_failure(_solution(*swaps))
    assert todo == where, f"pego em {todo}, esperado em {where}: {err}"
    assert message in str(err), str(err)
    assert err._render_traceback_()[0].startswith("❌")  # sem traceback no Jupyter


@pytest.mark.timeout(120)
def test_a_failure_config_without_a_limit_is_a_right_answer(capsys):
    """``FailureConfig(max_failures=-1)`` (recomeçar sempre) é uma configuração válida do Ray."""
    _check_trainer(_solution(("FailureConfig(max_failures=2)", "FailureConfig(max_failures=-1)")))
    assert "recomeça sempre que um worker cair" in capsys.readouterr().out


def test_with_a_gpu_per_worker_the_example_and_the_trainer_ask_ray_train_for_them(capsys):
    """Numa máquina com uma GPU por worker, o plano pede ``{"GPU": 1}`` a cada um; o Ray Train
    recusa esse ``resources_per_worker`` sem ``use_gpu=True`` ("`use_gpu` is False but `GPU` was
    found"). O exemplo da seção 3 e o trainer do TODO 4 passam os dois."""
    import ast

    gpu_plan = multiworker.WorkerPlan(2, True, {"CPU": 1.0, "GPU": 1.0})
    made = []

    def trainer_until_fit(*_, scaling_config, **__):
        made.append(scaling_config)
        raise InterruptedError  # o exemplo para aqui, sem treinar

    example = ast.parse(_cell("def rodar_exemplo("))
    example.body = [n for n in example.body if isinstance(n, ast.FunctionDef)]
    ns = {**NAMESPACE, "plan": gpu_plan, "TensorflowTrainer": trainer_until_fit}
    ns["exemplo_por_worker"] = None  # a função dos workers: não chega a rodar
    exec(compile(example, str(SOLUTION), "exec"), ns)
    with pytest.raises(InterruptedError):
        ns["rodar_exemplo"](2)
    assert made[0].use_gpu and made[0].num_gpus_per_worker == 1
    trainer = _solution(plan=gpu_plan)["trainer"]
    checks.check_scaling_config(trainer.scaling_config, gpu_plan)
    assert "use_gpu=True" in capsys.readouterr().out


def test_the_check_result_sees_what_the_model_used_not_the_strategy_object():
    """Um modelo criado fora do escopo, com uma estratégia existindo no processo: a descrição do
    worker vem de ``model.distribute_strategy`` e o ``check_result`` recusa."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    outside = create_model(num_classes=3)
    with strategy.scope():
        inside = create_model(num_classes=3)
    assert multiworker.describe_worker(inside, 8)["strategy"] == "OneDeviceStrategy"
    info = multiworker.describe_worker(outside, 8)
    assert info["strategy"].startswith("padrão"), info
    result = type("R", (), {"checkpoint": "c", "metrics": {"loss": 1.0, "accuracy": 0.5}})()
    workers = [{**info, "rank": r, "replicas": 2, "global_batch": 128} for r in range(2)]
    with pytest.raises(checks.CheckFailed, match="FORA de strategy.scope"):
        checks.check_result(result, workers, num_workers=2, batch_per_worker=64)
    with pytest.raises(checks.CheckFailed, match="esperado 3"):  # número errado de workers
        checks.check_result(result, workers, num_workers=3, batch_per_worker=64)


def test_the_trainer_check_refuses_a_training_function_with_a_todo():
    """O trainer bem montado, com a função do aluno ainda no TODO 3: a verificação do TODO 4
    avisa antes do fit (nos workers, o erro se repetiria a cada nova tentativa)."""
    ns = _solution(
        (
            "    strategy = tf.distribute",
            "    checks.todo(3, 'a função')\n    strategy = tf.distribute",
        )
    )
    with pytest.raises(checks.TodoNotDone, match="TODO 3 ainda não terminado"):
        _check_trainer(ns)


def test_the_training_function_verdict_also_refuses_no_fit_and_diverging_weights():
    """Os casos da verificação do TODO 3 conferidos sem iniciar processos, com o que os workers
    anotariam: um worker que não treinou, report sem checkpoint, sem as métricas, sem o modelo no
    rank 0, e pesos diferentes depois do passo (que os erros acima não alcançam: são pegos antes)."""
    from labutils.multiworker.checks import _EXAMPLES, _verdict

    ids = list(range(_EXAMPLES // 10, _EXAMPLES))
    fit = {"strategy": "MultiWorkerMirroredStrategy", "replicas": 2, "batch": 128}
    report = {"metrics": ["accuracy", "epoch", "loss"], "files": ["model.keras", "worker_0.json"]}
    seen = [
        {"rank": r, "fits": [{**fit, "ids": ids[r::2]}], "weights": [1.0, 2.0], "reports": []}
        for r in range(2)
    ]
    for r, worker in enumerate(seen):
        worker["reports"] = [{**report, "files": ["model.keras", f"worker_{r}.json"]}]
    _verdict(seen, 2, 128)  # tudo certo
    with pytest.raises(checks.CheckFailed, match="não chamou model.fit"):
        _verdict([{**seen[0], "fits": []}, seen[1]], 2, 128)
    with pytest.raises(checks.CheckFailed, match="os gradientes não foram somados"):
        _verdict([seen[0], {**seen[1], "weights": [1.0, 2.5]}], 2, 128)
    broken = {
        "sem checkpoint": {"files": []},
        "inclua 'loss'": {"metrics": ["epoch", "loss"]},
        r"faltam \['model.keras'\]": {"files": ["worker_0.json"]},
    }
    for message, change in broken.items():
        first = {**seen[0], "reports": [{**seen[0]["reports"][0], **change}]}
        with pytest.raises(checks.CheckFailed, match=message):
            _verdict([first, seen[1]], 2, 128)


# ---------------------------------------------------------------- as fatias, como no worker


def _worker_epoch(worker_datasets, num_workers: int, index: int, total: int) -> tuple[list, list]:
    """Os números vistos numa época pelo worker ``index``, montando os dados como o
    ``train_epochs`` da solução: validação separada do treino, depois ``worker_datasets``."""
    from labutils.multiworker.checks import _as_the_strategy_sees_it

    train, val = split_validation(_numbered(0, total), total)
    made = worker_datasets(
        train, val, global_batch=8 * num_workers, num_workers=num_workers, worker_index=index
    )
    seen = []
    for dataset in made:
        dataset = _as_the_strategy_sees_it(dataset, num_workers, index, 8 * num_workers)
        seen.append([int(i) for _, ids in dataset for i in ids.numpy()])
    return seen[0], seen[1]


def _shards_cover_once(num_workers: int, worker_datasets) -> None:
    total = 200
    seen = [_worker_epoch(worker_datasets, num_workers, i, total) for i in range(num_workers)]
    train = sorted(i for t, _ in seen for i in t)
    val = sorted(i for _, v in seen for i in v)
    assert val == list(range(20)), "a validação são os primeiros 10% do treino, uma vez só"
    assert train == list(range(20, total)), "o treino (sem a validação) é visto uma vez só"


@pytest.mark.parametrize("num_workers", [2, 3])
def test_worker_shards_are_disjoint_and_cover_train_and_validation_once(num_workers):
    _shards_cover_once(num_workers, _solution()["worker_datasets"])


@pytest.mark.parametrize(
    "swaps", [[NO_SHARD, DATA_POLICY], [NO_SHARD]], ids=["código antigo (DATA)", "sem fatiar"]
)
def test_the_shard_test_fails_if_the_fix_is_reverted(swaps):
    """Desfeita a correção, o mesmo teste das fatias falha (sobreposição ou buracos)."""
    worker_datasets = _solution(*swaps)["worker_datasets"]
    with pytest.raises(AssertionError, match="uma vez só"):
        _shards_cover_once(2, worker_datasets)
