"""The HTTP reward server behind ``dapo-bench serve`` (docs/serve.md), and the row format of
``dapo-bench verify`` that the CLI and the server share (``rows``).

``app`` (Starlette, run by uvicorn): the endpoints, each a function over an ``AppState``,
validation and refusals; ``verifying``: the verifier workers it drives, admission, reruns
of infrastructure errors, the workers' health as the verifiers' own pools report it;
``prometheus``: its metrics. Imports the verifiers and the ground floor only, never torch, and runs no
candidate code itself. Importing this package is cheap (``rows`` needs no web stack).
"""
