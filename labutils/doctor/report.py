"""O relatório: resumo, texto da linha de comando, tabela do notebook 00 e código de saída."""

from __future__ import annotations

from collections.abc import Iterable

from labutils.doctor.rows import FAIL, OK, WARN, Row


class EnvironmentNotReady(RuntimeError):
    """Algum item do diagnóstico impede as lições (❌)."""


def exit_code(rows: Iterable[Row], strict: bool = False) -> int:
    """1 se alguma linha bloqueia as lições (ou, com ``strict``, se houver avisos)."""
    bad = {FAIL, WARN} if strict else {FAIL}
    return 1 if any(r.status in bad for r in rows) else 0


def require_ready(rows: list[Row]) -> None:
    """Levanta :class:`EnvironmentNotReady` com o que fazer, se alguma linha for ❌."""
    fails = [r for r in rows if r.blocks]
    if fails:
        steps = "\n".join(f"  - {r.item}: {r.detail}\n    → {r.remedy}" for r in fails)
        raise EnvironmentNotReady(f"O ambiente ainda não está pronto para as lições:\n{steps}")


def summary(rows: list[Row]) -> str:
    fails = [r for r in rows if r.status == FAIL]
    warns = [r for r in rows if r.status == WARN]
    if fails:
        return f"{FAIL} {len(fails)} problema(s) impedem as lições: " + "; ".join(
            r.item for r in fails
        )
    if warns:
        return f"{WARN} Pronto para as lições, com {len(warns)} aviso(s): " + "; ".join(
            r.item for r in warns
        )
    return f"{OK} Tudo pronto para as lições."


def format_report(rows: list[Row]) -> str:
    width = max(len(r.item) for r in rows)
    lines = []
    for r in rows:
        lines.append(f"{r.status} {r.item:<{width}}  {r.detail}")
        if r.remedy:
            lines.append(f"{'':{width + 3}}→ {r.remedy}")
    return "\n".join(lines + ["", summary(rows)])


def as_frame(rows: Iterable[Row]):
    """O relatório como tabela (pandas), para o notebook 00."""
    import pandas as pd

    return pd.DataFrame(
        [(r.status, r.item, r.detail, r.remedy) for r in rows],
        columns=["", "item", "detalhe", "como resolver"],
    )


def as_table(rows: Iterable[Row]):
    """A tabela do notebook 00: sem índice, texto inteiro e alinhado à esquerda."""
    return (
        as_frame(rows)
        .style.hide(axis="index")
        .set_properties(**{"text-align": "left", "white-space": "pre-wrap"})
    )
