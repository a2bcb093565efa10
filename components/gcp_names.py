"""Google Cloud's naming rules that several components check their inputs against, each stated once.

Why one place: a service-account id or a resource id follows the same rule wherever a component makes
one; copies of a pattern in every module drift apart, and then one component accepts a name that
another (or Google) refuses.
"""

from __future__ import annotations

import re

# Service account ids: 6-30 lowercase letters, digits and '-', starting with a letter, not ending with '-'
# (https://cloud.google.com/iam/docs/service-accounts-create).
SERVICE_ACCOUNT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
# RFC 1035 labels, the rule for Artifact Registry repository ids, Cloud Run job names and TPU node and
# queued-resource ids: 1-63 lowercase letters, digits and '-', starting with a letter, not ending with '-'.
RFC1035_ID = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# Our keys for IAM bindings given as a map (e.g. a bucket's readers): they become part of the binding's
# child name, so that reordering the map never replaces a binding.
BINDING_KEY = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
