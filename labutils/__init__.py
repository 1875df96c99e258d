"""labutils: o pacote de apoio que os notebooks importam, um módulo por assunto (o mapa está em
``labutils/README.md``). Os módulos são importados sob demanda, para que ``import labutils``
seja rápido: o TensorFlow e o Ray só carregam quando um notebook precisa deles."""

from labutils.config import Sizes, current_scale, pick, set_default_env, sizes
from labutils.timing import Timer

set_default_env()  # antes de qualquer `import ray`: o mesmo modo de autenticação em todos

__all__ = ["Sizes", "Timer", "current_scale", "pick", "sizes"]
