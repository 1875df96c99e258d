"""A linha do relatório (:class:`Row`), os símbolos de situação e a proteção de cada verificação."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

OK, WARN, FAIL = "✅", "⚠️", "❌"
INSTALL_HINT = 'rode `make setup` (ou `pip install -e ".[test]"`) na raiz do repositório'


@dataclass(frozen=True)
class Row:
    """Uma linha do relatório: situação, item, detalhe e, quando algo falta, como resolver."""

    status: str
    item: str
    detail: str
    remedy: str = ""

    @property
    def blocks(self) -> bool:
        return self.status == FAIL


def guard(item: str, check: Callable[[], Row | list[Row]]) -> list[Row]:
    """Roda uma verificação; um erro inesperado vira uma linha ❌, não derruba o relatório."""
    try:
        out = check()
    except Exception as err:  # o diagnóstico deve sempre terminar
        return [Row(FAIL, item, f"a verificação falhou: {type(err).__name__}: {err}", INSTALL_HINT)]
    return out if isinstance(out, list) else [out]
