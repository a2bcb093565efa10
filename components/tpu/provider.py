"""A Pulumi dynamic provider for TPU queued resources, over the v2alpha1 REST API.

Why a provider and not `gcloud` in pulumi-command: Pulumi needs create, read (refresh), diff (replace
on any change, since Google cannot update a queued resource) and delete to be real operations with
state, and the wait for a node needs to report progress and fail with Google's own reason.

Lifecycle it implements:
- create: for each placement in order (tpu.placements; one when the stack names none): POST the body; on
  409 adopt the request if it carries our fingerprint (a retried `pulumi up`), re-queue it if it is our
  FAILED/SUSPENDED/preempted leftover, refuse anyone else's. Then poll (tenacity repeats the look, its
  sleep injected) until ACTIVE within `activeDeadlineSeconds`, reporting each state change. On a refusal,
  FAILED, SUSPENDED, the deadline, a POST whose answers were all 429s, or any other error, our request is
  withdrawn (forced delete; a cancelled run only asks for the delete) and the next placement is tried, the
  move reported; when none is left the error lists each placement's reason. Pulumi records nothing from a
  failed create, and a forgotten request that turns ACTIVE later would bill for a TPU nobody manages: when
  the withdrawal itself fails, the error names the request, and `verify status` lists it. The state
  records the placement granted (`placementZone`, `placementModel`) and the attempts before it.
- read: the live state; a request that is gone, FAILED, SUSPENDED (flex-start run over) or whose node is
  PREEMPTED/TERMINATED (spot) reads as gone, so the next `pulumi up` asks again through the placements.
- diff: any change of project, zone, id or request body means replace (delete first: the id is reused and
  the quota is per project); a new deadline alone is an in-place no-op update.
- delete: forced (removes the node too) and waits until Google no longer lists it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
import pulumi.dynamic
import tenacity

from components.tpu.placements import (
    Attempt,
    PlacementRefusedError,
    PlacementTry,
    all_failed_message,
    placements_of,
    with_history,
)
from components.tpu.request_body import fingerprint, fingerprint_label, with_fingerprint_label
from components.tpu.rest import DEFAULT_BASE_URL, TokenProvider, TpuApiError, TpuRestClient, google_token_provider
from serving.tpu_states import ACTIVE, ENDED, FAILED, NODE_GONE

Report = Callable[[str], None]
Clock = Callable[[], float]
Sleep = Callable[[float], None]
_T = TypeVar("_T")

# Inputs whose change means a new queued resource (Google has no update call for them).
REPLACE_KEYS = ("project", "zone", "queuedResourceId", "nodeId", "requestBody")
# Inputs that only steer this provider.
UPDATE_KEYS = ("activeDeadlineSeconds", "placements")
REQUIRED_KEYS = (*REPLACE_KEYS, "activeDeadlineSeconds")
# Outputs read from Google, on top of the inputs.
OBSERVED_KEYS = (
    "queuedResourceName",
    "state",
    "nodeName",
    "internalIp",
    "externalIp",
    "placementZone",
    "placementModel",
    "attempts",
)


class QueuedResourceError(Exception):
    """The queued resource could not be brought to ACTIVE (or removed); the message says why and what to do."""


def queued_resource_name(props: Mapping[str, Any]) -> str:
    return f"projects/{props['project']}/locations/{props['zone']}/queuedResources/{props['queuedResourceId']}"


def node_name(props: Mapping[str, Any]) -> str:
    return f"projects/{props['project']}/locations/{props['zone']}/nodes/{props['nodeId']}"


def node_of(queued_name: str, node_id: str) -> str:
    """The node a queued resource brings up, in the request's own zone (a placement's, not always the first)."""
    return f"{queued_name.split('/queuedResources/', 1)[0]}/nodes/{node_id}"


def state_of(queued_resource: Mapping[str, Any] | None) -> str:
    if queued_resource is None:
        return "NOT_FOUND"
    state = queued_resource.get("state") or {}
    return str(state.get("state") or "STATE_UNSPECIFIED")


def failure_reason(queued_resource: Mapping[str, Any]) -> str:
    """Google's explanation of a FAILED request (`state.failedData.error`), or a plain fallback."""
    error = ((queued_resource.get("state") or {}).get("failedData") or {}).get("error") or {}
    message = error.get("message") or "Google gave no reason"
    code = error.get("code")
    return f"{message} (code {code})" if code is not None else str(message)


