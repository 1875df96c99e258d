"""O que as autoverificações da lição 07 (:mod:`checks` e :mod:`cluster_checks`) compartilham:
as mensagens (``✅``, :class:`CheckFailed`, :class:`TodoNotDone`), o ``todo(...)`` do notebook do
aluno, o detector de TODOs pendentes e a conferência da estratégia de um worker."""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import os
import sys
import textwrap
from typing import Any

MWMS = "MultiWorkerMirroredStrategy"
#: as métricas que cada report leva (as do ``fit`` com validação): as curvas da seção 6 as leem
FIT_METRICS = ("loss", "accuracy", "val_loss", "val_accuracy")


# ---------------------------------------------------------------- as mensagens
class _FriendlyError(Exception):
    """Erro mostrado no Jupyter só com a mensagem (sem traceback)."""

    icon = "❌"

    def _render_traceback_(self) -> list[str]:  # usado pelo IPython no lugar do traceback
        lines = str(self).splitlines() or [type(self).__name__]
        return [f"{self.icon} {lines[0]}"] + [f"   {line}" for line in lines[1:]]


class TodoNotDone(_FriendlyError, NotImplementedError):
    """Um TODO do exercício ainda não foi feito."""

    icon = "🚧"


class CheckFailed(_FriendlyError, AssertionError):
    """Uma autoverificação falhou: a mensagem diz o que conferir."""


def todo(number: int | str, what: str) -> Any:
    """Marca um TODO do aluno: levanta :class:`TodoNotDone` explicando o que falta fazer."""
    raise TodoNotDone(f"TODO {number} ainda não terminado: {what}.")


def unfinished(value: Any, what: str, function: bool = False) -> None:
    """``TodoNotDone`` se ``value`` ainda é ``...``; com ``function``, ``CheckFailed`` se não é uma."""
    if value is Ellipsis:
        raise TodoNotDone(f"{what} ainda não terminado: troque o `...` pelo seu código.")
    if function and not callable(value):
        raise CheckFailed(f"{what} deve ser uma função, recebi {value!r}.")


def ok(message: str) -> None:
    print(f"✅ {message}")


@functools.cache
def _devices_quietly() -> None:
    """Inicia os dispositivos do TensorFlow neste processo com o fd 2 (stderr) em /dev/null: numa
    máquina sem GPU, o TF escreve ali ``failed call to cuInit ... (303)``, que o Jupyter mostra
    em vermelho ao lado do ✅, e segue na CPU. O ``TF_CPP_MIN_LOG_LEVEL`` do processo já foi lido
    no import do TF: só o fd calado o alcança."""
    import tensorflow as tf

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            tf.config.list_physical_devices()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; um erro dentro do código do aluno vira uma mensagem curta."""
    try:
        return fn(*args, **kwargs)
    except (TodoNotDone, CheckFailed):
        raise
    except Exception as err:
        text = " ".join(str(err).split())
        text = text if len(text) <= 400 else text[:400] + "…"
        raise CheckFailed(f"{what} falhou: {type(err).__name__}: {text}") from None


def _first(number: int, check: Any, *args: Any) -> None:
    """A verificação do TODO ``number``, em silêncio: se falha, diz para consertá-lo primeiro."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check(*args)
    except TodoNotDone as err:
        raise TodoNotDone(f"Termine o TODO {number} primeiro. {err}") from None
    except CheckFailed as err:
        raise CheckFailed(f"Conserte o TODO {number} primeiro: {err}") from None


# ---------------------------------------------------------------- um TODO pendente
def _source_tree(fn: Any) -> ast.AST | None:
    """A árvore do código-fonte de ``fn`` (células do notebook também: o IPython as registra no
    ``linecache``); ``None`` se o fonte não existe."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None


def pending_todo(fn: Any) -> str | None:
    """A mensagem do 1º ``checks.todo(...)`` em ``fn`` ou nas funções do módulo que ela usa,
    lida do código-fonte (``ast``): avisa antes dos workers, onde o Ray Train o repetiria a cada
    tentativa."""
    seen: set[int] = set()
    stack = [fn]
    while stack:
        f = stack.pop(0)
        if id(f) in seen or (tree := _source_tree(f)) is None:
            continue
        seen.add(id(f))
        nodes = sorted(
            (n for n in ast.walk(tree) if isinstance(n, ast.Call | ast.Name)),
            key=lambda n: (n.lineno, n.col_offset),
        )  # na ordem do código
        for call in (n for n in nodes if isinstance(n, ast.Call)):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            args = [a.value for a in call.args if isinstance(a, ast.Constant)]
            if name == "todo" and len(args) >= 2:
                return f"TODO {args[0]} ainda não terminado: {args[1]}."
        for name in dict.fromkeys(n.id for n in nodes if isinstance(n, ast.Name)):
            other = getattr(f, "__globals__", {}).get(name)
            if callable(other) and getattr(other, "__module__", None) == f.__module__:
                stack.append(other)
    return None


# ---------------------------------------------------------------- a estratégia de um worker
def _check_worker(rank, strategy, replicas, batch, num_workers: int, global_batch: int) -> None:
    """A estratégia do MODELO de um worker, as réplicas em sincronia e o lote (TODOs 3 e 4)."""
    if str(strategy).startswith("padrão"):
        raise CheckFailed(
            f"O modelo do worker {rank} foi criado FORA de strategy.scope(): cada worker treina "
            "sozinho. Crie e compile o modelo dentro do escopo (o build_model do TODO 2)."
        )
    if strategy != MWMS or replicas != num_workers:
        raise CheckFailed(
            f"O modelo do worker {rank} usa {strategy} com {replicas} réplica(s); esperado {MWMS} "
            f"com {num_workers} (uma por worker), criada no início da função de treino: só ela "
            "soma os gradientes entre processos."
        )
    if batch != global_batch:
        raise CheckFailed(
            f"O worker {rank} usou lote global {batch}, esperado o lote GLOBAL, {global_batch} "
            f"(lote por worker × {num_workers} workers)."
        )
