"""`asyncio` and anyio's asyncio backend imported with `ssl` loaded on first use
(louise/storage/first_use.py): what they do with sockets, pipes and TLS is what they did
with the real module. Each check
runs in a fresh interpreter (`python -P`): the stand-in acts when asyncio is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = "\n".join([
    "import json, sys",
    "from louise.storage import first_use",
    "first_use.import_asyncio_without_ssl()",
    "import asyncio, anyio",
    "assert 'ssl' not in sys.modules and '_ssl' not in sys.modules, 'ssl loaded at import'",
    ""])


def run(program: str, tmp_path: Path) -> object:
    """What `program` (after the stand-in and `import asyncio`) prints last, as JSON."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-P", "-c", PRELUDE + program], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_unix_socket_calls_work_without_loading_ssl(tmp_path: Path) -> None:
    """The engine's own channel to Neovim: `sock_connect`, `sock_sendall` and `sock_recv`
    each check the socket is no `ssl.SSLSocket`; that is answered without loading ssl."""
    program = "\n".join([
        "import socket",
        "async def main():",
        "    got = []",
        "    async def echo(reader, writer):",
        "        got.append(await reader.readexactly(5))",
        "        writer.write(b'pong!'); await writer.drain(); writer.close()",
        "    path = 'sock'",
        "    server = await asyncio.start_unix_server(echo, path)",
        "    loop = asyncio.get_running_loop()",
        "    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
        "    sock.setblocking(False)",
        "    await loop.sock_connect(sock, path)",
        "    await loop.sock_sendall(sock, b'ping!')",
        "    answer = await loop.sock_recv(sock, 5)",
        "    sock.close(); server.close(); await server.wait_closed()",
        "    return [got[0].decode(), answer.decode()]",
        "out = asyncio.run(main())",
        "print(json.dumps([out, 'ssl' in sys.modules, '_ssl' in sys.modules]))"])
    assert run(program, tmp_path) == [["ping!", "pong!"], False, False]


def test_an_ssl_socket_is_still_refused_once_ssl_is_loaded(tmp_path: Path) -> None:
    """Someone imports the real ssl after asyncio: asyncio's check sees its SSLSocket."""
    program = "\n".join([
        "import socket, ssl",
        "async def main():",
        "    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)",
        "    wrapped = ssl.create_default_context().wrap_socket(",
        "        raw, server_hostname='localhost', do_handshake_on_connect=False)",
        "    try:",
        "        await asyncio.get_running_loop().sock_sendall(wrapped, b'x')",
        "    except TypeError as exc:",
        "        return str(exc)",
        "    finally:",
        "        wrapped.close()",
        "    return 'accepted'",
        "out = asyncio.run(main())",
        "import asyncio.base_events as base_events",
        "print(json.dumps([out, base_events.ssl is ssl]))"])
    assert run(program, tmp_path) == ["Socket cannot be of type SSLSocket", True]


def test_a_tls_handshake_through_asyncio_runs_as_with_the_real_module(tmp_path: Path) -> None:
    """The first TLS use loads ssl: the client sends its hello (sslproto's SSLAgainErrors,
    made before ssl loaded, are the real classes by then) and a peer that answers with
    plain text fails the handshake with ssl's own error."""
    program = "\n".join([
        "import socket, threading",
        "listener = socket.create_server(('127.0.0.1', 0))",
        "heard = []",
        "def peer():",
        "    conn, _ = listener.accept()",
        "    heard.append(conn.recv(5))",
        "    conn.sendall(b'HTTP/1.0 400 Bad Request\\r\\n\\r\\n')",
        "    conn.close()",
        "thread = threading.Thread(target=peer); thread.start()",
        "async def main():",
        "    try:",
        "        await asyncio.wait_for(asyncio.open_connection(",
        "            '127.0.0.1', listener.getsockname()[1], ssl=True,",
        "            server_hostname='localhost'), 60)",
        "    except Exception as exc:",
        "        return type(exc).__name__, type(exc).__module__",
        "    return 'connected', ''",
        "name, module = asyncio.run(main())",
        "thread.join(60)",
        "import ssl",
        "print(json.dumps([name, module, heard[0][:1].hex() if heard else None,",
        "                  asyncio.sslproto.SSLAgainErrors ==",
        "                  (ssl.SSLWantReadError, ssl.SSLSyscallError)]))"])
    # 0x16: a TLS handshake record (the client's hello)
    assert run(program, tmp_path) == ["SSLError", "ssl", "16", True]


