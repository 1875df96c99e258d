"""As mensagens das autoverificações: erros mostrados no Jupyter sem traceback.

:class:`TodoNotDone` ("ainda não terminado", para ``checks.todo(...)`` ou o marcador ``...``) e
:class:`CheckFailed` (o que está errado e como corrigir). Os ``check_*`` ficam em
:mod:`~labutils.multiworker.checks`.
"""

from __future__ import annotations

from typing import Any


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
