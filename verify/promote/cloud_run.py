"""The live state of a Cloud Run service, read through the Cloud Run Admin API v2 (`services.get`).

The service is `verify.ops.answers.RunService`, the one model of a Cloud Run service verify reads, and the
call goes through the project's one Google client (`remote.google_client.GoogleApis`).

Why read it at all when Pulumi's state says which revision serves: promotion must not move traffic on
top of something it did not expect. Before the gates it checks that the candidate revision is ready
and reachable under its tag, and that the live traffic is what the stack's state says; after every
traffic change it checks that Cloud Run really routes as asked.
"""

from __future__ import annotations

import httpx
import pydantic

from remote.google_auth import adc_tokens
from remote.google_client import GoogleApis, TokenSource
from remote.google_errors import CannotCheckError, GoogleApiError
from verify import UsageError
from verify.ops.answers import RunService

DEFAULT_API_URL = "https://run.googleapis.com"


def get_service(apis: GoogleApis, service: str) -> RunService:
    """`GET {run root}/{name}` (run.projects.locations.services.get) through verify's one Google client; a usage
    error (exit 2) when it cannot be read."""
    try:
        answer = apis.get("run", service)
    except CannotCheckError as exc:
        raise UsageError(f"cannot read {service} from the Cloud Run Admin API: {exc}") from None
    except GoogleApiError as exc:
        if exc.code in (401, 403):
            raise UsageError(
                f"the Cloud Run Admin API refused to read {service} ({exc.code}: {exc.message}); "
                "the caller needs run.services.get on it (roles/run.viewer or Cloud Run Admin)"
            ) from None
        if exc.not_found:
            raise UsageError(
                f"Cloud Run has no service {service} (404): has the stack been deployed with `pulumi up`?"
            ) from None
        raise UsageError(f"the Cloud Run Admin API answered {exc.code} reading {service}: {exc.message}") from None
    try:
        return RunService.model_validate(answer)
    except pydantic.ValidationError as exc:
        raise UsageError(f"the Cloud Run Admin API's answer for {service} is not a Service: {exc}") from None


def admin_api(
    *, base_url: str = DEFAULT_API_URL, tokens: TokenSource, transport: httpx.BaseTransport | None = None
) -> GoogleApis:
    """verify's Google client with the Cloud Run Admin API at ``base_url`` (`--cloud-run-api`, paths `/v2/...`)."""
    return GoogleApis(tokens, roots={"run": f"{base_url.rstrip('/')}/v2"}, transport=transport)


def google_tokens() -> TokenSource:
    """Application Default Credentials (a workload identity in CI, gcloud's ADC locally); a usage error without."""
    try:
        return adc_tokens()
    except CannotCheckError as exc:
        raise UsageError(
            f"no Google credentials to read the Cloud Run service with ({exc}); or authenticate the CI job "
            "(google-github-actions/auth)"
        ) from None