def test_import_ssl_after_the_stand_in_is_the_real_module(tmp_path: Path) -> None:
    program = "\n".join([
        "import ssl",
        "context = ssl.create_default_context()",
        "import asyncio.sslproto as sslproto",
        "made = sslproto._create_transport_context(False, 'localhost')",
        "print(json.dumps([type(ssl).__name__, ssl.__name__, hasattr(ssl, 'OPENSSL_VERSION'),",
        "                  isinstance(made, ssl.SSLContext), sslproto.ssl is ssl,",
        "                  asyncio.selector_events.ssl is ssl,",
        "                  repr(ssl).startswith(\"<module 'ssl' from\")]))"])
    assert run(program, tmp_path) == ["module", "ssl", True, True, True, True, True]


def test_nothing_changes_when_ssl_or_asyncio_was_imported_first(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    program = "\n".join([
        "import ssl, sys",
        "from louise.storage import first_use",
        "first_use.import_asyncio_without_ssl()",
        "import asyncio.base_events",
        "print(asyncio.base_events.ssl is ssl, sys.modules['ssl'] is ssl)"])
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_anyio_runs_subprocesses_and_unix_sockets_without_loading_ssl(tmp_path: Path) -> None:
    """The engine's loop (anyio on asyncio): an agent's pipes, a Unix socket."""
    program = "\n".join([
        "async def main():",
        "    async def echo(stream):",
        "        async with stream:",
        "            await stream.send((await stream.receive()).upper())",
        "    listener = await anyio.create_unix_listener('sock')",
        "    async with anyio.create_task_group() as tg:",
        "        tg.start_soon(listener.serve, echo)",
        "        async with await anyio.connect_unix('sock') as stream:",
        "            await stream.send(b'ping')",
        "            answer = await stream.receive()",
        "        tg.cancel_scope.cancel()",
        "    done = await anyio.run_process([sys.executable, '-c', 'print(6 * 7)'])",
        "    return [answer.decode(), done.stdout.decode().strip()]",
        "out = anyio.run(main)",
        "print(json.dumps([out, 'ssl' in sys.modules, '_ssl' in sys.modules]))"])
    assert run(program, tmp_path) == [["PING", "42"], False, False]


def test_a_tls_handshake_through_anyio_runs_as_with_the_real_module(tmp_path: Path) -> None:
    """anyio's TLS streams (their `SSLContext`, bound before ssl loaded) after the first use."""
    program = "\n".join([
        "import socket, threading",
        "listener = socket.create_server(('127.0.0.1', 0))",
        "heard = []",
        "def peer():",
        "    conn, _ = listener.accept()",
        "    heard.append(conn.recv(5))",
        "    conn.sendall(b'HTTP/1.0 400 Bad Request\\r\\n\\r\\n')",
        "    conn.close()",
        "thread = threading.Thread(target=peer); thread.start()",
        "async def main():",
        "    try:",
        "        with anyio.fail_after(60):",
        "            await anyio.connect_tcp('127.0.0.1', listener.getsockname()[1], tls=True,",
        "                                    tls_hostname='localhost')",
        "    except Exception as exc:",
        "        return type(exc).__name__, type(exc).__module__",
        "    return 'connected', ''",
        "name, module = anyio.run(main)",
        "thread.join(60)",
        "import ssl, anyio.streams.tls as tls",
        "print(json.dumps([name, module, heard[0][:1].hex() if heard else None,",
        "                  tls.SSLContext is ssl.SSLContext, tls.ssl is ssl]))"])
    assert run(program, tmp_path) == ["SSLError", "ssl", "16", True, True]


def test_a_module_deferred_while_another_imports_loads_on_first_use(tmp_path: Path) -> None:
    """`import_without`: pydantic imports `secrets` for `Secret.__eq__`; with it deferred,
    hashlib's OpenSSL stays out until a comparison needs it, which then works."""
    program = "\n".join([
        "types = first_use.import_without('pydantic.types', 'secrets')",
        "import pydantic",
        "before = [m in sys.modules for m in ('secrets', 'hmac', '_hashlib')]",
        "deferred = repr(types.secrets)",
        "same = pydantic.SecretStr('a') == pydantic.SecretStr('a')",
        "other = pydantic.SecretStr('a') == pydantic.SecretStr('b')",
        "import secrets",
        "print(json.dumps([before, deferred, same, other, types.secrets is secrets,",
        "                  secrets.compare_digest(b'x', b'x'), len(secrets.token_hex(4))]))"])
    assert run(program, tmp_path) == [
        [False, False, False], "<module 'secrets' (loaded on first use)>", True, False, True,
        True, 8]


CONFIGURED = "\n".join([
    "import pydantic.plugin",
    "first_use.defer_pydantic_plugins()",
    "from louise.config.loading import load_config_mapping",
    "config = load_config_mapping({'agents': {'fast': {'command': 'true'}},"
    " 'default_agent': 'fast', 'permissions': {'rules': [{'kind': ['read'],"
    " 'decision': 'allow'}]}})",
    "assert config.default_agent == 'fast'",
    ""])


def test_no_plugin_declared_no_plugin_loader(tmp_path: Path) -> None:
    """The configuration validated as before, without importlib.metadata (and the ~40
    modules behind it) to find that no pydantic plugin is installed."""
    program = CONFIGURED + "\n".join([
        "import pydantic.plugin._loader as loader",
        "print(json.dumps([list(loader.get_plugins()), 'importlib.metadata' in sys.modules,",
        "                  'email' in sys.modules, repr(loader)]))"])
    assert run(program, tmp_path) == [
        [], False, False, "<module 'pydantic.plugin._loader' (loaded on first use)>"]


def declare_plugin(site: Path) -> None:
    """A distribution on `site` that declares a pydantic plugin noting every validator."""
    (site / "noting_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "noting_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: noting-plugin\nVersion: 1.0\n")
    (site / "noting_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nx = noting_plugin:main\n\n[pydantic]\nnoting = noting_plugin:plugin\n")
    (site / "noting_plugin.py").write_text("\n".join([
        "seen = []",
        "class Plugin:",
        "    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):",
        "        seen.append(path.name)",
        "        return None, None, None",
        "plugin = Plugin()", ""]))


def test_a_declared_plugin_is_loaded_and_used_as_before(tmp_path: Path) -> None:
    site = tmp_path / "site"
    declare_plugin(site)
    program = "\n".join([
        f"sys.path.insert(0, {str(site)!r})", CONFIGURED,
        "import noting_plugin, pydantic.plugin._loader as loader",
        "print(json.dumps(['Config' in noting_plugin.seen, type(loader).__name__,",
        "                  [type(p).__name__ for p in loader.get_plugins()]]))"])
    assert run(program, tmp_path) == [True, "module", ["Plugin"]]


def test_what_cannot_be_told_goes_to_pydantics_loader(tmp_path: Path) -> None:
    """A zip on sys.path may hold distributions: pydantic's own loader looks."""
    import zipfile

    with zipfile.ZipFile(tmp_path / "more.zip", "w") as archive:
        archive.writestr("empty.py", "")
    program = "\n".join([
        f"sys.path.append({str(tmp_path / 'more.zip')!r})", CONFIGURED,
        "print(json.dumps(['importlib.metadata' in sys.modules]))"])
    assert run(program, tmp_path) == [True]
