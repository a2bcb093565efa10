"""Read-only calls to a GKE cluster's Kubernetes API: the same Google access token, the cluster's own CA.

Why not the `kubernetes` client library: `verify status` makes five GETs (a Deployment, its pods, their
events, the HPA, the Service) and reads one log; the library would add a large generated client and a
kubeconfig dance for that. GKE's API server accepts the caller's Google OAuth access token as a bearer
token (what gke-gcloud-auth-plugin hands kubectl), so one httpx client with the cluster's CA does it.
Bodies are parsed at the edge into pydantic models of the Kubernetes OpenAPI shapes (verify/ops/k8s_answers.py).
Tests point `base_url` at a local fake on 127.0.0.1 over plain HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
from typing import Any

import httpx

from remote.google_client import CALL_DEADLINE_S, MAX_BODY_BYTES, TokenSource
from remote.google_errors import CannotCheckError, json_object
from remote.tls import default_tls


class KubernetesApiError(CannotCheckError):
    """The API server answered an error (`Status` object): its code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"Kubernetes API answered {code}: {message}")
        self.code = code


class KubernetesApi:
    """GETs against one cluster's API server."""

    def __init__(
        self,
        base_url: str,
        tokens: TokenSource,
        *,
        ca_pem: str | None = None,
        transport: httpx.BaseTransport | None = None,
        deadline_s: float = CALL_DEADLINE_S,
    ) -> None:
        verify = ssl.create_default_context(cadata=ca_pem) if ca_pem else default_tls()
        self._tokens = tokens
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            verify=verify,
            transport=transport,
            timeout=httpx.Timeout(deadline_s),
            headers={"User-Agent": "gemma-serving-verify-ops"},
            follow_redirects=False,
        )

    @classmethod
    def for_cluster(cls, endpoint: str, ca_certificate: str, tokens: TokenSource) -> KubernetesApi:
        """The real cluster: `https://<endpoint>`, its CA as GKE returns it (base64 PEM)."""
        pem = base64.b64decode(ca_certificate).decode() if ca_certificate else None
        return cls(f"https://{endpoint}", tokens, ca_pem=pem)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KubernetesApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, params: dict[str, Any] | None) -> httpx.Response:
        token, _ = self._tokens()
        try:
            response = self._client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as error:
            raise CannotCheckError(f"Kubernetes API unreachable: {type(error).__name__}: {error}") from None
        if len(response.content) > MAX_BODY_BYTES:
            raise CannotCheckError(f"Kubernetes API answered more than {MAX_BODY_BYTES} bytes; not read")
        if response.status_code >= 400:
            message = response.text[:300]
            with contextlib.suppress(json.JSONDecodeError, AttributeError):
                message = str(json.loads(response.text).get("message", message))
            raise KubernetesApiError(response.status_code, message)
        return response

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One object or list, as JSON; KubernetesApiError (404 included) when the server refuses."""
        return json_object(self._get(path, params), f"Kubernetes API ({path})")

    def text(self, path: str, params: dict[str, Any] | None = None) -> str:
        """A plain-text answer (a container's log)."""
        return self._get(path, params).text
