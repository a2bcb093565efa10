"""What a credential looks like, for the policy pack and the stack settings alike.

Why here, standard library only: the policy pack runs in its own environment and imports nothing of
the project, while the settings (stacks/credentials.py) may import this module; one list of shapes
keeps the two gates from disagreeing about what counts as a leaked token. The shapes are the
documented prefixes of each issuer, so ordinary values (commit ids, digests, paths) never match.
"""

from __future__ import annotations

import re

PRIVATE_KEY_KIND = "a private key"

# (what it is, its shape). Each shape is linear in the length of the text it searches (tests/verify/test_redact.py).
# Sources: each issuer's token format documentation, read 2026-11.
CREDENTIAL_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # https://huggingface.co/docs/hub/security-tokens: user access tokens start with hf_.
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    # https://cloud.google.com/docs/authentication/api-keys: Google API keys start with AIza.
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    # Google OAuth 2.0 access tokens (https://developers.google.com/identity/protocols/oauth2) start ya29.
    ("a Google OAuth access token", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    # https://docs.github.com/en/authentication: gh[pousr]_ and github_pat_ prefixes.
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    # AWS access key ids (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html).
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    # OpenAI / Anthropic style API keys: sk- followed by a long secret.
    ("an API key (sk-...)", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    # Slack tokens (https://api.slack.com/authentication/token-types): xoxb-, xoxp-, ...
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    # PEM private keys, e.g. inside a pasted service-account key file.
    (PRIVATE_KEY_KIND, re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    # JSON Web Tokens (RFC 7519): three base64url parts, the first two JSON objects ("eyJ"). It starts where a
    # run of base64url characters starts (not after a letter, digit, _ or -): a `\b` alone would let every
    # `-eyJ` inside one long run start a new scan of it, quadratic in the run's length.
    (
        "a JSON Web Token",
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    # user:password@ in a URL, from the `://` on: a scheme pattern in front would rescan every run of letters
    # from each of its positions (quadratic: two 200 KB log lines took 38 s).
    ("a password inside a URL", re.compile(r"://[^/\s:@]+:[^/\s@]+@")),
)

# `vllm serve` flags whose value is a credential whatever it looks like (vLLM 0.32 serve flags).
CREDENTIAL_FLAGS = frozenset({"--hf-token", "--api-key"})


def credential_kind(text: str) -> str | None:
    """What kind of credential `text` contains ("a Hugging Face token"), or None when it holds none."""
    for kind, shape in CREDENTIAL_SHAPES:
        if shape.search(text):
            return kind
    return None
