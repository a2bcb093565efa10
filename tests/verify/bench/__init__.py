"""Tests of `verify bench` and `verify compare` against local servers and fixed result files."""

from __future__ import annotations
