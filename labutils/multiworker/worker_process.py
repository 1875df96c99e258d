"""Um processo de worker "à mão" (:func:`labutils.multiworker.by_hand.launch_by_hand`).

``python -m labutils.multiworker.worker_process PASTA ÍNDICE``: lê a função serializada em
``PASTA/job.pkl``, roda-a e grava o retorno em ``PASTA/result_ÍNDICE.pkl``.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(workdir: str, index: str) -> int:
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    fn, config = cloudpickle.loads((Path(workdir) / "job.pkl").read_bytes())
    value = fn(config)
    (Path(workdir) / f"result_{index}.pkl").write_bytes(cloudpickle.dumps(value))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
