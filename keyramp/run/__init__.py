"""How load is generated and measured: the runner (one process or Locust master/workers),
the Locust users (keyramp's own and a Python workload's), the pacer, the recorder and the
live status. What the users do is ``keyramp.workload``; what they write, ``keyramp.results``."""