def observed_outputs(name: str, queued_resource: Mapping[str, Any], node: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the stack exports about a live request: its name, state and the node's addresses."""
    endpoints = (node or {}).get("networkEndpoints") or [{}]
    first = endpoints[0] if endpoints else {}
    return {
        "queuedResourceName": name,
        "state": state_of(queued_resource),
        "nodeName": (node or {}).get("name", ""),
        "internalIp": first.get("ipAddress", ""),
        "externalIp": (first.get("accessConfig") or {}).get("externalIp", ""),
    }


class QueuedResourceProvider(pulumi.dynamic.ResourceProvider):
    """CRUD for one TPU queued resource. Every collaborator (HTTP, auth, time, logging) is injectable.

    The instance is pickled into the stack state by Pulumi, so it holds only plain settings; the HTTP
    client and credentials are made per call.
    """

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        token_provider: TokenProvider | None = None,
        sleep: Sleep | None = None,
        clock: Clock | None = None,
        report: Report | None = None,
        poll_seconds: float = 15.0,
        heartbeat_seconds: float = 600.0,
        delete_deadline_seconds: float = 1800.0,
    ) -> None:
        super().__init__()
        self.base_url = base_url
        self.token_provider = token_provider
        self.sleep = sleep
        self.clock = clock
        self.report = report
        self.poll_seconds = poll_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.delete_deadline_seconds = delete_deadline_seconds

    # -- collaborators ---------------------------------------------------------------------------

    def _client(self) -> TpuRestClient:
        token = self.token_provider or google_token_provider()
        return TpuRestClient(token, base_url=self.base_url, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        (self.sleep or time.sleep)(seconds)

    def _now(self) -> float:
        return (self.clock or time.monotonic)()

    def _say(self, message: str) -> None:
        (self.report or pulumi.log.info)(message)

    # -- Pulumi's operations ---------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = [
            pulumi.dynamic.CheckFailure(key, f"{key} is required") for key in REQUIRED_KEYS if news.get(key) is None
        ]
        return pulumi.dynamic.CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        replaces = [key for key in REPLACE_KEYS if olds.get(key) != news.get(key)]
        updates = [key for key in UPDATE_KEYS if olds.get(key) != news.get(key)]
        return pulumi.dynamic.DiffResult(
            changes=bool(replaces or updates), replaces=replaces, delete_before_replace=True
        )

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        tries = placements_of(props)
        attempts: list[Attempt] = []
        with self._client() as client:
            start = self._clear_leftovers(client, props, tries) if len(tries) > 1 else 0
            for index in range(start, len(tries)):
                place = tries[index]
                name = self._name_in(props, place.zone)
                body = place.body
                if len(tries) > 1:
                    self._say(f"placement {index + 1} of {len(tries)}: {place.label} ({name})")
                    body = with_history(body, index, len(tries), attempts)
                try:
                    operation = self._submit(client, props, name, body)
                    live = self._wait_until_active(client, props, name, operation)
                except PlacementRefusedError as refused:
                    self._leave_nothing_behind(client, name, body, refused)
                    if len(tries) == 1:
                        raise QueuedResourceError(str(refused)) from None
                    attempts.append(Attempt(place.zone, place.model, refused.outcome, refused.reason))
                    following = (
                        f"; moving on to placement {index + 2}: {tries[index + 1].label}"
                        if index + 1 < len(tries)
                        else ""
                    )
                    self._say(f"placement {index + 1} ({place.label}) {refused.outcome}: {refused.reason}{following}")
                    continue
                except Exception as error:
                    # Pulumi records nothing from a failed create: a request left queued here would turn ACTIVE
                    # later and bill for a TPU no state tracks.
                    self._leave_nothing_behind(client, name, body, error)
                    raise
                except BaseException:
                    # Cancelled (Ctrl-C, SIGTERM): ask Google to drop the request without waiting for it.
                    self._cancel_quietly(client, name, body)
                    raise
                node = client.get_node(node_of(name, str(props["nodeId"])))
                granted = {
                    "placementZone": place.zone,
                    "placementModel": place.model,
                    "attempts": [attempt.as_dict() for attempt in attempts],
                }
                if len(tries) > 1:
                    self._say(f"placement {index + 1} of {len(tries)} ({place.label}) granted: {name} is ACTIVE")
                return pulumi.dynamic.CreateResult(name, {**props, **observed_outputs(name, live, node), **granted})
        raise QueuedResourceError(all_failed_message(attempts, float(props["activeDeadlineSeconds"])))

    def _leave_nothing_behind(
        self, client: TpuRestClient, name: str, body: Mapping[str, Any], cause: BaseException
    ) -> None:
        """Withdraw our request at `name` if it is there, on every way out of a placement but success.

        The request may exist even when the POST seemed to fail (Google created it, then answered 429 or
        dropped the answer: retries with one requestId then end in 429s) or after the wait gave up
        (SUSPENDED, repeated 429s on the status read). Someone else's request (another fingerprint) is left
        alone. When Google cannot be told, the error names the request, so nobody learns of it from the bill.
        """
        try:
            existing = client.get_queued_resource(name)
            if existing is None or fingerprint_label(existing) != fingerprint(body):
                return
            self._say(f"{name}: withdrawing our request ({state_of(existing)}) before going on")
            self._delete_and_wait(client, name)
        except (TpuApiError, QueuedResourceError) as error:
            raise QueuedResourceError(
                f"{name} may still be queued at Google and no Pulumi state tracks it ({cause}; withdrawing it "
                f"failed: {error}). Delete it (`gcloud alpha compute tpus queued-resources delete "
                f"{name.rsplit('/', 1)[-1]} --zone {_zone_of(name)} --force`); `gemma-verify status` lists "
                "such untracked requests."
            ) from cause

    def _cancel_quietly(self, client: TpuRestClient, name: str, body: Mapping[str, Any]) -> None:
        try:
            existing = client.get_queued_resource(name)
            if existing is not None and fingerprint_label(existing) == fingerprint(body):
                client.delete_queued_resource(name, force=True)
                self._say(f"{name}: cancelled; asked Google to delete our request")
        except Exception as error:  # noqa: BLE001 - a cancelled run must still end; say what is left
            self._say(f"{name}: cancelled, and the request may still be queued ({error}); delete it by hand")

    def _name_in(self, props: Mapping[str, Any], zone: str) -> str:
        return queued_resource_name({**props, "zone": zone})

    def _clear_leftovers(self, client: TpuRestClient, props: Mapping[str, Any], tries: list[PlacementTry]) -> int:
        """Delete our ended requests in any placement's zone; return where a live one of ours already is.

        A node preempted or ended in placement 2 leaves its request there while the re-queue starts at
        placement 1; and a `pulumi up` interrupted while placement 2 waited must adopt that request rather
        than ask placement 1 for a second node.
        """
        for index, place in enumerate(tries):
            name = self._name_in(props, place.zone)
            existing = client.get_queued_resource(name)
            if existing is None or fingerprint_label(existing) != fingerprint(place.body):
                continue
            if self._ended(client, existing, name, props):
                self._say(
                    f"{name}: our earlier request is {self._gone_reason(client, existing, name, props)}; deleting it"
                )
                self._delete_and_wait(client, name)
                continue
            self._say(f"{name}: our request in placement {index + 1} ({place.label}) is still there; taking it up")
            return index
        return 0

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        name = id_ or queued_resource_name(props)
        with self._client() as client:
            live = client.get_queued_resource(name)
            if live is None or self._ended(client, live, name, props):
                if live is not None:
                    self._say(
                        f"{name} is {self._gone_reason(client, live, name, props)}; treating it as gone so that "
                        "the next `pulumi up` queues a new request (through tpu.placements, in order)"
                    )
                return pulumi.dynamic.ReadResult("", {})
            node = client.get_node(node_of(name, str(props["nodeId"]))) if state_of(live) == ACTIVE else None
        return pulumi.dynamic.ReadResult(name, {**props, **observed_outputs(name, live, node)})

    def _ended(self, client: TpuRestClient, live: Mapping[str, Any], name: str, props: Mapping[str, Any]) -> bool:
        """FAILED, suspended or deleting, or ACTIVE with a node that is preempted, stopped or missing."""
        state = state_of(live)
        if state == FAILED or state in ENDED:
            return True
        if state != ACTIVE:
            return False
        node = client.get_node(node_of(name, str(props["nodeId"])))
        return node is None or str(node.get("state")) in NODE_GONE

    def _gone_reason(self, client: TpuRestClient, live: Mapping[str, Any], name: str, props: Mapping[str, Any]) -> str:
        state = state_of(live)
        if state == FAILED:
            return f"FAILED (reason: {failure_reason(live)})"
        if state in ENDED:
            initiator = (live.get("state") or {}).get("stateInitiator")
            by = f", initiated by {initiator}" if initiator else ""
            return f"{state} (a flex-start run that reached maxRunDuration, or a suspended node{by})"
        node = client.get_node(node_of(name, str(props["nodeId"])))
        if node is None:
            return "ACTIVE but its node is gone"
        return f"ACTIVE but its node is {node.get('state')}" + (
            " (a spot node Google preempted)" if node.get("state") == "PREEMPTED" else ""
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        # Only provider settings can reach here (everything Google sees forces a replace in `diff`).
        observed = {key: olds[key] for key in OBSERVED_KEYS if key in olds}
        return pulumi.dynamic.UpdateResult({**news, **observed})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        name = id_ or queued_resource_name(props)
        with self._client() as client:
            self._delete_and_wait(client, name)

    # -- steps -----------------------------------------------------------------------------------

    def _submit(
        self, client: TpuRestClient, props: Mapping[str, Any], name: str, request: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """POST the request; returns Google's operation, or None when an identical request is adopted."""
        parent = name.rsplit("/queuedResources/", 1)[0]
        body = with_fingerprint_label(request)
        try:
            return client.create_queued_resource(parent, props["queuedResourceId"], body)
        except TpuApiError as error:
            if error.status != 409:
                raise PlacementRefusedError(
                    f"Google refused the queued resource {name}: {error.message}",
                    outcome="refused",
                    reason=error.message,
                ) from None
        existing = client.get_queued_resource(name)
        if existing is None:
            raise QueuedResourceError(f"{name}: Google answered 409 already exists, yet it cannot be read back")
        ours = fingerprint(body)
        theirs = fingerprint_label(existing)
        if theirs != ours:
            raise PlacementRefusedError(
                f"{name} already exists and was not created from this stack's spec (label gemma-spec is "
                f"{theirs!r}, this spec is {ours!r}). Delete it (`gcloud alpha compute tpus queued-resources "
                f"delete {props['queuedResourceId']} --zone {props['zone']} --force`) or give this stack "
                "another name; this provider never takes over a request it did not make.",
                outcome="refused",
                reason=f"{name} exists with another spec (not this stack's request)",
            )
        state = state_of(existing)
        if self._ended(client, existing, name, props):
            reason = self._gone_reason(client, existing, name, props)
            self._say(f"{name}: an earlier identical request is {reason}; deleting it and queueing again")
            self._delete_and_wait(client, name)
            return client.create_queued_resource(parent, props["queuedResourceId"], body)
        self._say(f"{name}: adopting the identical request already queued (state {state})")
        return None

    def _wait_until_active(
        self, client: TpuRestClient, props: Mapping[str, Any], name: str, operation: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        deadline = float(props["activeDeadlineSeconds"])
        start = self._now()
        seen = _Watch(state="", heartbeat=start)

        def poll() -> dict[str, Any] | None:
            """One look at the request: the ACTIVE resource, None to look again, or the reason it never will be."""
            live = client.get_queued_resource(name)
            state = state_of(live)
            elapsed = self._now() - start
            if live is None and operation is not None:
                self._raise_if_operation_failed(client, name, operation)
            if state != seen.state:
                self._say(f"{name}: {state} after {_minutes(elapsed)}")
                seen.state, seen.heartbeat = state, self._now()
            if live is not None and state == ACTIVE:
                return live
            if live is not None and state == FAILED:
                reason = failure_reason(live)
                self._withdraw(client, name)
                raise PlacementRefusedError(
                    f"{name} FAILED: {reason}. Check the TPU quota for the tier (flex-start and spot use "
                    "preemptible quota), whether the zone offers the slice, and the service account; the request was "
                    "deleted so the next `pulumi up` can try again.",
                    outcome="failed",
                    reason=reason,
                )
            if live is not None and state in ENDED:
                raise PlacementRefusedError(
                    f"{name} turned {state} before it became ACTIVE; run `pulumi up` again",
                    outcome="ended",
                    reason=f"turned {state} before it became ACTIVE",
                )
            if elapsed >= deadline:
                self._withdraw(client, name)
                zone = _zone_of(name)
                raise PlacementRefusedError(
                    f"{name} was still {state} after {_minutes(elapsed)} (tpu.activeDeadline). TPU chips in "
                    f"{zone} were not available in time; the request was withdrawn. Try another "
                    "zone (tpu.zone or tpu.placements), another tier (tpu.provisioning.model) or a longer "
                    "tpu.activeDeadline.",
                    outcome="deadline",
                    reason=f"still {state} after {_minutes(elapsed)} (tpu.activeDeadline)",
                )
            if self._now() - seen.heartbeat >= self.heartbeat_seconds:
                self._say(f"{name}: still {state} after {_minutes(elapsed)} (deadline {_minutes(deadline)})")
                seen.heartbeat = self._now()
            return None

        return self._poll(poll)

    def _poll(self, look: Callable[[], _T | None]) -> _T:
        """Call ``look`` every poll_seconds until it returns a value; it raises to stop (deadline, failure).

        tenacity owns the loop (its sleep is the injected one); the deadlines stay in ``look``, read from the
        injected clock, because each ends with its own action (withdraw the request) and message.
        """
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_result(lambda result: result is None),
            wait=tenacity.wait_fixed(self.poll_seconds),
            stop=tenacity.stop_never,
            sleep=self._sleep,
            reraise=True,
        )
        result = retrying(look)
        if result is None:  # pragma: no cover - tenacity retries a None result until `look` returns or raises
            raise AssertionError("unreachable: the poll returned nothing")
        return result

    def _raise_if_operation_failed(self, client: TpuRestClient, name: str, operation: Mapping[str, Any]) -> None:
        """A request rejected after the POST (e.g. invalid for the zone) never appears: say why."""
        operation_name = operation.get("name")
        if not operation_name:
            return
        current = client.get_operation(str(operation_name)) or {}
        error = current.get("error")
        if current.get("done") and error:
            reason = f"{error.get('message', error)} (code {error.get('code')})"
            raise PlacementRefusedError(
                f"Google rejected the queued resource {name}: {reason}", outcome="refused", reason=reason
            )

    def _withdraw(self, client: TpuRestClient, name: str) -> None:
        try:
            self._delete_and_wait(client, name)
        except (TpuApiError, QueuedResourceError) as error:
            self._say(f"{name}: could not withdraw the request ({error}); delete it by hand to stop billing")

    def _delete_and_wait(self, client: TpuRestClient, name: str) -> None:
        try:
            client.delete_queued_resource(name, force=True)
        except TpuApiError as error:
            # A delete already in progress is refused as a precondition failure: wait for it instead.
            if error.status not in (400, 409) or state_of(client.get_queued_resource(name)) != "DELETING":
                raise
        start = self._now()

        def gone() -> bool | None:
            if client.get_queued_resource(name) is None:
                return True
            if self._now() - start >= self.delete_deadline_seconds:
                raise QueuedResourceError(
                    f"{name} was still listed {_minutes(self.delete_deadline_seconds)} after delete"
                )
            return None

        self._poll(gone)
        self._say(f"{name}: deleted")


@dataclass
class _Watch:
    """What the wait for ACTIVE last reported: a state change or a heartbeat is said once."""

    state: str
    heartbeat: float


def _zone_of(name: str) -> str:
    return name.split("/locations/", 1)[-1].split("/", 1)[0]


def _minutes(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"
