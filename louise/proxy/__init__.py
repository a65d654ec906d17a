"""`louise proxy`: an ACP proxy that adds the account-limits v1 extension to any agent.

It sits between any ACP client and an agent, forwards every message unchanged, and, for an
agent that does not speak the v1 extension itself, advertises it in `initialize`, answers
its read method and pushes its updated notification, fed by the translators of
`louise.limits.sources` (claude's rate-limit metadata, codex's rate-limit snapshots, a
refused turn). `core.ProxyCore` is the logic (sans I/O); `run.run_proxy` the driver.
"""

from louise.proxy.core import READ_METHOD, UPDATED_METHOD, ProxyCore, Routed
from louise.proxy.run import run_proxy

__all__ = ["READ_METHOD", "UPDATED_METHOD", "ProxyCore", "Routed", "run_proxy"]
