"""How load is generated and measured: the runner (one process or Locust master/workers),
the Locust user, the workload, the pacer, the recorder and the live status."""
