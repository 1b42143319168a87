"""Probe evidence. In the workers: ``worker`` (captured calls made again with slots cast to
other dtypes). In the parent: ``merge`` (what ATen accepted and refused, as plan terms)."""
