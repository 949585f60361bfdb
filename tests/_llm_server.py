"""A local OpenAI-compatible endpoint for tests (no network, no key): scripted answers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedLLM"]


class ScriptedLLM:
    """A local OpenAI-compatible endpoint: answers ``status`` to everything when set, else a
    JSON request (response_format) with ``json_reply`` and a plain one with ``text_reply``,
    giving ``finish_reason`` ("length": cut off by ``max_tokens``)."""

    def __init__(
        self,
        *,
        status: int | None = None,
        text_reply: str = "",
        json_reply: str = "{}",
        finish_reason: str = "stop",
    ) -> None:
        self.status, self.text_reply, self.json_reply = status, text_reply, json_reply
        self.finish_reason = finish_reason
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if outer.status is not None:
                    data, code = b'{"error": {"message": "refused by the test server"}}', outer.status
                else:
                    content = outer.json_reply if "response_format" in body else outer.text_reply
                    data, code = (
                        json.dumps(
                            {
                                "id": "x",
                                "object": "chat.completion",
                                "created": 0,
                                "model": "scripted",
                                "choices": [
                                    {
                                        "index": 0,
                                        "finish_reason": outer.finish_reason,
                                        "message": {"role": "assistant", "content": content},
                                    }
                                ],
                                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
                            }
                        ).encode(),
                        200,
                    )
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
