/**
 * A TCP proxy the fault soak's workers connect through, so a fault can cut
 * every open connection mid-command while the server itself stays up.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { freePort } from "@durable/test-utils/net";

export class CutProxy {
  private constructor(
    readonly port: number,
    readonly server: Server,
    readonly sockets: Set<Socket>,
  ) {}

  /** Listens on a free port and forwards every connection to `target` on 127.0.0.1. */
  static async start(target: number): Promise<CutProxy> {
    const port = await freePort();
    const sockets = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = connect(target, "127.0.0.1");
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
        // A cut or a restarted server: the other side is destroyed too.
        socket.on("error", () => {});
      }
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    return new CutProxy(port, server, sockets);
  }

  /** Destroys every open connection (both sides); returns how many connections were open. */
  cut(): number {
    const open = this.sockets.size / 2;
    for (const socket of this.sockets) socket.destroy();
    return open;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
