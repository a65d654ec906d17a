"""An agent that echoes the prompt back (vibe: `user_message_chunk` updates with the
prompt's text at the start of the turn) through the session host: the others and the
history have the prompt once (the host's own copy), its sender gets the echo as it would
without a host; anything else the agent sends as the person's goes everywhere."""

from __future__ import annotations

from typing import Any

from louise.serve.echo import PromptEcho
from louise.serve.hello import FrontEnd
from louise.serve.router import AGENT, Out, Router

Msg = dict[str, Any]
NVIM = FrontEnd("nvim", 11, True)
CLI = FrontEnd("cli", 22, False)


def req(request_id: Any, method: str, **params: Any) -> Msg:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def user_chunk(sid: str, text: str) -> Msg:
    # As vibe 3.0 sends it (its wire log): the prompt's text, with a messageId.
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": sid, "update": {
                "content": {"text": text, "type": "text"}, "messageId": "m1",
                "sessionUpdate": "user_message_chunk"}}}


def two_front_ends() -> tuple[Router, str]:
    router = Router()
    router.initialize_result = {"protocolVersion": 1}
    router.attach(1, NVIM)
    router.attach(2, CLI)
    outs = router.from_front_end(1, req(5, "session/new", cwd="/w"), 0)
    host_id = next(o.message for o in outs if o.to == AGENT)["id"]
    router.from_agent({"jsonrpc": "2.0", "id": host_id, "result": {"sessionId": "s"}}, 0)
    router.from_front_end(2, req(5, "session/load", sessionId="s", cwd="/w"), 0)
    return router, "s"


def replayed_texts(router: Router, sid: str) -> list[str]:
    history = router.history(sid)
    assert history is not None
    return [m["params"]["update"]["content"]["text"] for m in history.replay(sid)]


def prompt(router: Router, text: str) -> list[Out]:
    return router.from_front_end(1, req(9, "session/prompt", sessionId="s",
                                        prompt=[{"type": "text", "text": text}]), 0)


def test_the_echo_of_a_prompt_goes_to_its_sender_alone_and_not_into_the_history() -> None:
    router, sid = two_front_ends()
    shown = prompt(router, "MOCK-SLOW please")
    assert [o.to for o in shown if o.message.get("method") == "session/update"] == [2]
    echo = router.from_agent(user_chunk(sid, "MOCK-SLOW "), 0) \
        + router.from_agent(user_chunk(sid, "please"), 0)
    assert [o.to for o in echo] == [1, 1]  # the sender's own model recognises it
    assert replayed_texts(router, sid) == ["MOCK-SLOW please"]  # once, on a later load


def test_what_does_not_continue_the_prompt_is_the_agents_and_goes_everywhere() -> None:
    router, sid = two_front_ends()
    prompt(router, "hello")
    assert [o.to for o in router.from_agent(user_chunk(sid, "something else"), 0)] == [1, 2]
    # The echo is over: the prompt's text, sent again later, is not taken for it.
    assert [o.to for o in router.from_agent(user_chunk(sid, "hello"), 0)] == [1, 2]
    assert replayed_texts(router, sid) == ["hello", "something elsehello"]  # one message


def test_after_the_turn_no_echo_is_expected() -> None:
    router, sid = two_front_ends()
    running = next(o.message for o in prompt(router, "hello") if o.to == AGENT)["id"]
    router.from_agent({"jsonrpc": "2.0", "id": running, "result": {"stopReason": "end_turn"}},
                      0)
    assert [o.to for o in router.from_agent(user_chunk(sid, "hello"), 0)] == [1, 2]


def test_only_text_prompts_are_echoed() -> None:
    assert PromptEcho.of([{"type": "image", "data": "x", "mimeType": "image/png"}]) is None
    assert PromptEcho.of("not a list") is None
    echo = PromptEcho.of([{"type": "text", "text": "ab"}, {"type": "text", "text": "c"}])
    assert echo is not None and echo.text == "abc"
    assert not echo.takes({"content": {"type": "text", "text": ""}})
    assert echo.takes({"content": {"type": "text", "text": "abc"}})
