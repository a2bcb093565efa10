"""`verify preflight --help` says what it checks, the TPU zones included.

Guards against issue 35: the help no longer said that preflight ranks v6e capacity across every zone and
tier, so a user hunting for TPU capacity zone by zone never learned the command does it for them.
"""

from __future__ import annotations

import pytest

from verify.cli import main


def test_preflight_help_names_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["preflight", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for check in ("APIs", "permissions", "quotas", "TPU zones"):
        assert check in text
    assert "in EVERY zone that offers its generation" in text
    assert "(flex-start, spot, guaranteed)" in text
    assert "ranked, grantable first" in text
    assert "Exit codes: 0 all clear, 1 a blocker found, 2 could not check" in text
