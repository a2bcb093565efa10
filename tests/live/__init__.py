"""Tests against a real vLLM 0.32 server on the CPU (``make test-live``), and the code that runs one."""
