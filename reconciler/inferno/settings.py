"""The Inferno controller's settings: its flags (`--inferno`, `--inferno-namespaces`, `--inferno-timeout`, the
operator's ceilings on Scale actuation, the `--prometheus-*` of the closed loop), each also settable as
`MODELBOOSTER_RECONCILER_<FLAG>` like the process's own (reconciler/settings.py), and the reference's variables
that choose a remote optimizer (INFERNO_HOST, INFERNO_PORT, INFERNO_STATELESS, parsed as Go's strconv.ParseBool
parses them). What the process already says (field manager, watched namespaces) comes from its `Context`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from process.flags import Flag, add_flags, add_switch, comma_list, parse_int, positive_float, positive_int, prefixed
from reconciler.inferno.ceilings import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MAX_STEP,
    DEFAULT_MAX_STEP_PERCENT,
    DEFAULT_MIN_REPLICAS,
    DEFAULT_MIN_STABILIZATION,
    Ceilings,
)
from reconciler.inferno.load import DEFAULT_ARRIVAL_QUERY, DEFAULT_LENGTH_QUERY, DEFAULT_WINDOW, LoadQueries
from reconciler.inferno.prometheus import DEFAULT_TIMEOUT as PROMETHEUS_TIMEOUT
from reconciler.inferno.prometheus import PrometheusSettings
from reconciler.inferno.remote import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_TIMEOUT, RemoteSettings
from reconciler.inferno.saturation import DEFAULT_KV_CACHE_QUERY, DEFAULT_RUNNING_QUERY, DEFAULT_WAITING_QUERY
from reconciler.inferno.signals import DEFAULT_ITL_QUERY, DEFAULT_PROMPT_QUERY, DEFAULT_TTFT_QUERY, SignalQueries
from reconciler.runtime.environment import SettingsError
from reconciler.settings import ENV_PREFIX
from shared.durations import DurationError, check_duration, parse_duration
from shared.gotext import go_parse_bool

# Inferno writes under a field manager of its own beside the process's: the ModelBooster controller tells role
# replicas set from outside (docs/design/reconciler.md §7) by a manager other than its own.
FIELD_MANAGER_SUFFIX: Final = "-inferno"
MAX_FIELD_MANAGER: Final = 128  # the API server's limit

NAME: Final = "inferno"  # the peer's, and its flags' prefix
ENV_HOST: Final = "INFERNO_HOST"
ENV_PORT: Final = "INFERNO_PORT"
ENV_STATELESS: Final = "INFERNO_STATELESS"


class InfernoSettingsError(SettingsError):
    """A setting of the Inferno controller that cannot be used; the message names it."""


def field_manager_of(process_field_manager: str) -> str:
    """Inferno's field manager: the process's (`--field-manager`, "modelbooster" by default) with `-inferno`."""
    return process_field_manager[: MAX_FIELD_MANAGER - len(FIELD_MANAGER_SUFFIX)] + FIELD_MANAGER_SUFFIX


@dataclass(frozen=True)
class InfernoSettings:
    enabled: bool = True
    namespaces: tuple[str, ...] = ()  # empty: the process's (`--namespaces`)
    remote: RemoteSettings | None = None  # None: the optimizer runs embedded
    workers: int = 2
    # A run is on demand and a remote optimizer that is down stays down for a while: start retrying at
    # half a second rather than the ModelBooster controller's 5 ms, and never wait more than 5 minutes.
    backoff_base: float = 0.5
    backoff_max: float = 300.0
    write_concurrency: int = 16
    prometheus: PrometheusSettings | None = None  # None: loads are what the Servers say
    load_queries: LoadQueries = field(default_factory=LoadQueries)
    # None: the built-in signal queries over the load queries' window.
    signal_queries: SignalQueries | None = None
    ceilings: Ceilings = field(default_factory=Ceilings)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise InfernoSettingsError(f"inferno workers must be at least 1, got {self.workers}")
        if self.write_concurrency < 1:
            raise InfernoSettingsError(f"inferno write concurrency must be at least 1, got {self.write_concurrency}")
        if not 0 < self.backoff_base <= self.backoff_max:
            raise InfernoSettingsError(
                f"inferno backoff needs 0 < base <= max, got {self.backoff_base} and {self.backoff_max}"
            )
        if any(not namespace for namespace in self.namespaces):
            raise InfernoSettingsError("--inferno-namespaces must not contain empty names")

    @property
    def mode(self) -> str:
        if self.remote is None:
            return "embedded"
        return f"remote {self.remote.mode} at {self.remote.base_url}"


def parse_go_bool(text: str, *, name: str) -> bool:
    # strconv.ParseBool, which the reference used; anything else is an error here (the reference silently
    # turned e.g. "yes" into false, i.e. stateful).
    parsed = go_parse_bool(text)
    if parsed is not None:
        return parsed
    raise InfernoSettingsError(f"{name}={text!r}: must be true or false (1, t, true, 0, f, false)")


def remote_settings_from_env(environ: Mapping[str, str], *, timeout: float = DEFAULT_TIMEOUT) -> RemoteSettings | None:
    """INFERNO_HOST / INFERNO_PORT select a remote optimizer (defaults localhost and 8080 for the one not
    given); INFERNO_STATELESS, unset or empty meaning true, selects its mode. Neither set: embedded."""
    host = environ.get(ENV_HOST, "").strip()
    port_text = environ.get(ENV_PORT, "").strip()
    stateless_text = environ.get(ENV_STATELESS, "").strip()
    stateless = parse_go_bool(stateless_text, name=ENV_STATELESS) if stateless_text else True
    if not host and not port_text:
        return None
    port = DEFAULT_PORT
    if port_text:
        try:
            port = int(port_text)
        except ValueError:
            raise InfernoSettingsError(f"{ENV_PORT}={port_text!r}: not a port number") from None
    try:
        return RemoteSettings(host=host or DEFAULT_HOST, port=port, stateless=stateless, timeout=timeout)
    except ValueError as error:
        raise InfernoSettingsError(f"{ENV_HOST}/{ENV_PORT}: {error}") from None


def _go_bool(text: str) -> bool:
    return parse_go_bool(text.strip(), name="--inferno")


def _non_negative_int(text: str) -> int:
    value = parse_int(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


# Under the controller's name: `--inferno-*` as they were, `--prometheus-*` as `--inferno-prometheus-*` with the
# unprefixed spellings of earlier releases still accepted.
_FLAGS: Final[dict[str, Flag]] = prefixed(NAME, {
    "--inferno-namespaces": Flag(
        "inferno_namespaces", comma_list, None, "comma-separated namespaces of Inferno objects "
        "(default: those of --namespaces)"
    ),
    "--inferno-timeout": Flag(
        "inferno_timeout", positive_float, DEFAULT_TIMEOUT, "seconds one request to a remote optimizer may take"
    ),
    "--inferno-max-replicas": Flag(
        "inferno_max_replicas", positive_int, DEFAULT_MAX_REPLICAS, "operator ceiling: Scale actuation never "
        "sets a target above this many replicas, whatever a Server or ModelBooster allows"
    ),
    "--inferno-min-replicas": Flag(
        "inferno_min_replicas", _non_negative_int, DEFAULT_MIN_REPLICAS, "operator floor: Scale actuation never "
        "sets a target below this many replicas (0 allows scaling to zero)"
    ),
    "--inferno-max-scale-step": Flag(
        "inferno_max_scale_step", positive_int, DEFAULT_MAX_STEP, "one decision moves a target by at most "
        "max(this, --inferno-max-scale-step-percent of its replicas)"
    ),
    "--inferno-max-scale-step-percent": Flag(
        "inferno_max_scale_step_percent", _non_negative_int, DEFAULT_MAX_STEP_PERCENT, "see "
        "--inferno-max-scale-step"
    ),
    "--inferno-min-stabilization": Flag(
        "inferno_min_stabilization", check_duration, f"{int(DEFAULT_MIN_STABILIZATION)}s", "shortest scale-down "
        "stabilisation window a Server gets (a shorter scaleDownStabilization is raised to it)"
    ),
    "--prometheus-url": Flag(
        "prometheus_url", str, None, "Prometheus to measure targeted Servers' load from (e.g. "
        "http://prometheus-operated.monitoring:9090); unset: loads are what the Servers say"
    ),
    "--prometheus-bearer-token-file": Flag(
        "prometheus_bearer_token_file", str, None, "file whose content is sent as a bearer token (https only), "
        "re-read on every query: a token of its own that may only query Prometheus, mounted from a Secret "
        "(never the reconciler's ServiceAccount token, which can write workloads)"
    ),
    "--prometheus-ca-file": Flag(
        "prometheus_ca_file", str, None, "CA bundle that verifies an https Prometheus (default: the system's)"
    ),
    "--prometheus-timeout": Flag(
        "prometheus_timeout", positive_float, PROMETHEUS_TIMEOUT, "seconds one Prometheus query may take"
    ),
    "--prometheus-window": Flag(
        "prometheus_window", check_duration, DEFAULT_WINDOW, "range of the rate() in the load queries ($window)"
    ),
    "--prometheus-arrival-query": Flag(
        "prometheus_arrival_query", str, DEFAULT_ARRIVAL_QUERY, "PromQL for a Server's arrival rate in requests "
        "per minute; $namespace, $model, $server, $target and $window are filled in; unset, each target's "
        "engine's own form (vLLM's shown, SGLang's where the target's ModelServer names SGLang)"
    ),
    "--prometheus-length-query": Flag(
        "prometheus_length_query", str, DEFAULT_LENGTH_QUERY, "PromQL for a Server's generated tokens per "
        "request; the same variables"
    ),
    # The saturation and latency signals (docs/inferno.md): the load's variables and $role, a disaggregated
    # target's role (empty otherwise); a role's query is the Server's narrowed to role="$role" when it is the
    # built-in one, else the user's as written.
    "--prometheus-kv-cache-query": Flag(
        "prometheus_kv_cache_query", str, DEFAULT_KV_CACHE_QUERY, "PromQL for a Server's mean KV-cache usage (0..1); "
        "the load's variables and $role; unset, like every query here, the target's engine's own form"
    ),
    "--prometheus-waiting-query": Flag(
        "prometheus_waiting_query", str, DEFAULT_WAITING_QUERY, "PromQL for a Server's requests waiting, all pods"
    ),
    "--prometheus-running-query": Flag(
        "prometheus_running_query", str, DEFAULT_RUNNING_QUERY, "PromQL for a Server's requests running, all pods"
    ),
    "--prometheus-itl-query": Flag(
        "prometheus_itl_query", str, DEFAULT_ITL_QUERY, "PromQL for a Server's mean inter-token latency in seconds"
    ),
    "--prometheus-ttft-query": Flag(
        "prometheus_ttft_query", str, DEFAULT_TTFT_QUERY, "PromQL for a Server's mean time to first token in seconds"
    ),
    "--prometheus-prompt-tokens-query": Flag(
        "prometheus_prompt_tokens_query", str, DEFAULT_PROMPT_QUERY, "PromQL for the prompt tokens per second of "
        "a disaggregated target's prefill role"
    ),
})


def add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """`--inferno/--no-inferno`, `--inferno-namespaces`, `--inferno-timeout`, each also settable through
    `MODELBOOSTER_RECONCILER_<FLAG>` like the reconciler's other flags. The remote optimizer is chosen by
    the reference's own variables, INFERNO_HOST, INFERNO_PORT and INFERNO_STATELESS."""
    add_switch(
        parser,
        "--inferno",
        dest="inferno",
        default=True,
        help="run the Inferno controller (Optimizer.spec.optimize -> Server desiredAlloc)",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=environ,
        parse=_go_bool,
    )
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=environ)


def settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> InfernoSettings:
    """The settings from parsed arguments (`add_arguments`) and the INFERNO_* variables."""
    remote = remote_settings_from_env(environ, timeout=args.inferno_timeout) if args.inferno else None
    prometheus = None
    try:
        if args.prometheus_url:
            prometheus = PrometheusSettings(
                url=args.prometheus_url,
                bearer_token_file=args.prometheus_bearer_token_file or None,
                ca_file=args.prometheus_ca_file or None,
                timeout=args.prometheus_timeout,
            )
        queries = LoadQueries(
            arrival=args.prometheus_arrival_query, length=args.prometheus_length_query, window=args.prometheus_window
        )
        signal_queries = SignalQueries(
            kv_cache=args.prometheus_kv_cache_query, waiting=args.prometheus_waiting_query,
            running=args.prometheus_running_query, itl=args.prometheus_itl_query, ttft=args.prometheus_ttft_query,
            prompt_tokens=args.prometheus_prompt_tokens_query, window=args.prometheus_window,
        )  # fmt: skip
        ceilings = Ceilings(
            max_replicas=args.inferno_max_replicas,
            min_replicas=args.inferno_min_replicas,
            max_step=args.inferno_max_scale_step,
            max_step_percent=args.inferno_max_scale_step_percent,
            min_stabilization=_seconds(args.inferno_min_stabilization),
        )
    except ValueError as error:
        raise InfernoSettingsError(str(error)) from None
    return InfernoSettings(
        enabled=bool(args.inferno),
        namespaces=tuple(args.inferno_namespaces or ()),
        remote=remote,
        prometheus=prometheus,
        load_queries=queries,
        signal_queries=signal_queries,
        ceilings=ceilings,
    )


def _seconds(duration: str) -> float:
    try:
        nanos = parse_duration(duration)
    except DurationError as error:
        raise InfernoSettingsError(f"--inferno-min-stabilization: {error}") from None
    if nanos < 0:
        raise InfernoSettingsError(f"--inferno-min-stabilization {duration!r} must not be negative")
    return nanos / 1e9
