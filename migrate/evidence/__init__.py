"""Evidence sources, each independent of the others: ``torchlib`` (a static scan of the
library's annotations), ``opinfo`` (OpInfo samples run under the recorders) and ``probe``
(captured calls made again with other dtypes), the last two on the worker processes and
records of ``runtime``."""
