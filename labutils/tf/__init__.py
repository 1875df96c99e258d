"""TensorFlow do laboratório (lições 05 a 07), um módulo por assunto:

- :mod:`~labutils.tf.devices`: GPUs reais ou a CPU dividida em dispositivos lógicos;
- :mod:`~labutils.tf.data`: o pipeline ``tf.data`` do CIFAR-100 (normalização, lote global,
  validação separada do treino);
- :mod:`~labutils.tf.model`: a CNN, o par saída/perda coerente e o modelo salvo da lição 05;
- :mod:`~labutils.tf.timing`: tempo por época, imagens/s e uso de GPU;
- :mod:`~labutils.tf.plots`: gráficos e tabela centralizado × distribuído.

Este ``__init__`` não importa o TensorFlow: ``devices.setup_devices`` precisa rodar antes dele
inicializar os dispositivos.
"""
