import { followRun, type FollowedPart, type JsonValue } from "@durable/core";
import { checkLoopOptions } from "./check-args.js";
import type { LoopStoreOptions } from "./loop-options.js";
import type { Message } from "./message.js";
import type { ModelStreamPart } from "./model.js";
import type { ModelUsage } from "./usage.js";

/**
 * A part of a loop's stream as the store keeps it (`stream` option): the
 * `LoopStreamPart`s a caller of `streamToolLoop` gets, without their run id,
 * except that a round's `tool-result`s come once the round is over (in
 * call order, as saved), and instead of `run-start` an `attempt` opening each drive, whose
 * `abandons` are the parts before it that a cut-off drive wrote; `data` is
 * what a tool wrote (`ctx.writeData`). The stream ends with `stream-full`
 * when it reached its limit.
 */
export type LoopStreamRecord =
  | {
      readonly type: "attempt";
      readonly attempt: number;
      readonly abandons?: { readonly from: number; readonly to: number };
    }
  | { readonly type: "step-start"; readonly round: number; readonly modelCall: number }
  | ModelStreamPart
  | {
      readonly type: "step-finish";
      readonly round: number;
      readonly message: Message;
      readonly usage?: ModelUsage;
      readonly finishReason?: string;
    }
  | { readonly type: "tool-result"; readonly round: number; readonly message: Message }
  | { readonly type: "data"; readonly callId: string; readonly data: JsonValue }
  | { readonly type: "stream-full"; readonly limit: number };

/** A loop's part as a follower gets it (see `FollowedPart`: its offset, attempt, and whether that attempt was cut off). */
export interface LoopFollowedPart extends Omit<FollowedPart, "part"> {
  readonly part: LoopStreamRecord;
}

/** Where to follow a loop's stream from, and how. */
export interface FollowToolLoopOptions extends LoopStoreOptions {
  /** The offset of the first part (default 0); `readToolLoop`'s `streamed` follows on from the saved history. */
  readonly from?: number;
  /** How often the store is read while nothing is new, in ms (default 100). */
  readonly pollMs?: number;
  /** Ends the iteration when aborted. */
  readonly signal?: AbortSignal;
}

/**
 * Follows a tool loop's stream from any process (see `followRun`): each part
 * from `from` on, once, in order, then the new ones, whichever worker drives
 * the run, until it ends or waits. A client that reconnects gives the offset
 * after the last part it got; a client that reloads reads the saved history
 * (`readToolLoop`) and follows from its `streamed`.
 */
export async function* followToolLoop(
  runId: string,
  options: FollowToolLoopOptions,
): AsyncGenerator<LoopFollowedPart, void, undefined> {
  const { from, pollMs, signal, ...loop } = options;
  checkLoopOptions("followToolLoop", loop);
  const { checkpoints, checkpointKey, encryptionKey, anchor } = loop;
  yield* followRun({
    checkpoints,
    runId,
    ...(checkpointKey === undefined ? {} : { checkpointKey }),
    ...(encryptionKey === undefined ? {} : { encryptionKey }),
    ...(anchor === undefined ? {} : { anchor }),
    ...(from === undefined ? {} : { from }),
    ...(pollMs === undefined ? {} : { pollMs }),
    ...(signal === undefined ? {} : { signal }),
  }) as AsyncGenerator<LoopFollowedPart, void, undefined>;
}
