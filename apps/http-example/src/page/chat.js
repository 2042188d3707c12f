// The chat page, plain JS. A chat is rendered from what the server saved (GET /chats/:id: the messages and
// `streamed`), then followed from `streamed` on (GET /chats/:id/stream?from=N: SSE in the AI SDK's UI message
// stream format, each part's offset the `id` of its last event). The page keeps the offset after the last part
// it got and reconnects with it when the connection drops; a reload starts again from the saved history. So
// each part is shown once, and when a worker dies mid-reply, the parts its recovery voids (`data-durable`'s
// `abandons`) are taken off the page before the reply comes again.

const chat = document.getElementById("chat");
const state = document.getElementById("state");
const form = document.getElementById("ask");

/** The assistant message the current step writes into. */
let current;
/** Aborted when the page opens another chat: the one it followed stops. */
let following = new AbortController();

function show(text, name) {
  state.textContent = text;
  state.dataset.state = name;
}

/** A new element of `className` in `parent`; `offset`, the stream part that made it (saved history has none). */
function element(className, parent, offset) {
  const made = document.createElement("div");
  made.className = className;
  if (offset !== undefined) made.dataset.offset = String(offset);
  parent.append(made);
  return made;
}

const callText = (name, input) => `${name}(${JSON.stringify(input)})`;
const resultText = (output) => `→ ${typeof output === "string" ? output : JSON.stringify(output)}`;

/** Adds text to an assistant message, in a span of its own: a span a void part made is removed alone. */
function addText(message, text, offset) {
  const box = message.querySelector(":scope > .text") ?? element("text", message);
  const span = document.createElement("span");
  if (offset !== undefined) span.dataset.offset = String(offset);
  span.textContent = text;
  box.append(span);
}

/** A message of the saved history (see `Message` in @durable/loop). */
function renderSaved(message) {
  if (message.role === "user") element("message user", chat).textContent = message.content;
  else if (message.role === "assistant") {
    const box = element("message assistant", chat);
    if (message.content !== "") addText(box, message.content);
    for (const call of message.toolCalls ?? []) element("tool-call", box).textContent = callText(call.name, call.args);
  } else if (message.role === "tool")
    element("tool-result", chat).textContent = resultText(message.result ?? message.content);
}

/** One chunk of the UI message stream, from the part at `offset`. */
function apply(chunk, offset) {
  switch (chunk.type) {
    case "start-step":
      current = element("message assistant", chat, offset);
      break;
    case "text-delta":
      current ??= element("message assistant", chat, offset);
      addText(current, chunk.delta, offset);
      break;
    case "tool-input-available":
      current ??= element("message assistant", chat, offset);
      element("tool-call", current, offset).textContent = callText(chunk.toolName, chunk.input);
      break;
    case "tool-output-available":
      element("tool-result", chat, offset).textContent = resultText(chunk.output);
      break;
    case "tool-output-error":
      element("tool-result", chat, offset).textContent = resultText(chunk.errorText);
      break;
    case "data-durable":
      // A worker took the run over from one cut off mid-reply: what that one wrote is void, and comes again.
      if (chunk.data.abandons !== undefined) removeVoid(chunk.data.abandons);
      break;
    case "error":
      show(`error: ${chunk.errorText}`, "error");
      break;
  }
}

function removeVoid({ from, to }) {
  for (const made of chat.querySelectorAll("[data-offset]")) {
    const offset = Number(made.dataset.offset);
    if (offset >= from && offset < to) made.remove();
  }
  if (current?.isConnected === false) current = undefined;
}

/** The SSE events of a response body, as they come: `{ id, data }`. */
async function* events(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value;
    const complete = buffer.split("\n\n");
    buffer = complete.pop();
    for (const event of complete) {
      const lines = event.split("\n");
      const id = lines.find((line) => line.startsWith("id:"));
      const data = lines.find((line) => line.startsWith("data:"));
      yield { id: id === undefined ? undefined : Number(id.slice(3)), data: data?.slice(5).trim() };
    }
  }
}

/** Follows the chat's stream from offset `from` until it ends, reconnecting after the last part it got. */
async function follow(id, from, signal) {
  let next = from;
  for (let tries = 0; !signal.aborted; tries++) {
    /** The chunks of a part whose last event (the one with its offset) has not come yet. */
    let pending = [];
    try {
      const response = await fetch(`/chats/${encodeURIComponent(id)}/stream?from=${next}`, { signal });
      if (response.status === 204) return show("done", "done");
      if (response.status >= 400 && response.status < 500)
        return show(`error: ${(await response.json()).error}`, "error");
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      show("streaming", "streaming");
      for await (const event of events(response.body)) {
        if (event.data === "[DONE]") {
          for (const chunk of pending) apply(chunk, undefined);
          if (state.dataset.state !== "error") show("done", "done");
          return;
        }
        if (event.data !== undefined) pending.push(JSON.parse(event.data));
        if (event.id !== undefined) {
          for (const chunk of pending) apply(chunk, event.id);
          pending = [];
          next = event.id + 1;
          tries = 0;
        }
      }
    } catch {
      // The connection dropped (or the server went): go on after the last part shown.
    }
    if (signal.aborted) return;
    show(`reconnecting from part ${next}`, "reconnecting");
    await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** tries)));
  }
}

/** Shows chat `id`: its saved history, then what its stream adds after it. */
async function open(id) {
  following.abort();
  following = new AbortController();
  const { signal } = following;
  chat.replaceChildren();
  current = undefined;
  show("loading", "loading");
  const response = await fetch(`/chats/${encodeURIComponent(id)}`, { signal });
  const saved = await response.json();
  if (!response.ok) return show(`error: ${saved.error}`, "error");
  for (const message of saved.messages) renderSaved(message);
  await follow(id, saved.streamed, signal);
}

async function ask(question) {
  const response = await fetch("/chats", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: question }),
  });
  const body = await response.json();
  if (!response.ok) return show(`error: ${body.error}`, "error");
  // The chat's id in the address: a reload opens the same chat.
  history.replaceState(null, "", `?chat=${encodeURIComponent(body.runId)}`);
  await open(body.runId);
}

const failed = (error) => {
  if (error.name !== "AbortError") show(`error: ${error.message}`, "error");
};

form.addEventListener("submit", (event) => {
  event.preventDefault();
  ask(form.elements.question.value).catch(failed);
});

const opened = new URLSearchParams(location.search).get("chat");
if (opened !== null) open(opened).catch(failed);
