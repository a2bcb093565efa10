"""Application Default Credentials as a token source for the Google client, with the advice to set them up.

google-auth loads here only, and only when a caller really talks to Google (a command, `pulumi up`), never
for a plan: with its transports' TLS and cryptography it was a quarter of a TPU preview's time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remote.google_errors import CannotCheckError

if TYPE_CHECKING:
    # The client (httpx) is not needed to name a scope: the TPU node's request body does, at plan time.
    from remote.google_client import TokenSource

ADC_SETUP_COMMAND = "gcloud auth application-default login"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def adc_tokens(scopes: tuple[str, ...] = (CLOUD_PLATFORM_SCOPE,)) -> TokenSource:
    """Application Default Credentials, or CannotCheckError naming the command that sets them up."""
    import google.auth  # noqa: PLC0415 - loaded only when a caller really talks to Google
    import google.auth.exceptions  # noqa: PLC0415 - as above
    from google.auth.transport.requests import Request  # noqa: PLC0415 - as above

    try:
        credentials, _ = google.auth.default(scopes=list(scopes))
    except google.auth.exceptions.DefaultCredentialsError as error:
        raise CannotCheckError(
            f"no Application Default Credentials ({_first_line(str(error))}); run `{ADC_SETUP_COMMAND}` "
            "(or point GOOGLE_APPLICATION_CREDENTIALS at a service-account key)"
        ) from None

    def token() -> tuple[str, str | None]:
        if not credentials.valid:
            try:
                credentials.refresh(Request())  # type: ignore[no-untyped-call]
            except google.auth.exceptions.GoogleAuthError as error:
                raise CannotCheckError(
                    f"Application Default Credentials could not be refreshed ({_first_line(str(error))}); "
                    f"run `{ADC_SETUP_COMMAND}` again"
                ) from None
        quota_project = getattr(credentials, "quota_project_id", None)
        return str(credentials.token), str(quota_project) if quota_project else None

    return token


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "no detail"
