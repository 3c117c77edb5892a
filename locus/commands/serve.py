"""`locus serve`: route queries with a trained run over HTTP (and add models to its pool live)."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from locus.cli import existing_dir, threads_arg
from locus.constants import ENCODER_PRECISIONS, PRECISIONS
from locus.errors import ConfigError

NAME = "serve"
# locus.onboarding_rivals.names(), written out: building the parser imports no numeric library (a test checks they match)
ONBOARDING = ("locus", "cluster_shrinkage", "cluster_error_vector", "knn_agreement", "mean_accuracy")
HELP = (
    "serve a trained run over HTTP: POST /v1/route ranks its models for queries; POST /v1/pool adds a model; "
    "POST /v1/chat/completions routes and forwards to OpenAI-compatible backends"
)


def port_arg(text: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535 (0 = any free port), got {value}")
    return value


def add_arguments(parser) -> None:
    parser.add_argument("--run", required=True, type=existing_dir("run directory"), help="a finished run directory")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=port_arg, default=8000, help="TCP port (default 8000; 0 = any free port)")
    parser.add_argument(
        "--pool-dir",
        type=Path,
        default=None,
        help="directory keeping the models added over HTTP (pool.json), so a restart serves the same pool "
        "(default: added models live in memory only)",
    )
    parser.add_argument(
        "--token-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the token (Authorization: Bearer TOKEN; an OpenAI client's api_key) "
        "that adding and deleting models and chat completions need, and off loopback /v1/route too; required "
        "unless --host is a loopback address",
    )
    parser.add_argument(
        "--open-route",
        action="store_true",
        help="off loopback, serve POST /v1/route and the model lists without the token (chat and admin keep it)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host header to serve besides the bound address and localhost/127.0.0.1/[::1] (repeatable; "
        "required with --host 0.0.0.0; '*' serves any): other names are refused, against DNS rebinding",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="a web origin (e.g. https://app.example.org) whose browser pages may call the service: CORS for it "
        "(repeatable; default none: cross-origin POST and DELETE are refused)",
    )
    parser.add_argument(
        "--affinity-seconds",
        type=non_negative,
        default=None,
        help="a chat conversation (header x-locus-session, or OpenAI's user field) keeps the model routed for its "
        "first turn this long after its last turn (default 1800; 0: route every turn)",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help="arithmetic of the forward passes (LOCUS runs; default: the run's precision parameter)",
    )
    parser.add_argument(
        "--encoder-precision",
        choices=ENCODER_PRECISIONS,
        default="auto",
        help="arithmetic of the query encoder: auto (default: bfloat16 on CPUs with bfloat16 in hardware, AMX or "
        "AVX512-BF16; int8 on other x86 CPUs; else float32), float32 (the run's encodings bit for bit), bfloat16 "
        "(weights in bfloat16, pooling in float32) or int8 (Linear layers quantised, float32 out); /healthz names "
        "the one in use, docs/results.md measures what each changes in routing",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="compile the query encoder with torch.compile at start (about a minute on 2 cores, needs a C++ "
        "compiler): a lone query encodes about twice as fast; the service answers once it is done",
    )
    parser.add_argument(
        "--threads", type=threads_arg, default=0, help="torch threads of the service (0: torch's default)"
    )
    parser.add_argument(
        "--onboarding",
        choices=ONBOARDING,
        default="locus",
        help="how POST /v1/pool adds a model: locus (default: the run's one forward pass, an embedding the run's "
        "decoder scores), or a training-free method fitted at start on the run's pool (its models' training-split "
        "scores in --data, with --encodings) whose P(correct) routes the added model beside the run's decoder's "
        "for its own models; models in --pool-dir keep the method they were added with",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the run's data set directory: adding a model reuses the stored encodings of its prompts, and a "
        "training-free --onboarding is fitted on it (default: the data set the run records, when it exists here)",
    )
    parser.add_argument(
        "--encodings",
        type=Path,
        default=None,
        help="that data set's encodings (locus encode; default: results/encodings/{dataset}/{encoder}.parquet "
        "beside the data set, when it exists)",
    )
    parser.add_argument(
        "--backends",
        type=Path,
        default=None,
        metavar="FILE",
        help="JSON/YAML {pool model name: {base_url, model, api_key_env?}}: the OpenAI-compatible backends "
        "POST /v1/chat/completions forwards to",
    )
    parser.add_argument(
        "--chat-alias", default=None, help="the chat-completions model name that routes (default locus-auto)"
    )
    parser.add_argument(
        "--backend-timeout", type=positive(float), default=None, help="seconds a backend may take (default 60)"
    )
    parser.add_argument(
        "--max-queries", type=positive(int), default=None, help="queries per /v1/route request (default 256)"
    )
    parser.add_argument(
        "--max-prompt-chars",
        type=positive(int),
        default=None,
        help="characters per query, prompt or chat message (default 100000)",
    )
    parser.add_argument(
        "--max-body-mb", type=positive(float), default=None, help="request body size in MiB (default 10)"
    )
    parser.add_argument(
        "--batch-queries",
        type=positive(int),
        default=None,
        help="queries of concurrent /v1/route requests encoded in one pass (default 32)",
    )
    parser.add_argument(
        "--workers",
        type=positive(int),
        default=None,
        help="batches of /v1/route requests in flight at once (default 2: they encode at the same time, and "
        "one is answered while the other encodes)",
    )


def positive(kind):
    def parse(text: str):
        try:
            value = kind(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
        return value

    return parse


def non_negative(text: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text}")
    return value


def token_from_env(var: str | None) -> str | None:
    if var is None:
        return None
    token = os.environ.get(var, "").strip()
    if not token:
        raise ConfigError(f"--token-env {var}: the environment variable {var} is unset or empty; put the token in it.")
    return token


def run(args) -> int:
    from locus import serve
    from locus.params import set_threads

    token = token_from_env(args.token_env)
    serve.check_bind(args.host, token, args.allow_host)
    set_threads(args.threads)
    pool = serve.load(
        args.run,
        args.pool_dir,
        args.precision,
        args.data,
        args.encodings,
        args.encoder_precision,
        args.compile,
        args.onboarding,
    )
    settings = serve.Settings(
        token=token,
        bind_host=args.host,
        public=not serve.is_loopback(args.host),
        open_route=args.open_route,
        allowed_hosts=tuple(args.allow_host),
        allowed_origins=tuple(args.allow_origin),
    )
    for option, attr in [
        ("chat_alias", "chat_alias"),
        ("backend_timeout", "backend_timeout"),
        ("max_queries", "max_queries"),
        ("max_prompt_chars", "max_prompt_chars"),
        ("batch_queries", "batch_queries"),
        ("workers", "batch_workers"),
        ("affinity_seconds", "affinity_seconds"),
    ]:
        if getattr(args, option) is not None:
            setattr(settings, attr, getattr(args, option))
    if args.max_body_mb is not None:
        settings.max_body_bytes = int(args.max_body_mb * 2**20)
    if args.backends is not None:
        settings.backends = serve.read_backends(args.backends, pool)
    if args.compile:  # before binding the port: a failed compile is an exit 2, not a service that cannot route
        print("locus serve: compiling the query encoder (about a minute)", flush=True)
        pool.load_encoder()
    sock = serve.bind_socket(args.host, args.port)  # a port in use: exit 2 before anything says "serving"
    if not args.compile:
        pool.warm_up()  # loads the encoder in the background, so the first request does not wait as long
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    access = "token required" if token else "open, loopback only"
    print(
        f"serving {serve.run_label(args.run)} ({pool.size()} models, {len(pool.added)} added) on "
        f"http://{shown}:{port} (admin and chat: {access}; {len(settings.backends)} chat backend(s); "
        f"{len(pool.stored.rows) if pool.stored else 0} stored prompt encodings; encoder {pool.encoder_precision}; "
        f"models added by {pool.onboarding})",
        flush=True,
    )
    server = serve.make_server(serve.create_app(pool, token, settings), args.host, port)
    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then re-raises the signal: a stop is not an error
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    print("locus serve: stopped", flush=True)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt
