import type { Browser, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { CHAT_REPLY_TEXT, CHAT_SCRIPT } from "../src/chat-model.js";
import { headlessChromium } from "@durable/test-utils/chromium";
import { type ExampleProcess, examples } from "./example.js";

// The chat page (GET /) in headless Chromium, on a server and worker processes: a chat streams in; reloaded
// mid-stream, or cut off by a dead worker and a restarted server, it ends with the model's exact reply.

const example = examples();
const chromium = headlessChromium();

/** What the page shows: the assistant's text, its tool calls and results, its questions, and its state. */
function shown(page: Page) {
  return page.evaluate(() => {
    const texts = (selector: string) => [...document.querySelectorAll(selector)].map((each) => each.textContent ?? "");
    return {
      text: texts(".assistant > .text").join(""),
      calls: texts(".tool-call"),
      results: texts(".tool-result"),
      questions: texts(".user"),
      state: document.getElementById("state")?.dataset["state"],
    };
  });
}

/** Waits until the page shows at least `length` characters of the reply. */
async function replyShown(page: Page, length: number): Promise<void> {
  await page.waitForFunction(
    (least) =>
      [...document.querySelectorAll(".assistant > .text")].map((each) => each.textContent ?? "").join("").length >=
      least,
    length,
    { timeout: 30_000, polling: 20 },
  );
}

/** Opens the page and asks a question: the chat starts on the fleet. `streams`: the query of each stream request. */
async function ask(browser: Browser, base: string, question: string): Promise<{ page: Page; streams: string[] }> {
  const page = await browser.newPage();
  const streams: string[] = [];
  page.on("request", (request) => {
    if (request.url().includes("/stream")) streams.push(new URL(request.url()).search);
  });
  await page.goto(`${base}/`);
  await page.fill("#question", question);
  await page.click("button[type=submit]");
  await page.waitForURL(/\?chat=/);
  return { page, streams };
}

/** Waits for the page to say the chat is done, and checks it shows the reply exactly once. */
async function endsWithTheReply(page: Page, question: string): Promise<void> {
  await page.waitForSelector('#state[data-state="done"]', { timeout: 30_000 });
  expect(await shown(page)).toEqual({
    text: CHAT_REPLY_TEXT,
    calls: [`look_up(${JSON.stringify({ question })})`],
    results: [expect.stringContaining("a durable stream keeps every part")],
    questions: [question],
    state: "done",
  });
}

describe("the chat page in headless Chromium", () => {
  it("shows the chat as it streams; reloaded mid-reply, it shows the saved history and goes on: the exact reply, no gap, no duplicate", async (context) => {
    const browser = chromium.browser;
    if (browser === undefined) return context.skip();
    const { base } = await example();
    const question = "What is a durable stream?";
    const { page } = await ask(browser, base, question);
    const url = page.url();
    await replyShown(page, CHAT_SCRIPT.lookUp.length + 20);
    expect((await shown(page)).state).toBe("streaming");
    expect((await shown(page)).text.length).toBeLessThan(CHAT_REPLY_TEXT.length);
    await page.reload();
    expect(page.url()).toBe(url);
    await endsWithTheReply(page, question);
    await page.close();
  });

  it("when its worker dies and the server restarts mid-reply, it reconnects after its last part, drops what the dead worker wrote, and ends with the exact reply", async (context) => {
    const browser = chromium.browser;
    if (browser === undefined) return context.skip();
    const { base, worker, restartServer } = await example({ worker: false });
    const standing = await Promise.all([worker(1_000), worker(1_000)]);
    const question = "And if everything breaks?";
    const { page, streams } = await ask(browser, base, question);
    const runId = new URL(page.url()).searchParams.get("chat") ?? "";
    const tookUp = new RegExp(`^worker: took up chat ${runId} `);
    const dying = await Promise.race(
      standing.map(async (each) => {
        await each.line(tookUp);
        return each;
      }),
    );
    const taking = standing.find((each) => each !== dying) as ExampleProcess;
    await replyShown(page, CHAT_SCRIPT.lookUp.length + 20);
    dying.child.kill("SIGKILL");
    await restartServer();
    await endsWithTheReply(page, question);
    await taking.line(tookUp);
    // The page reconnected, after the last part it had, at least once.
    expect(streams.length).toBeGreaterThan(1);
    expect(streams.slice(1).every((search) => Number(new URLSearchParams(search).get("from")) > 0)).toBe(true);
    await page.close();
  });
});
