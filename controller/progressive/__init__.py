"""The progressive controller (docs/rules.md "Progressive: the controller").

- ``model``: the pure meter model (parameters, MeterState, the events each request makes);
- ``controller``: the API (:class:`Progressive`), its answers, the store interface and
  :class:`ProgressiveController`;
- ``journal_store``: the stand-alone store, the table's own journal;
- ``parameters``: the one function a manager's change of parameters goes through.
"""
