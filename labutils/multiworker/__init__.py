"""O exercício multi-worker (lição 07): Ray Train + ``MultiWorkerMirroredStrategy``.

Cada módulo faz uma coisa:

- :mod:`~labutils.multiworker.legacy_keras`: o tf-keras que a estratégia exige no ``model.fit``;
- :mod:`~labutils.multiworker.plan`: o cluster comporta os workers pedidos? (falha na hora);
- :mod:`~labutils.multiworker.workers`: o que cada worker usou, gravado no checkpoint; retomar;
- :mod:`~labutils.multiworker.launch`: achar um TODO pendente; ``trainer.fit()`` com prazo (o
  benchmark usa; no notebook, o ``fit`` é do aluno);
- :mod:`~labutils.multiworker.by_hand` (e ``worker_process``, o processo de cada worker): o
  mesmo treino sem Ray, com ``TF_CONFIG`` à mão;
- :mod:`~labutils.multiworker.checks` (e ``worker_checks``, ``loop_check``, ``feedback``): as
  autoverificações do notebook do aluno e as suas mensagens.

Os nomes mais usados ficam aqui (``multiworker.plan_workers``...). Nenhum destes módulos importa
o TensorFlow ao ser importado: ``use_legacy_keras()`` precisa rodar antes.
"""

from labutils.multiworker.by_hand import launch_by_hand, tf_configs
from labutils.multiworker.launch import fit_timeout_s, pending_todo, run_trainer
from labutils.multiworker.legacy_keras import LEGACY_KERAS_ENV, runtime_env, use_legacy_keras
from labutils.multiworker.plan import WorkerPlan, plan_workers
from labutils.multiworker.workers import (
    checkpoint_epoch,
    describe_worker,
    read_workers,
    resume,
    save_checkpoint,
    strategy_name,
    workers_table,
    write_worker,
)

__all__ = [
    "LEGACY_KERAS_ENV",
    "WorkerPlan",
    "checkpoint_epoch",
    "describe_worker",
    "fit_timeout_s",
    "launch_by_hand",
    "pending_todo",
    "plan_workers",
    "read_workers",
    "resume",
    "run_trainer",
    "runtime_env",
    "save_checkpoint",
    "strategy_name",
    "tf_configs",
    "use_legacy_keras",
    "workers_table",
    "write_worker",
]
