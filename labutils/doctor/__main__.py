"""``python -m labutils.doctor``: o diagnóstico na linha de comando."""

from labutils.doctor import main

raise SystemExit(main())
