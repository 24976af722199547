"""The exporter's HTTP side: address parsing, bind errors, /metrics, the final-scrape wait.
Served by gevent (as in ``keyramp run``); the client here is a gevent socket in this process."""

from __future__ import annotations

import socket as stdlib_socket

import gevent
import pytest
from gevent import socket

from keyramp.core._errors import UsageError
from keyramp.metrics import MetricsServer, MetricsState, parse_address


@pytest.mark.parametrize(("text", "want"), [
    ("9464", ("127.0.0.1", 9464)), (":9464", ("127.0.0.1", 9464)), ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("localhost:0", ("localhost", 0)), ("[::1]:9464", ("::1", 9464)),
])
def test_addresses(text: str, want: tuple[str, int]) -> None:
    assert parse_address(text) == want


@pytest.mark.parametrize("text", ["", "host:", "host:port", "1.2.3.4:70000", "a b:1", "http://x:1"])
def test_bad_addresses_are_one_line_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--metrics: expected HOST:PORT or PORT"):
        parse_address(text)


def _get(port: int, path: str, *, with_head: bool = False) -> tuple[int, str]:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    return int(head.split()[1]), (head + "\r\n\r\n" + body if with_head else body)


def test_serves_metrics_and_refuses_a_taken_port() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    server = MetricsServer(state, host="127.0.0.1", port=0)
    try:
        status, body = _get(server.port, "/metrics")
        assert status == 200 and 'keyramp_run_active{run="R1",profile="p"} 1' in body
        assert _get(server.port, "/nope")[0] == 404
        head = _get(server.port, "/metrics", with_head=True)[1].split("\r\n\r\n")[0]
        assert "Content-Type: text/plain; version=0.0.4; charset=utf-8" in head
        with pytest.raises(UsageError, match=rf"^--metrics 127.0.0.1:{server.port}: address already in use$"):
            MetricsServer(state, host="127.0.0.1", port=server.port)
    finally:
        server.close(wait_for_scrape=False)
    with pytest.raises(OSError):  # stopped: nothing listens any more
        stdlib_socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


def test_close_waits_for_a_scrape_of_the_final_values_only_when_someone_scrapes() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    server = MetricsServer(state, host="127.0.0.1", port=0)
    assert server.final_scrape_wait_s() == 0.0  # nobody scraped: closing never waits
    _get(server.port, "/metrics")
    gevent.sleep(0.2)
    _get(server.port, "/metrics")
    assert server.final_scrape_wait_s() == 0.0  # the last scrape saw the current values
    state.run_finished(status="complete")  # a change nobody has scraped yet
    assert 1.0 < server.final_scrape_wait_s() < 65
    seen: list[str] = []
    scraper = gevent.spawn_later(0.3, lambda: seen.append(_get(server.port, "/metrics")[1]))
    server.close(say=seen.append)
    scraper.join(timeout=5)
    assert seen[0].startswith("metrics: waiting up to ") and 'keyramp_run_active{run="R1",profile="p"} 0' in seen[1]


@pytest.mark.parametrize(("argv", "needle"), [
    (["p.toml", "--metrics", "nope"], "--metrics: expected HOST:PORT or PORT"),
    (["--worker", "--master-host", "h", "--metrics", "9464"], "--metrics belongs on the master"),
    (["p.toml", "--plan", "--metrics", "9464"], "--metrics has nothing to serve with --plan"),
])
def test_misplaced_metrics_flags_are_refused(argv: list[str], needle: str) -> None:
    from keyramp.cli._main import build_parser
    from keyramp.cli._run import _check_run_args

    with pytest.raises(UsageError) as info:
        _check_run_args(build_parser().parse_args(["run", *argv]))
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_taken_metrics_port_exits_2_before_any_load(tmp_path) -> None:
    import subprocess
    import sys

    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\nbackend = "bigtable"\nduration = "1s"\n')
    with stdlib_socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # no emulator variables and no state dir: had it got past the bind, it would start emulators
        result = subprocess.run([sys.executable, "-m", "keyramp", "run", str(profile), "--metrics", str(port),
                                 "--out", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True,
                                timeout=120, env={"PATH": "/usr/bin:/bin", "KEYRAMP_STATE_DIR": str(tmp_path / "s")})
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip() == f"keyramp: --metrics 127.0.0.1:{port}: address already in use"
    assert not (tmp_path / "out").exists() and not (tmp_path / "s").exists()
