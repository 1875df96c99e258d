"""Rodar o ``trainer.fit()`` do Ray Train com limite de tempo e TODOs do aluno traduzidos.

No notebook da lição 07 o ``trainer.fit()`` é do aluno, numa célula, no thread principal (onde o
Interrupt do Jupyter aborta o treino); :func:`run_trainer` fica para o benchmark, que precisa do
prazo. :func:`pending_todo` serve às verificações, antes de iniciar qualquer processo.

- :func:`pending_todo`: acha um ``checks.todo(...)`` ainda presente no laço dos workers ANTES de
  iniciá-los (lá dentro, o erro se repetiria a cada nova tentativa do Ray Train);
- :func:`run_trainer`: ``trainer.fit()`` numa thread, com prazo; um ``TodoNotDone`` vindo de um
  worker vira a mensagem curta.
"""

from __future__ import annotations

import threading
from typing import Any

from labutils.config import pick
from labutils.multiworker.feedback import TodoNotDone


def fit_timeout_s() -> float:
    """Limite de tempo de um treino multi-worker (a escala ``smoke`` não pode travar o CI)."""
    return pick(full=4 * 3600.0, smoke=420.0)


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


def _find_todo(err: BaseException) -> BaseException | None:
    seen: set[int] = set()
    stack: list[BaseException] = [err]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, TodoNotDone):
            return e
        stack.extend(getattr(e, "worker_failures", {}).values())
        for attr in ("__cause__", "__context__", "cause", "controller_failure"):
            inner = getattr(e, attr, None)
            if isinstance(inner, BaseException):
                stack.append(inner)
    return None


def run_trainer(trainer: Any, timeout_s: float | None = None) -> Any:
    """``trainer.fit()`` com limite de tempo; um TODO não feito num worker vira ``TodoNotDone``.

    Se o treino passar de ``timeout_s`` (padrão: :func:`fit_timeout_s`), levanta
    ``TimeoutError`` em vez de travar o notebook. Nesse caso rode ``ray.shutdown()``.
    """
    if timeout_s is not None and not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s deve ser um número de segundos > 0, recebi {timeout_s!r}.")
    if not callable(getattr(trainer, "fit", None)):
        raise TypeError(
            f"run_trainer espera um trainer do Ray Train (com .fit()), recebi {trainer!r}."
        )
    for name in ("scaling_config", "train_loop_per_worker"):
        if getattr(trainer, name, None) is Ellipsis:
            raise TodoNotDone(f"{name} ainda não terminado: troque o `...` pelo seu código.")
    todo = pending_todo(getattr(trainer, "train_loop_per_worker", None))
    if todo:  # antes de iniciar os workers: lá dentro, o erro se repetiria a cada tentativa
        raise TodoNotDone(todo)
    timeout_s = fit_timeout_s() if timeout_s is None else timeout_s
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = trainer.fit()
        except BaseException as err:  # repassado à thread do notebook
            box["error"] = err

    thread = threading.Thread(target=target, name="trainer.fit", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(
            f"O treino passou de {timeout_s:g} s sem terminar. Causas comuns: um worker esperando "
            "um par que nunca subiu, ou recursos ocupados. Rode `ray.shutdown()` e confira o "
            "dashboard."
        )
    if "error" in box:
        todo = _find_todo(box["error"])
        if todo is not None:
            raise TodoNotDone(str(todo).splitlines()[-1].split("TodoNotDone: ")[-1]) from None
        raise box["error"]
    return box["result"]
