"""``python -m tools.bench``: roda as seções pedidas e grava o relatório."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from labutils.config import SCALES, current_scale
from tools.bench.report import Report, machine_info

#: as seções, na ordem do relatório, e o módulo de cada uma
SECTIONS = {"search": "search_bench", "ray": "ray_overheads", "tf": "tf_bench",
            "inference": "inference_bench"}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__)
    parser.add_argument("--scale", choices=SCALES, default=None, help="padrão: LABUTILS_SCALE")
    parser.add_argument("--repeats", type=int, default=3, help="repetições de cada medida")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"seções, entre vírgulas: "
                        f"{', '.join(SECTIONS)}")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("results") / "bench")
    parser.add_argument(
        "--synthetic-data",
        action="store_true",
        help="sem os dados reais em data/, mede com dados SINTÉTICOS do tamanho real "
        "(o relatório diz isso em cada linha); sem esta opção, a seção diz o que falta",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats deve ser pelo menos 1, recebi {args.repeats}.")
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown or not only:
        parser.error(f"seções desconhecidas: {unknown}; use algumas destas: {', '.join(SECTIONS)}")
    if args.synthetic_data:  # os carregadores de labutils.data, aqui e nos processos de medida
        os.environ["LABUTILS_SYNTHETIC_DATA"] = "1"
    scale = args.scale or current_scale()
    report = Report(machine_info(scale))
    for section, module in SECTIONS.items():
        if section in only:
            importlib.import_module(f"tools.bench.{module}").run(report, args.repeats, scale)
            paths = report.write(args.out)  # a cada seção: o que já foi medido fica salvo
    print(report.markdown())
    print("\n".join(f"{kind}: {path}" for kind, path in paths.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
