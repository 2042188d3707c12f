import { ORDER, TICKET_CALLS } from "../workload.js";
import { started, type PeerOrReason } from "./peer.js";

const NAME = "DBOS Transact";

/**
 * The tickets flow as a DBOS workflow of three steps, one no-op call each,
 * its system database at `systemDatabaseUrl` (a database of its own, which
 * DBOS creates and migrates at launch). DBOS is one per process: close it
 * before starting another.
 */
export function dbosPeer(systemDatabaseUrl: string): Promise<PeerOrReason> {
  return started(NAME, async () => {
    // Imported when used, so a missing package skips the peer instead of failing the bench.
    const { DBOS } = await import("@dbos-inc/dbos-sdk");
    const [hold, pay, send] = TICKET_CALLS;
    const tickets = DBOS.registerWorkflow(
      async (order: typeof ORDER) => {
        await DBOS.runStep(() => hold(order), { name: "hold" });
        await DBOS.runStep(() => pay(order), { name: "pay" });
        return DBOS.runStep(() => send(order), { name: "send" });
      },
      { name: "tickets" },
    );
    // Deregistering lets a later peer in the same process register its workflow again.
    const close = () => DBOS.shutdown({ deregister: true });
    DBOS.setConfig({ name: "durable-bench", systemDatabaseUrl, logLevel: "warn" });
    try {
      await DBOS.launch();
    } catch (error) {
      await close();
      throw error;
    }
    return {
      name: `${NAME}, steps checkpointed in PostgreSQL`,
      run: async (id) => void (await DBOS.withNextWorkflowID(id, () => tickets(ORDER))),
      close,
    };
  });
}
