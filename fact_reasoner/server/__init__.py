"""``fact-reasoner serve``: the same engine as a local HTTP service, with a page at ``/``.

- :mod:`.service`: the stages loaded once, and each request's row made by the command line's
  job (:class:`~fact_reasoner.runner.RecordService`);
- :mod:`.batching`: the NLI pairs of concurrent requests judged together;
- :mod:`.settings`: which settings a request may change (derived from the settings model);
- :mod:`.options`: how requests are admitted, limited and batched (the ``serve`` flags' defaults);
- :mod:`.app`: the FastAPI application (endpoints, limits, auth, deadlines, draining);
- :mod:`.run`: uvicorn, and what SIGTERM does.

Needs the ``serve`` extra (FastAPI, uvicorn): ``pip install -e '.[serve]'`` in this project's checkout.
"""
