import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { CheckpointStore } from "@durable/core";
import type { Sealer } from "@durable/core/runner";
import { notFoundPage, runPage, runsPage } from "./pages.js";
import { readOneRun, readRuns } from "./runs.js";

export interface ViewerOptions {
  readonly store: CheckpointStore;
  readonly sealer: Sealer;
  /** The JSON Lines file the workers' `jsonlEventSink` writes. */
  readonly eventLog: string;
  /** How the store is named on the page. */
  readonly label: string;
  readonly port: number;
  readonly host: string;
}

/** Serves the run viewer: `/` lists the runs, `/runs/<id>` shows one, `/api/runs` is the same as JSON. GET only. */
export async function startViewer(options: ViewerOptions): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const send = (status: number, type: string, body: string) => {
      response.writeHead(status, { "content-type": `${type}; charset=utf-8`, "cache-control": "no-store" });
      response.end(body);
    };
    if (request.method !== "GET") return send(405, "text/plain", "The viewer only reads.");
    const path = new URL(request.url ?? "/", "http://viewer").pathname;
    const { store, sealer, eventLog } = options;
    const page = async (): Promise<[number, string, string]> => {
      if (path === "/") return [200, "text/html", runsPage(options.label, await readRuns(store, sealer, eventLog))];
      if (path === "/api/runs")
        return [200, "application/json", JSON.stringify(await readRuns(store, sealer, eventLog))];
      if (!path.startsWith("/runs/")) return [404, "text/plain", "Not found."];
      // A run's page reads that run only.
      const runId = decodeURIComponent(path.slice("/runs/".length));
      const run = await readOneRun(store, sealer, eventLog, runId);
      return run === undefined ? [404, "text/html", notFoundPage(runId)] : [200, "text/html", runPage(run)];
    };
    page().then(
      ([status, type, body]) => send(status, type, body),
      (error: unknown) => send(500, "text/plain", `The viewer could not read the runs: ${String(error)}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
