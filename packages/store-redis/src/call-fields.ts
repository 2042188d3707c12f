import { checkedCall, type StoredCall } from "@durable/core/store";

/** A script's flat reply {field, value, field, value, …} as [field, value] pairs, in its order. */
export function pairs(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let at = 0; at + 1 < flat.length; at += 2) out.push([flat[at] as string, flat[at + 1] as string]);
  return out;
}

/** A run's call records from the fields of its calls hash, checked, by segment then seq. */
export function storedCalls(runId: string, entries: readonly (readonly [string, string])[]): StoredCall[] {
  return entries
    .map(([field, sealed]) => {
      // A field is "<segment>:<seq>": one of another form holds no number, which the check names.
      const [segment, seq, ...rest] = field.split(":");
      return checkedCall(runId, { segment, seq: rest.length === 0 ? seq : field, sealed });
    })
    .sort((a, b) => a.segment - b.segment || a.seq - b.seq);
}
