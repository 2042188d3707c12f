// Opens a broken SQLite store in the kit's child processes: the handle is `<kind>:<path>`.
import { DeferredCommitStore, UnavailableOnceStore, WriteBehindStore } from "./broken-durability.js";

export default (handle: string) => {
  const at = handle.indexOf(":");
  const [kind, path] = [handle.slice(0, at), handle.slice(at + 1)];
  if (kind === "write-behind") return new WriteBehindStore(path);
  if (kind === "deferred-commit") return new DeferredCommitStore(path);
  if (kind === "unavailable-once") return new UnavailableOnceStore(path);
  throw new Error(`no broken store of kind ${JSON.stringify(kind)}`);
};
