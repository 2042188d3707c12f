import type { JsonValue } from "@durable/core";
import { isJsonObject } from "@durable/core/runner";
import { esc, json, SHOWN_CHARS } from "./html.js";

/**
 * A tool loop's messages as a conversation: who speaks, what they say, the
 * tools the model asks for and what each answered; each message's JSON one
 * click away. Read from the sealed history as plain JSON: a message of a
 * shape it does not know is shown as its JSON.
 */
export function conversation(messages: readonly JsonValue[], whole: string): string {
  const items = messages.map((message) => {
    if (!isJsonObject(message) || typeof message["role"] !== "string")
      return `<li class="message">${json(message, whole)}</li>`;
    const role = message["role"];
    const content = typeof message["content"] === "string" ? message["content"] : "";
    const calls = Array.isArray(message["toolCalls"]) ? message["toolCalls"].filter(isJsonObject) : [];
    const failed = role === "tool" && message["isError"] === true;
    const who =
      role === "tool"
        ? `tool <code>${esc(String(message["name"] ?? ""))}</code> ${failed ? "failed" : "answered"}`
        : esc(role);
    const asks = calls.map(
      (call) =>
        `<li>asks for <code>${esc(String(call["name"] ?? ""))}</code> <span class="meta">${esc(String(call["id"] ?? ""))}</span>${json(call["args"], whole)}</li>`,
    );
    return `<li class="message ${esc(role)}${failed ? " failed" : ""}" data-role="${esc(role)}">
      <p class="who"><strong>${who}</strong></p>${content === "" ? "" : text(content, whole)}
      ${asks.length === 0 ? "" : `<ul class="asks">${asks.join("")}</ul>`}
      <details><summary>As stored</summary>${json(message, whole)}</details></li>`;
  });
  return `<h2 id="messages">Conversation</h2><ol class="messages">${items.join("")}</ol>`;
}

/** A message's text as written (line breaks kept), cut past `SHOWN_CHARS` with a link to the whole. */
function text(content: string, whole: string): string {
  if (content.length <= SHOWN_CHARS) return `<p class="says">${esc(content)}</p>`;
  return `<p class="says">${esc(content.slice(0, SHOWN_CHARS))}…</p><p class="meta cut">Cut at ${SHOWN_CHARS.toLocaleString("en")} characters of ${content.length.toLocaleString("en")}: <a href="${esc(whole)}" download>the whole history</a>.</p>`;
}
