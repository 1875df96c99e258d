"""As autoverificações da lição 07 contra respostas erradas, e a prova de que as fatias são disjuntas.

Cada erro plausível de aluno é aplicado ao código da SOLUÇÃO (uma troca de texto numa célula);
a verificação correspondente tem de falhar com a sua mensagem, e a solução intacta passa em
todas. Tudo em nível de função (sem iniciar workers do Ray): segundos, não minutos.
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
from ray.train import ScalingConfig  # noqa: E402

from labutils import multiworker  # noqa: E402
from labutils.multiworker import checks  # noqa: E402
from labutils.multiworker.worker_checks import _numbered  # noqa: E402
from labutils.tf.data import get_data, split_validation  # noqa: E402
from labutils.tf.model import create_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
PLAN = multiworker.WorkerPlan(2, False, {"CPU": 1.0})


def _cell(defines: str) -> str:
    cells = nbformat.read(SOLUTION, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "code" and defines in c.source)


def _solution(defines: str, *swaps: tuple[str, str]) -> dict:
    """Executa a célula da solução que contém ``defines``, com cada ``(trecho, troca)`` aplicada."""
    source = _cell(defines)
    for old, new in swaps:
        assert old in source, f"o erro {old!r} não se aplica mais à solução: atualize o teste"
        source = source.replace(old, new)
    ns = {
        "__name__": "__main__",
        **{"json": json, "os": os, "tempfile": tempfile, "time": time, "tf": tf, "ray": ray},
        **{"ScalingConfig": ScalingConfig, "plan": PLAN, "checks": checks},
        **{"multiworker": multiworker, "get_data": get_data, "create_model": create_model},
    }
    exec(compile(source, str(SOLUTION), "exec"), ns)
    return ns


SHARD_LINES = (
    "    train = train.shard(num_workers, worker_index)  # ANTES do shuffle (que está no get_data)\n"
    "    val = val.shard(num_workers, worker_index)\n"
)
NO_SHARD = (SHARD_LINES, "")
DATA_POLICY = ("AutoShardPolicy.OFF", "AutoShardPolicy.DATA")

# (nome do erro, célula, trocas, verificação, argumento, mensagem esperada)
MISTAKES = [
    (
        "modelo fora do escopo",
        "def build_model(",
        [("    with strategy.scope():\n", "    if True:  # sem escopo\n")],
        checks.check_build_model,
        "build_model",
        "FORA do escopo",
    ),
    (
        "from_logits=True depois da softmax",
        "def build_model(",
        [("from_logits=False", "from_logits=True")],
        checks.check_build_model,
        "build_model",
        "from_logits=True",
    ),
    (
        "lote por worker usado como global (função)",
        "def global_batch_size(",
        [("return batch_per_worker * num_workers", "return batch_per_worker")],
        checks.check_global_batch,
        "global_batch_size",
        "esperado 128",
    ),
    (
        "lote por worker usado como global (dados)",
        "def worker_datasets(",
        [("global_batch=global_batch)", "global_batch=global_batch // num_workers)")],
        checks.check_worker_datasets,
        "worker_datasets",
        "lote GLOBAL",
    ),
    (
        "sem fatiar: cada worker lê tudo",
        "def worker_datasets(",
        [NO_SHARD],
        checks.check_worker_datasets,
        "worker_datasets",
        "se sobrepõem",
    ),
    (
        "fatia automática DATA com shuffle sem semente (o código antigo)",
        "def worker_datasets(",
        [NO_SHARD, DATA_POLICY],
        checks.check_worker_datasets,
        "worker_datasets",
        "Fatie com dataset.shard",
    ),
    (
        "fatia dupla: shard à mão e a fatia automática DATA",
        "def worker_datasets(",
        [DATA_POLICY],
        checks.check_worker_datasets,
        "worker_datasets",
        "não foram vistos",
    ),
    (
        "fatia depois do shuffle",
        "def worker_datasets(",
        [
            NO_SHARD,
            (
                "    return train_ds.with_options",
                "    train_ds = train_ds.shard(num_workers, worker_index)\n"
                "    return train_ds.with_options",
            ),
        ],
        checks.check_worker_datasets,
        "worker_datasets",
        "Fatie com dataset.shard",
    ),
    (
        "número errado de workers",
        "scaling_config = ScalingConfig(",
        [("num_workers=plan.num_workers", "num_workers=4")],
        checks.check_scaling_config,
        "scaling_config",
        "num_workers=4",
    ),
    (
        "report só no rank 0, sem a barreira",
        "def report_to_ray(",
        [
            (
                "        ray.train.report(metrics, checkpoint=checkpoint)",
                "        if rank == 0:\n            ray.train.report(metrics, checkpoint=checkpoint)",
            )
        ],
        checks.check_reporting,
        "report_to_ray",
        "barreira",
    ),
    (
        "report sem checkpoint",
        "def report_to_ray(",
        [("ray.train.report(metrics, checkpoint=checkpoint)", "ray.train.report(metrics)")],
        checks.check_reporting,
        "report_to_ray",
        "sem checkpoint",
    ),
]


def _call(check, ns: dict, name: str) -> None:
    if check is checks.check_scaling_config:
        check(ns[name], PLAN)
    else:
        check(ns[name])


def test_the_untouched_solution_passes_every_check(capsys):
    cells = {m[1]: m for m in MISTAKES}
    for _, defines, _, check, name, _ in cells.values():
        _call(check, _solution(defines), name)
    assert capsys.readouterr().out.count("✅") == len(cells)


@pytest.mark.parametrize(
    ("defines", "swaps", "check", "name", "message"),
    [m[1:] for m in MISTAKES],
    ids=[m[0] for m in MISTAKES],
)
def test_each_student_mistake_fails_its_check_with_its_message(
    defines, swaps, check, name, message
):
    ns = _solution(defines, *swaps)
    with pytest.raises(checks.CheckFailed, match=message) as info:
        _call(check, ns, name)
    assert info.value._render_traceback_()[0].startswith("❌")  # sem traceback no Jupyter


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


# ---------------------------------------------------------------- as fatias, como no worker


def _worker_epoch(worker_datasets, num_workers: int, index: int, total: int) -> tuple[list, list]:
    """Os números vistos numa época pelo worker ``index``, montando os dados como o
    ``train_epochs`` da solução: validação separada do treino, depois ``worker_datasets``."""
    from labutils.multiworker.worker_checks import _as_the_strategy_sees_it

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
    _shards_cover_once(num_workers, _solution("def worker_datasets(")["worker_datasets"])


@pytest.mark.parametrize(
    "swaps", [[NO_SHARD, DATA_POLICY], [NO_SHARD]], ids=["código antigo (DATA)", "sem fatiar"]
)
def test_the_shard_test_fails_if_the_fix_is_reverted(swaps):
    """Desfeita a correção, o mesmo teste das fatias falha (sobreposição ou buracos)."""
    worker_datasets = _solution("def worker_datasets(", *swaps)["worker_datasets"]
    with pytest.raises(AssertionError, match="uma vez só"):
        _shards_cover_once(2, worker_datasets)
