"""OpInfo evidence. In the workers: ``worker`` (the OpInfo jobs). In the parent: ``sweep``
(running and caching OpInfos), ``observations`` (variables from what was observed); the
plans derived from the cache are ``migrate.evidence.derived``'s."""
