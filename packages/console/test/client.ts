import type { RunDetail, RunningConsole } from "../src/index.js";

/*
 * A program's requests to a console, as the tests make them: with its
 * bearer token at the address it serves on, and an action posted as a run's
 * page posts it (its form token, the step it shows).
 */

const bearer = (c: RunningConsole) => ({ authorization: `Bearer ${c.token}` });

/** A GET (redirects not followed), with the bearer token unless `headers` are given. */
export function get(c: RunningConsole, path: string, headers: Record<string, string> = bearer(c)): Promise<Response> {
  return fetch(`${c.api}${path}`, { headers, redirect: "manual" });
}

/** The run as `/api/runs/<id>` gives it. */
export async function detail(c: RunningConsole, runId: string): Promise<RunDetail> {
  return (await (await get(c, `/api/runs/${encodeURIComponent(runId)}`)).json()) as RunDetail;
}

/** The form token on the run's page ("" when it shows no form). */
export async function formToken(c: RunningConsole, runId: string): Promise<string> {
  const page = await (await get(c, `/runs/${encodeURIComponent(runId)}`)).text();
  return /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
}

/** Posts `fields` to the run's actions, with the bearer token and `headers` (a browser's `origin`, …). */
export function post(
  c: RunningConsole,
  runId: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${c.api}/runs/${encodeURIComponent(runId)}/actions`, {
    method: "POST",
    headers: { ...bearer(c), "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });
}

/** Posts an action as the run's page would: its form token, and the step it shows (or `step`), with `headers`. */
export async function act(
  c: RunningConsole,
  runId: string,
  fields: Record<string, string>,
  step?: number,
  headers: Record<string, string> = {},
): Promise<Response> {
  const csrf = await formToken(c, runId);
  return post(c, runId, { csrf, step: String(step ?? (await detail(c, runId)).step), ...fields }, headers);
}
