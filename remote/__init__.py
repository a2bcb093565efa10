"""How any layer talks to a remote service and shows what it said: the one Google REST client, one TLS context.

A leaf: it imports nothing else of the project, so the TPU provider (components/) and every reader
(verify/, gemma_mcp/) share one client without a layer reaching up. Nothing here loads at plan time: a
plan imports none of these modules (tests/preview/test_plan_imports.py), the TPU provider loads them when
`pulumi up` really talks to Google.
"""
